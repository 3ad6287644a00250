package topology

import (
	"fmt"
	"slices"
	"strings"
)

// firstLevel is the decision a query starts with, and the notes on how its candidates were
// found: a candidates line, else the first gtm wideip stanza, else the record destinations.
func (p *Paste) firstLevel() (*level, []string, error) {
	switch {
	case p.Candidates != nil:
		return p.namedCandidates()
	case len(p.WideIPs) > 0:
		return p.wideIPLevel()
	}
	return p.derivedCandidates()
}

// wideIPLevel: the first wide IP's pools compete. A wide IP that does not choose by topology
// leaves the first of its pasted topology pools to decide.
func (p *Paste) wideIPLevel() (*level, []string, error) {
	wip := p.WideIPs[0]
	var notes []string
	if len(p.WideIPs) > 1 {
		name := wip.Name
		if wip.Type != "" {
			name = wip.Type + " " + wip.Name
		}
		notes = append(notes, fmt.Sprintf("deciding wide IP %s, the first pasted; the other %d are not decided", name, len(p.WideIPs)-1))
	}
	if len(wip.Pools) == 0 {
		return nil, nil, fmt.Errorf("wide IP %s lists no pools: paste its pools { … } block", wip.Name)
	}
	if wip.LoadBalancing != "topology" {
		for _, name := range wip.Pools {
			if pool, ok := p.pool(bare(name)); ok && pool.LoadBalancing == "topology" {
				notes = append(notes, fmt.Sprintf("wide IP %s chooses its pool by %s, not topology: only pool %s's member "+
					"decision is topology", wip.Name, wip.LoadBalancing, pool.Name))
				return p.newLevel(LevelPool, "", withPool(p.poolList(), pool), pool.Name), notes, nil
			}
		}
		return nil, nil, fmt.Errorf("wide IP %s chooses pools by %s and none of its pasted pools uses topology: nothing "+
			"for topology to decide (set pool-lb-mode topology, or paste a gtm pool with load-balancing-mode topology)",
			wip.Name, wip.LoadBalancing)
	}
	pools := make([]Pool, len(wip.Pools))
	for i, name := range wip.Pools {
		pools[i] = p.poolOrBare(bare(name))
	}
	return p.newLevel(LevelWideIP, "topology", pools, ""), notes, nil
}

// derivedCandidates are the record destinations: the pools they name (wide-IP level), else the
// members of the one gtm pool pasted, else the data centers they name (pool level, each
// standing for its members). A destination that cannot be a candidate (a region, a subnet, an
// ISP, a state, a country, a continent) is refused: it is something candidates are in, not
// something that answers.
func (p *Paste) derivedCandidates() (*level, []string, error) {
	var pools, dcs, cannot []string
	for i, r := range p.Records {
		d := r.Destination
		switch d.Kind {
		case KindPool:
			if !slices.Contains(pools, d.Name) {
				pools = append(pools, d.Name)
			}
		case KindDataCenter:
			if !slices.Contains(dcs, d.Name) {
				dcs = append(dcs, d.Name)
			}
		default:
			cannot = append(cannot, fmt.Sprintf("record %d's destination %q", i+1, d.String()))
		}
	}
	if stanzas := p.poolList(); len(pools) == 0 && len(stanzas) == 1 {
		return p.newLevel(LevelPool, "", stanzas, stanzas[0].Name), nil, nil
	}
	if len(cannot) > 0 {
		return nil, nil, fmt.Errorf("%s cannot be a candidate: without a candidates line or a gtm wideip stanza the "+
			"candidates are the record destinations, and only a pool or a data center answers a query; add a line "+
			"such as \"candidates POOL1 POOL2\" or paste the gtm wideip and gtm pool stanzas", strings.Join(cannot, ", "))
	}
	if len(pools) > 0 {
		cands := make([]Pool, len(pools))
		for i, name := range pools {
			cands[i] = p.poolOrBare(name)
		}
		return p.newLevel(LevelWideIP, "topology", cands, ""), []string{"candidates: the pools the records name, in the " +
			"order first named (no candidates line, no gtm wideip stanza)"}, nil
	}
	return p.dataCenterLevel(dcs), []string{"candidates: the data centers the records name, each standing for its " +
		"members (no candidates line, no gtm pool stanza)"}, nil
}

// namedCandidates are the candidates line's: all pools (wide-IP level), all members of one
// pasted pool, or all data centers (pool level). Each name must be known from the records or
// the stanzas.
func (p *Paste) namedCandidates() (*level, []string, error) {
	var pools, dcs []string
	for _, r := range p.Records {
		switch r.Destination.Kind {
		case KindPool:
			pools = append(pools, r.Destination.Name)
		case KindDataCenter:
			dcs = append(dcs, r.Destination.Name)
		}
	}
	for _, w := range p.WideIPs {
		for _, name := range w.Pools {
			pools = append(pools, bare(name))
		}
	}
	for _, pl := range p.poolList() {
		pools = append(pools, pl.Name)
		for _, m := range pl.Members {
			if m.DataCenter != "" {
				dcs = append(dcs, m.DataCenter)
			}
		}
	}
	kinds := map[string][]string{}
	var unknown []string
	var memberPool *Pool
	var members []Member
	for _, name := range p.Candidates {
		switch {
		case slices.Contains(pools, name):
			kinds["pools"] = append(kinds["pools"], name)
		case slices.Contains(dcs, name):
			kinds["data centers"] = append(kinds["data centers"], name)
		default:
			pool, m, ok, err := p.member(name)
			if err != nil {
				return nil, nil, err
			}
			if !ok {
				unknown = append(unknown, name)
				continue
			}
			if memberPool != nil && memberPool.Name != pool.Name {
				return nil, nil, fmt.Errorf("candidates: %s is in pool %s and %s in pool %s: members compete within one pool",
					members[0].Name, memberPool.Name, m.Name, pool.Name)
			}
			memberPool = &pool
			members = append(members, m)
			kinds["members"] = append(kinds["members"], name)
		}
	}
	known := slices.Concat(uniq(pools), uniq(dcs), p.memberNames())
	switch {
	case len(unknown) == len(p.Candidates):
		return nil, nil, fmt.Errorf("candidates %s: names nothing known; a candidate is a pool, a pool member or a data "+
			"center that the records or the pasted stanzas name (known: %s)", strings.Join(p.Candidates, " "), strings.Join(known, ", "))
	case len(unknown) > 0:
		return nil, nil, fmt.Errorf("candidates: %s not known; a candidate is a pool, a pool member or a data center that "+
			"the records or the pasted stanzas name (known: %s)", strings.Join(unknown, ", "), strings.Join(known, ", "))
	case len(kinds) > 1:
		return nil, nil, fmt.Errorf("candidates %s: mixes %s; name one level's candidates: pools (the wide IP "+
			"chooses), or members or data centers (a pool chooses)", strings.Join(p.Candidates, " "), strings.Join(sortedKeys(kinds), " and "))
	case len(kinds["pools"]) > 0:
		cands := make([]Pool, len(p.Candidates))
		for i, name := range p.Candidates {
			cands[i] = p.poolOrBare(name)
		}
		return p.newLevel(LevelWideIP, "topology", cands, ""), nil, nil
	case len(members) > 0:
		pool := *memberPool
		pool.Members = members
		return p.newLevel(LevelPool, "", withPool(p.poolList(), pool), pool.Name), nil, nil
	}
	return p.dataCenterLevel(p.Candidates), []string{"candidates: data centers, each standing for its members"}, nil
}

// dataCenterLevel is a pool level whose candidates are data centers, each standing for its
// members: a data-center destination matches the one it names.
func (p *Paste) dataCenterLevel(dcs []string) *level {
	pool := Pool{LoadBalancing: "topology"}
	for _, dc := range dcs {
		pool.Members = append(pool.Members, Member{Name: dc, DataCenter: dc})
	}
	return p.newLevel(LevelPool, "", []Pool{pool}, "")
}

// recordType is the record type the query asks for: the decided wide IP's (the first
// pasted); empty when no wide IP is pasted or its stanza gives no type.
func (p *Paste) recordType() string {
	if len(p.WideIPs) == 0 {
		return ""
	}
	return p.WideIPs[0].Type
}

// reachablePools are the pasted gtm pool stanzas the query can reach: those of its record
// type (gtm wideip a uses gtm pool a) and those pasted without a type; every one when nothing
// says the type. Among them a name is one pool: checkPoolNames refuses two that read as one.
func (p *Paste) reachablePools() []pastedPool {
	typ := p.recordType()
	var out []pastedPool
	for _, pl := range p.Pools {
		if typ == "" || pl.Type == "" || pl.Type == typ {
			out = append(out, pl)
		}
	}
	return out
}

// poolList is reachablePools as the pools a level knows.
func (p *Paste) poolList() []Pool {
	var out []Pool
	for _, pl := range p.reachablePools() {
		out = append(out, pl.Pool)
	}
	return out
}

// checkPoolNames refuses a paste whose pools the decision cannot tell apart. The topology
// records, a candidates line and the answer name a pool without its partition or record type,
// so two reachable stanzas that read as one name (two record types with no wide IP to choose
// between them, a stanza with a type and one without, two partitions) would leave the answer
// to whichever was pasted first. A wide IP's pool whose pasted stanza of that name is in
// another partition is refused too: it is not that pool.
func (p *Paste) checkPoolNames() error {
	pools := p.reachablePools()
	for i, b := range pools {
		for _, a := range pools[:i] {
			if a.Name != b.Name {
				continue
			}
			both := fmt.Sprintf("%s and %s both read as pool %s", a.stanza(), b.stanza(), b.Name)
			switch {
			case a.Type != "" && b.Type != "" && a.Type != b.Type:
				return fmt.Errorf("%s: they differ only in record type, and nothing says which type the query asks "+
					"for (no gtm wideip stanza with a type): paste the gtm wideip stanza (gtm wideip %s uses the gtm pool "+
					"%s pools), or the pools of one type only", both, a.Type, a.Type)
			case a.Type != b.Type:
				return fmt.Errorf("%s: one is pasted without a record type, so it may be either: paste the pools as "+
					"one BIG-IP version lists them (gtm pool a NAME), or only one of the two", both)
			}
			return fmt.Errorf("%s: partitions are dropped from names and the topology records name a pool without "+
				"its partition, so nothing tells the two apart: paste the pools of one partition only", both)
		}
	}
	if len(p.WideIPs) == 0 {
		return nil
	}
	wip := p.WideIPs[0]
	for _, ref := range wip.Pools {
		pool, ok := p.stanza(bare(ref))
		if ok && strings.Contains(ref, "/") && strings.Contains(pool.Path, "/") && pool.Path != ref {
			return fmt.Errorf("wide IP %s (line %d) uses pool %s, and the pasted %s is another partition's pool of "+
				"that name: paste the %s stanza", wip.Name, wip.Line, ref, pool.stanza(), typedStanza("gtm pool", pool.Type, ref))
		}
	}
	return nil
}

// stanza is the reachable gtm pool stanza named name.
func (p *Paste) stanza(name string) (pastedPool, bool) {
	pools := p.reachablePools()
	i := slices.IndexFunc(pools, func(pl pastedPool) bool { return pl.Name == name })
	if i < 0 {
		return pastedPool{}, false
	}
	return pools[i], true
}

// pool is the reachable gtm pool stanza named name.
func (p *Paste) pool(name string) (Pool, bool) {
	pl, ok := p.stanza(name)
	return pl.Pool, ok
}

// poolOrBare is the pool stanza named name, or a pool known by name only.
func (p *Paste) poolOrBare(name string) Pool {
	if pool, ok := p.pool(name); ok {
		return pool
	}
	return Pool{Name: name}
}

// member finds a reachable pool member by SERVER:VS or VS (in the first pool that has it). A
// VS name that members of several servers share is refused, naming them (see sameVSName).
func (p *Paste) member(name string) (Pool, Member, bool, error) {
	pools := p.reachablePools()
	if named := membersNamed(pools, name); len(named) > 1 {
		return Pool{}, Member{}, false, sameVSName("candidates", name, named)
	}
	for _, pl := range pools {
		for _, m := range pl.Members {
			if memberNamed(m.Name, name) {
				return pl.Pool, m, true, nil
			}
		}
	}
	return Pool{}, Member{}, false, nil
}

func uniq(names []string) []string {
	out := slices.Clone(names)
	slices.Sort(out)
	return slices.Compact(out)
}
