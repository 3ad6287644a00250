package topology

import (
	"errors"
	"fmt"
	"io"
	"net/netip"
	"slices"
	"strconv"
	"strings"
)

// ParseTMSH reads a tmsh paste (see Paste and tmshShape): gtm topology records in the one-line
// or the multi-line form tmsh lists, gtm region, gtm global-settings load-balancing, gtm
// wideip, gtm pool and gtm server stanzas, and the query lines "source …", "candidates …" and
// "down …". Names lose their partition (/Common/POOL1 is POOL1), but pools and wide IPs are
// known by record type and full path (a pool or wide IP pasted twice is refused; Decide
// resolves a wide IP's pools within its type). The records and regions are
// validated by the same rules as the YAML (a statement that does not parse, an undefined or
// cyclic region, a source naming a pool or data center, a negative score); every problem is
// reported, joined, each naming the line and ending with tmshShape. Other gtm stanzas are read
// past (Paste.Ignored).
func ParseTMSH(r io.Reader) (*Paste, error) {
	data, err := io.ReadAll(r)
	if err != nil {
		return nil, fmt.Errorf("reading the tmsh paste: %w", err)
	}
	stmts, err := lexTMSH(string(data))
	if err != nil {
		return nil, shapeError(err)
	}
	if len(stmts) == 0 {
		return nil, shapeError(errors.New("empty input: no topology records"))
	}
	t := &tmshReader{p: &Paste{LongestMatch: true}, regions: map[string][]string{}, servers: map[string]tmshServer{}, stanzas: map[string]int{}}
	t.v.unpasted = map[string]bool{}
	t.v.recordField = func(i int) string {
		return fmt.Sprintf("record %d (line %d)", i+1, t.p.Records[i].Line)
	}
	for _, st := range stmts {
		t.statement(st)
	}
	p := t.p
	p.Regions = t.v.regions(t.regions)
	if len(t.records) == 0 {
		t.v.fail("input", "no gtm topology records among %d statements: paste the output of tmsh list gtm topology", len(stmts))
	} else {
		for i, rec := range t.v.records(t.records, p.Regions) {
			p.Records[i].Record = rec
		}
	}
	p.Unpasted = sortedKeys(t.v.unpasted)
	t.resolveMembers()
	if err := errors.Join(t.v.errs...); err != nil {
		return nil, shapeError(err)
	}
	return p, nil
}

func shapeError(err error) error {
	return fmt.Errorf("tmsh paste: %w\n%s", err, tmshShape)
}

type tmshReader struct {
	p       *Paste
	v       validator
	records []fileRecord
	regions map[string][]string
	// servers are the gtm server stanzas by bare name; members are resolved after reading.
	servers map[string]tmshServer
	// stanzas are the lines of the gtm pool and gtm wideip stanzas read, by type and full
	// path ("gtm pool a /Common/P"): one pasted twice is refused.
	stanzas map[string]int
}

// once reports whether the stanza key (typedStanza) is read for the first time, and refuses
// it as pasted twice when not: two stanzas of one pool or wide IP leave the answer to
// whichever is read.
func (t *tmshReader) once(where string, line int, key, what string) bool {
	if first, dup := t.stanzas[key]; dup {
		t.v.fail(where, "%s is pasted twice (lines %d and %d): paste each %s once, as tmsh lists it", key, first, line, what)
		return false
	}
	t.stanzas[key] = line
	return true
}

type tmshServer struct {
	dataCenter string
	vs         map[string]netip.Addr
}

func (t *tmshReader) statement(st tmshStmt) {
	w := words(st.words)
	where := fmt.Sprintf("line %d", st.line)
	switch {
	case w[0] == "source":
		t.source(where, st)
	case w[0] == "candidates" || w[0] == "down":
		if len(w) < 2 {
			t.v.fail(where, "%q names nothing: want %s NAME …", st.text, w[0])
			return
		}
		names := make([]string, len(w)-1)
		for i, n := range w[1:] {
			names[i] = bare(n)
		}
		if w[0] == "down" {
			t.p.Down = append(t.p.Down, names...)
		} else if t.p.Candidates != nil {
			t.v.fail(where, "a second candidates line: give the candidates on one line")
		} else {
			t.p.Candidates = names
		}
	case w[0] != "gtm" || len(w) < 2:
		t.v.fail(where, "%q is not a gtm stanza nor a query line (source, candidates, down)", st.text)
	case w[1] == "topology":
		t.record(where, st, w[2:])
	case w[1] == "region":
		t.region(where, st, w)
	case w[1] == "global-settings" && len(w) > 2 && w[2] == "load-balancing":
		t.globalSettings(where, st)
	case w[1] == "wideip":
		t.wideIP(where, st, w)
	case w[1] == "pool":
		t.pool(where, st, w)
	case w[1] == "server":
		t.server(where, st, w)
	default:
		t.p.Ignored = append(t.p.Ignored, strings.Join(w, " "))
	}
}

// record reads "ldns: SOURCE server: DESTINATION { order N score N }".
func (t *tmshReader) record(where string, st tmshStmt, w []string) {
	where = fmt.Sprintf("record %d (%s)", len(t.records)+1, where)
	fr := fileRecord{}
	pr := pastedRecord{Text: st.text, Line: st.line}
	ldns, server := slices.Index(w, "ldns:"), slices.Index(w, "server:")
	if ldns != 0 || server < 0 {
		t.v.fail(where, "%q: want gtm topology ldns: SOURCE server: DESTINATION { score N }", st.text)
	} else {
		fr.Source = statementText(w[1:server])
		fr.Destination = statementText(w[server+1:])
	}
	for _, f := range fieldsOf(st.body) {
		switch f.key {
		case "score", "order":
			n, err := strconv.Atoi(f.value)
			if err != nil || f.block != nil {
				t.v.fail(where, "%s %q: want a whole number", f.key, f.value)
				continue
			}
			if f.key == "order" {
				pr.Order = n
			} else {
				fr.Score = &n
			}
		case "description":
		default:
			t.v.fail(where, "unknown record field %q: a topology record has order, score and description", f.key)
		}
	}
	t.records = append(t.records, fr)
	t.p.Records = append(t.p.Records, pr)
}

// statementText turns the words of one side of a record (or one region member) into what
// parseStatement reads, the object names without their partition.
func statementText(w []string) string {
	out := slices.Clone(w)
	i := 0
	if len(out) > 0 && out[0] == "not" {
		i = 1
	}
	if len(out) > i+1 {
		switch Kind(strings.ToLower(out[i])) {
		case KindPool, KindDataCenter, KindRegion:
			out[i+1] = bare(out[i+1])
		}
	}
	return strings.Join(out, " ")
}

// region reads "gtm region NAME { region-members { MEMBER { } … } }".
func (t *tmshReader) region(where string, st tmshStmt, w []string) {
	if len(w) != 3 {
		t.v.fail(where, "%q: want gtm region /Partition/NAME { region-members { … } }", st.text)
		return
	}
	name := bare(w[2])
	if _, dup := t.regions[name]; dup {
		t.v.fail(where, "region %s is pasted twice", name)
		return
	}
	members := []string{}
	for _, f := range fieldsOf(st.body) {
		if f.key != "region-members" {
			continue
		}
		var cur []string
		line := 0
		flush := func() {
			if len(cur) > 0 {
				members = append(members, statementText(cur))
			}
			cur = nil
		}
		for _, it := range f.block {
			if it.isBody {
				flush()
				continue
			}
			if it.line != line {
				flush()
				line = it.line
			}
			cur = append(cur, it.word)
		}
		flush()
	}
	t.regions[name] = members
}

func (t *tmshReader) globalSettings(where string, st tmshStmt) {
	for _, f := range fieldsOf(st.body) {
		var b *bool
		switch f.key {
		case "topology-longest-match":
			b = &t.p.LongestMatch
		case "topology-prefer-edns0-client-subnet":
			b = &t.p.PreferECS
		default:
			continue
		}
		switch f.value {
		case "yes", "enabled", "enable", "true":
			*b = true
		case "no", "disabled", "disable", "false":
			*b = false
		default:
			t.v.fail(where, "%s %q: want yes or no", f.key, f.value)
		}
	}
}

// wideIP reads "gtm wideip TYPE NAME { pool-lb-mode M pools { NAME { order N } … } }".
func (t *tmshReader) wideIP(where string, st tmshStmt, w []string) {
	typ, name, ok := typedName(w)
	if !ok {
		t.v.fail(where, "%q: want gtm wideip a NAME { pools { … } pool-lb-mode topology }", st.text)
		return
	}
	wip := WideIP{Name: bare(name), Path: name, Type: typ, Line: st.line, LoadBalancing: "round-robin"}
	if !t.once(where, st.line, wip.stanza(), "wide IP") {
		return
	}
	for _, f := range fieldsOf(st.body) {
		switch f.key {
		case "pool-lb-mode":
			wip.LoadBalancing = f.value
		case "pools":
			type ordered struct {
				name  string
				order int
			}
			var pools []ordered
			for _, m := range fieldsOf(f.block) {
				o := ordered{name: m.key, order: len(pools)}
				for _, sub := range fieldsOf(m.block) {
					if sub.key == "order" {
						if n, err := strconv.Atoi(sub.value); err == nil {
							o.order = n
						}
					}
				}
				pools = append(pools, o)
			}
			slices.SortStableFunc(pools, func(a, b ordered) int { return a.order - b.order })
			for _, o := range pools {
				wip.Pools = append(wip.Pools, o.name)
			}
		}
	}
	if !slices.Contains(wideIPModes, wip.LoadBalancing) {
		t.v.fail(where, "wide IP %s: pool-lb-mode %q: want one of %s", wip.Name, wip.LoadBalancing, strings.Join(wideIPModes, ", "))
	}
	t.p.WideIPs = append(t.p.WideIPs, wip)
}

// pool reads "gtm pool TYPE NAME { [disabled] load-balancing-mode M alternate-mode M
// fallback-mode M members { SERVER:VS { member-order N [disabled] [state down] } … } }"; the
// members are kept in member-order, and a disabled pool's are all down (none of them answers).
func (t *tmshReader) pool(where string, st tmshStmt, w []string) {
	typ, name, ok := typedName(w)
	if !ok {
		t.v.fail(where, "%q: want gtm pool a NAME { load-balancing-mode topology members { … } }", st.text)
		return
	}
	p := pastedPool{Pool: Pool{Name: bare(name), LoadBalancing: defaultPoolLoadBalancing, Fallback: defaultPoolFallback},
		Type: typ, Path: name, Line: st.line}
	if !t.once(where, st.line, typedStanza("gtm pool", typ, name), "pool") {
		return
	}
	disabled := false
	for _, f := range fieldsOf(st.body) {
		switch f.key {
		case "disabled": // the whole pool: none of its members answers
			disabled = true
		case "load-balancing-mode":
			p.LoadBalancing = f.value
		case "alternate-mode":
			p.Alternate = f.value
		case "fallback-mode":
			p.Fallback = f.value
		case "members":
			// tmsh lists the members by name; member-order is the pool's order (the
			// round-robin order), as a wide IP's pools go by their order.
			order := map[string]int{}
			for _, m := range fieldsOf(f.block) {
				mem := Member{Name: bare(m.key)}
				order[mem.Name] = len(p.Members)
				for _, sub := range fieldsOf(m.block) {
					switch {
					case sub.key == "disabled", sub.key == "state" && (sub.value == "down" || sub.value == "disabled"):
						mem.Down = true
					case sub.key == "member-order":
						if n, err := strconv.Atoi(sub.value); err == nil {
							order[mem.Name] = n
						}
					}
				}
				p.Members = append(p.Members, mem)
			}
			slices.SortStableFunc(p.Members, func(a, b Member) int { return order[a.Name] - order[b.Name] })
		}
	}
	if disabled {
		for i := range p.Members {
			p.Members[i].Down = true
		}
	}
	for field, mode := range map[string]string{"load-balancing-mode": p.LoadBalancing, "alternate-mode": p.Alternate, "fallback-mode": p.Fallback} {
		if mode != "" && !slices.Contains(poolModes, mode) {
			t.v.fail(where, "pool %s: %s %q: want one of %s", p.Name, field, mode, strings.Join(poolModes, ", "))
		}
	}
	t.p.Pools = append(t.p.Pools, p)
}

// server reads "gtm server NAME { datacenter DC virtual-servers { VS { destination A:PORT } } }":
// where each member is and what its address is.
func (t *tmshReader) server(where string, st tmshStmt, w []string) {
	if len(w) != 3 {
		t.v.fail(where, "%q: want gtm server /Partition/NAME { datacenter … virtual-servers { … } }", st.text)
		return
	}
	s := tmshServer{vs: map[string]netip.Addr{}}
	for _, f := range fieldsOf(st.body) {
		switch f.key {
		case "datacenter":
			s.dataCenter = bare(f.value)
		case "virtual-servers":
			for _, vs := range fieldsOf(f.block) {
				for _, sub := range fieldsOf(vs.block) {
					if sub.key != "destination" {
						continue
					}
					if a, ok := vsAddress(sub.value); ok {
						s.vs[bare(vs.key)] = a
					} else {
						t.v.fail(where, "virtual server %s: destination %q: want ADDRESS:PORT (IPv4) or ADDRESS.PORT (IPv6, as tmsh writes it)", vs.key, sub.value)
					}
				}
			}
		}
	}
	t.servers[bare(w[2])] = s
}

// vsAddress is the address of a virtual server's destination as tmsh writes it: ADDRESS:PORT
// for IPv4 (the port may be a service name), ADDRESS.PORT for IPv6 (2001:db8::10.80), or
// [ADDRESS]:PORT.
func vsAddress(dest string) (netip.Addr, bool) {
	if ap, err := netip.ParseAddrPort(dest); err == nil {
		return ap.Addr().Unmap(), true
	}
	if i := strings.LastIndexByte(dest, '.'); i > 0 {
		if a, err := netip.ParseAddr(dest[:i]); err == nil && a.Is6() {
			return a.Unmap(), true
		}
	}
	if a, err := netip.ParseAddr(strings.Split(dest, ":")[0]); err == nil {
		return a.Unmap(), true
	}
	return netip.Addr{}, false
}

// resolveMembers gives each pool member (SERVER:VS) its server's data center and its virtual
// server's address, when the gtm server stanza was pasted.
func (t *tmshReader) resolveMembers() {
	for i := range t.p.Pools {
		for j := range t.p.Pools[i].Members {
			m := &t.p.Pools[i].Members[j]
			server, vs, ok := strings.Cut(m.Name, ":")
			if !ok {
				continue
			}
			if s, ok := t.servers[server]; ok {
				m.DataCenter = s.dataCenter
				m.Address = s.vs[vs]
			}
		}
	}
}

// source reads "source ip=A.B.C.D ecs=CIDR country=XX continent=XX isp=… state=… region=NAME".
func (t *tmshReader) source(where string, st tmshStmt) {
	if t.p.Query != nil {
		t.v.fail(where, "a second source line: one query per paste")
		return
	}
	q := &Query{}
	d := &Declared{}
	for _, it := range st.words[1:] {
		k, v, ok := strings.Cut(it.word, "=")
		if !ok || v == "" {
			t.v.fail(where, "%q: want KEY=VALUE (ip, ecs, country, continent, isp, state, region)", it.word)
			continue
		}
		switch k {
		case "ip":
			a, err := netip.ParseAddr(v)
			if err != nil {
				t.v.fail(where, "ip=%s: not an IP address (want e.g. ip=10.1.2.7)", v)
			}
			q.LDNS = a.Unmap()
		case "ecs":
			p, err := netip.ParsePrefix(v)
			if err != nil {
				t.v.fail(where, "ecs=%s: not CIDR (want e.g. ecs=10.9.0.0/24)", v)
			}
			q.ECS = p
		case "country", "continent", "isp", "state":
			parsed, err := parseStatement(k + " " + v)
			if err != nil {
				t.v.fail(where, "%s=%s: %v", k, v, err)
				continue
			}
			*map[string]*string{"country": &d.Country, "continent": &d.Continent, "isp": &d.ISP, "state": &d.State}[k] = parsed.Name
		case "region":
			d.Regions = append(d.Regions, bare(v))
		default:
			t.v.fail(where, "%q: unknown key %q (want ip, ecs, country, continent, isp, state, region)", it.word, k)
		}
	}
	if len(st.words) == 1 {
		t.v.fail(where, "source with nothing: want source ip=A.B.C.D or source country=XX …")
	}
	if d.Country != "" || d.Continent != "" || d.ISP != "" || d.State != "" || len(d.Regions) > 0 {
		q.Declared = d
	}
	t.p.Query = q
}

// typedName is the record type and the name in "gtm wideip|pool [a|aaaa|cname|mx|naptr|srv]
// NAME"; typ is empty in the older form that gives no type.
func typedName(w []string) (typ, name string, ok bool) {
	switch {
	case len(w) == 4 && slices.Contains([]string{"a", "aaaa", "cname", "mx", "naptr", "srv"}, w[2]):
		return w[2], w[3], true
	case len(w) == 3:
		return "", w[2], true
	}
	return "", "", false
}

// tmshField is one entry of a block read as tmsh key/value pairs: "key value", "key { … }",
// or a lone flag ("disabled").
type tmshField struct {
	key   string
	value string
	block []tmshItem
}

// flags are the tmsh keys that stand alone, with no value.
var flags = []string{"disabled", "enabled"}

func fieldsOf(items []tmshItem) []tmshField {
	var out []tmshField
	for i := 0; i < len(items); i++ {
		it := items[i]
		if it.isBody {
			continue // a block with no key: nothing reads it
		}
		f := tmshField{key: it.word}
		if slices.Contains(flags, it.word) {
			out = append(out, f)
			continue
		}
		if i+1 < len(items) {
			next := items[i+1]
			if next.isBody {
				f.block = next.block
				i++
			} else if next.line == it.line {
				f.value = next.word
				i++
			}
		}
		out = append(out, f)
	}
	return out
}

func words(items []tmshItem) []string {
	out := make([]string, len(items))
	for i, it := range items {
		out[i] = it.word
	}
	return out
}
