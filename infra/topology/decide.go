package topology

import (
	"cmp"
	"fmt"
	"slices"
	"strings"
)

// level is one decision to make from a paste: a Set over all the pasted records (BIG-IP has
// one topology list for both levels) with the candidates of that level.
type level struct {
	paste *Paste
	set   *Set
	// index maps set.Records[i] to the paste's record number (from 1).
	index []int
}

// newLevel builds the set for a level. With Longest Match off the records are walked in their
// tmsh "order" when every record has one, else in the order pasted.
func (p *Paste) newLevel(lvl Level, wideIPMode string, pools []Pool, pool string) *level {
	order := make([]int, len(p.Records))
	allOrdered := true
	for i, r := range p.Records {
		order[i] = i
		allOrdered = allOrdered && r.Order > 0
	}
	if !p.LongestMatch && allOrdered {
		slices.SortStableFunc(order, func(a, b int) int { return cmp.Compare(p.Records[a].Order, p.Records[b].Order) })
	}
	lv := &level{paste: p, set: &Set{
		LongestMatch: p.LongestMatch, PreferECS: p.PreferECS, Level: lvl, WideIPLoadBalancing: wideIPMode,
		Pool: pool, Regions: p.Regions, Pools: pools, GeoFromQuery: true,
	}}
	for _, i := range order {
		lv.set.Records = append(lv.set.Records, p.Records[i].Record)
		lv.set.RecordNames = append(lv.set.RecordNames, fmt.Sprintf("record %d", i+1))
		lv.index = append(lv.index, i+1)
	}
	return lv
}

// Decide answers a paste. Without a source line it is the walk order only (ModeSortedOnly).
// With one, the first level is decided: the wide IP choosing among pools (its gtm wideip
// stanza's pools, the pools a candidates line names, or the pool destinations of the records),
// or a pool choosing among members (the members a candidates line names, the members of the
// one gtm pool pasted, or the data-center destinations of the records, each standing for the
// members there). When the wide IP's choice has a gtm pool stanza, the pool's member decision
// follows, and PoolLevel and Answer show where the query ends: a member, the pool's alternate
// or fallback method, the next pool (fallback none), or the local BIND. rr is the round-robin
// turn for equal top scores. A paste that cannot be decided is an error ending with tmshShape:
// among them pools the decision cannot tell apart (checkPoolNames) and a down or candidates
// line naming by VS name alone a virtual server several servers have (sameVSName).
func Decide(p *Paste, rr uint64) (*Decision, error) {
	if err := p.markDown(); err != nil {
		return nil, shapeError(err)
	}
	if p.Query == nil {
		lv := p.newLevel(LevelWideIP, "", nil, "")
		d := lv.decision(nil)
		d.Notes = append(d.Notes, p.unpastedNotes()...)
		return &d, nil
	}
	if err := p.checkPoolNames(); err != nil {
		return nil, shapeError(err)
	}
	first, notes, err := p.firstLevel()
	if err != nil {
		return nil, shapeError(err)
	}
	res := first.set.Score(*p.Query, rr)
	d := first.decision(&res)
	d.Notes = append(d.Notes, notes...)
	if len(p.WideIPs) > 0 && first.set.Level == LevelWideIP {
		d.WideIP = p.WideIPs[0].Name
	}
	if p.Query.Declared == nil && slices.ContainsFunc(p.Records, func(r pastedRecord) bool { return geoKind(r.Source.Kind) }) {
		d.Notes = append(d.Notes, "no geolocation database here: country, continent, ISP and state sources match only "+
			"what the source line declares (source country=PT continent=EU isp=… state=…); this one declares nothing")
	}
	d.Notes = append(d.Notes, p.unpastedNotes()...)
	if len(p.Ignored) > 0 {
		d.Notes = append(d.Notes, "read past (no bearing on topology): "+strings.Join(p.Ignored, "; "))
	}
	if first.set.Level == LevelWideIP && !res.NoMatch && (len(p.Pools) > 0 || len(p.WideIPs) > 0) {
		p.secondLevel(&d, first, &res, rr)
	} else if first.set.Level == LevelPool && first.set.Pool != "" {
		pool := first.set.Pools[slices.IndexFunc(first.set.Pools, func(pl Pool) bool { return pl.Name == first.set.Pool })]
		if ans, _ := p.poolAnswer(pool, &d); ans != nil {
			d.Answer = ans
		} else {
			d.Answer = &Answer{By: "local-bind", Pool: pool.Name, Text: fmt.Sprintf("pool %s has no available member "+
				"and its fallback is none: with no other pool to pass the query to, the local BIND answers", pool.Name)}
		}
	}
	return &d, nil
}

// secondLevel follows the wide IP's choice into the pools: the winner first, then, while a
// pool with fallback none has no available member, the next pool by score.
func (p *Paste) secondLevel(d *Decision, first *level, res *Result, rr uint64) {
	order := []string{res.Winner}
	ranked := slices.Clone(res.Candidates)
	slices.SortStableFunc(ranked, func(a, b CandidateScore) int { return cmp.Compare(b.Score, a.Score) })
	for _, c := range ranked {
		if c.Scored && c.Name != res.Winner {
			order = append(order, c.Name)
		}
	}
	for _, name := range order {
		pool, ok := p.pool(name)
		if !ok {
			d.Answer = &Answer{By: "topology", Pool: name, Text: fmt.Sprintf("the wide IP chooses pool %s; its gtm pool "+
				"stanza is not pasted, so the member decision is not shown", name)}
			return
		}
		lv := p.newLevel(LevelPool, "topology", withPool(first.set.Pools, pool), pool.Name)
		var pd Decision
		if pool.LoadBalancing == "topology" {
			pres := lv.set.Score(*p.Query, rr)
			pd = lv.decision(&pres)
			pd.Notes = without(pd.Notes, d.Notes)
		} else {
			pd = Decision{Mode: ModeEvaluate, Level: LevelPool, Pool: pool.Name, Records: []decidedRecord{},
				Candidates: []decidedCandidate{}, Winner: Winner{Names: []string{}}, Notes: []string{fmt.Sprintf(
					"pool %s chooses members by %s, not topology: no member decision to walk", pool.Name, pool.LoadBalancing)}}
		}
		ans, next := p.poolAnswer(pool, &pd)
		d.PoolLevel = append(d.PoolLevel, pd)
		if !next {
			d.Answer = ans
			return
		}
	}
	d.Answer = &Answer{By: "local-bind", Text: "no pool the wide IP's topology scored has an available member: the " +
		"query goes back to DNS and the local BIND answers"}
}

// poolAnswer says where a query ends in pool, from its member decision pd (empty when the
// pool's method is not topology). next is true when the pool passes the query on to the wide
// IP's next pool (no available member and fallback none).
func (p *Paste) poolAnswer(pool Pool, pd *Decision) (ans *Answer, next bool) {
	var available []string
	for _, m := range pool.Members {
		if !m.Down {
			available = append(available, m.Name)
		}
	}
	switch {
	case len(available) > 0 && pool.LoadBalancing != "topology":
		return &Answer{By: pool.LoadBalancing, Pool: pool.Name, Text: fmt.Sprintf("pool %s's method %s picks among its "+
			"available members (%s)", pool.Name, pool.LoadBalancing, strings.Join(available, ", "))}, false
	case len(pd.Winner.Names) > 0:
		return &Answer{By: "topology", Pool: pool.Name, Member: pd.Winner.Chosen, Text: fmt.Sprintf(
			"pool %s's topology chooses member %s", pool.Name, pd.Winner.Chosen)}, false
	case len(available) > 0:
		alt := cmp.Or(pool.Alternate, defaultPoolLoadBalancing)
		return &Answer{By: "alternate", Pool: pool.Name, Text: fmt.Sprintf("%s: pool %s's alternate method %s picks "+
			"among its available members (%s)", noAnswer, pool.Name, alt, strings.Join(available, ", "))}, false
	}
	empty := fmt.Sprintf("pool %s has no available member", pool.Name)
	pd.Notes = append(pd.Notes, empty)
	switch pool.Fallback {
	case "none":
		pd.Notes = append(pd.Notes, fmt.Sprintf("pool %s's fallback is none: the pool gives no answer and the wide IP "+
			"passes the query to its next pool", pool.Name))
		return nil, true
	case "return-to-dns":
		return &Answer{By: "local-bind", Pool: pool.Name, Text: empty + " and its fallback is return-to-dns: the query " +
			"goes back to DNS and the local BIND answers"}, false
	case "fallback-ip":
		return &Answer{By: "fallback", Pool: pool.Name, Text: empty + " and its fallback is fallback-ip: the pool's " +
			"fallback IP address answers"}, false
	}
	return &Answer{By: "local-bind", Pool: pool.Name, Text: fmt.Sprintf("%s and its fallback method %s decides: with "+
		"no member available it has nothing to return, and the query ends at the local BIND (set the fallback to "+
		"none so an empty pool passes the query to another pool)", empty, pool.Fallback)}, false
}

// markDown applies the "down" line to the pasted pool members: the member it names is down in
// every pool that has it (one virtual server, whatever pools list it). A VS name that members
// of several servers share is refused (sameVSName): it does not say which one is down.
func (p *Paste) markDown() error {
	for _, name := range p.Down {
		switch named := membersNamed(p.Pools, name); len(named) {
		case 0:
			return fmt.Errorf("down %s: no pasted pool member is named %s (members: %s)", name, name, strings.Join(p.memberNames(), ", "))
		case 1:
		default:
			return sameVSName("down", name, named)
		}
		for i := range p.Pools {
			for j := range p.Pools[i].Members {
				if m := &p.Pools[i].Members[j]; memberNamed(m.Name, name) {
					m.Down = true
				}
			}
		}
	}
	return nil
}

// memberNamed reports whether a member SERVER:VS is named by name: SERVER:VS or VS.
func memberNamed(member, name string) bool {
	_, vs, _ := strings.Cut(member, ":")
	return member == name || vs == name
}

// membersNamed are the distinct members (SERVER:VS) of pools that name matches, in the order
// pasted: more than one when name is a VS name that several servers' virtual servers share.
func membersNamed(pools []pastedPool, name string) []string {
	var out []string
	for _, pl := range pools {
		for _, m := range pl.Members {
			if memberNamed(m.Name, name) && !slices.Contains(out, m.Name) {
				out = append(out, m.Name)
			}
		}
	}
	return out
}

// sameVSName is the error for a query line (down, candidates) naming by VS name alone a
// virtual server that several servers have: the members it could be, and how to name one.
func sameVSName(line, name string, members []string) error {
	return fmt.Errorf("%s %s: %d servers have a virtual server %s (%s), so the name alone does not say which "+
		"member: write %s SERVER:VS, e.g. %s %s (name each member meant)", line, name, len(members), name,
		strings.Join(members, ", "), line, line, members[0])
}

func (p *Paste) memberNames() []string {
	var out []string
	for _, pl := range p.Pools {
		for _, m := range pl.Members {
			if !slices.Contains(out, m.Name) {
				out = append(out, m.Name)
			}
		}
	}
	if out == nil {
		return []string{"none pasted"}
	}
	return out
}

// geoKind reports whether a kind is classified by geolocation.
func geoKind(k Kind) bool {
	return k == KindISP || k == KindState || k == KindCountry || k == KindContinent
}

// withPool is pools with pool in place of the one of its name (appended when none has it): the
// pools a pool level knows, so that records naming the others are not flagged as unknown.
func withPool(pools []Pool, pool Pool) []Pool {
	out := slices.Clone(pools)
	if i := slices.IndexFunc(out, func(pl Pool) bool { return pl.Name == pool.Name }); i >= 0 {
		out[i] = pool
		return out
	}
	return append(out, pool)
}

// without is notes less those already in seen.
func without(notes, seen []string) []string {
	out := []string{}
	for _, n := range notes {
		if !slices.Contains(seen, n) {
			out = append(out, n)
		}
	}
	return out
}

// unpastedNotes say which regions the records name without the paste defining them: those the
// source line declares hold the query (taken as declared), the others hold nothing here.
func (p *Paste) unpastedNotes() []string {
	var declared, unknown []string
	for _, name := range p.Unpasted {
		if p.Query != nil && p.Query.Declared != nil && slices.Contains(p.Query.Declared.Regions, name) {
			declared = append(declared, name)
		} else {
			unknown = append(unknown, name)
		}
	}
	var notes []string
	if len(declared) > 0 {
		notes = append(notes, "regions not pasted, taken as declared on the source line (the query is inside them): "+strings.Join(declared, ", "))
	}
	if len(unknown) > 0 {
		notes = append(notes, "regions not pasted nor declared on the source line: "+strings.Join(unknown, ", ")+
			": their records match no query and they hold no destination here (paste tmsh list gtm region, or add region=NAME to the source line)")
	}
	return notes
}
