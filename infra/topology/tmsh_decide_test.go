package topology

import (
	"encoding/json"
	"slices"
	"strconv"
	"strings"
	"testing"
)

func TestTopologyTMSHNestedRegionsResolveTransitivelyAndNegatedMembersExclude(t *testing.T) {
	const regions = `gtm region /Common/iberia {
    region-members {
        country PT { }
        region /Common/spain { }
    }
}
gtm region /Common/spain { region-members { country ES { } subnet 10.34.0.0/16 { } } }
gtm region /Common/europe-but-gb {
    region-members {
        continent EU { }
        not country GB { }
    }
}
gtm topology ldns: region /Common/iberia server: pool /Common/IBERIA { score 30 }
gtm topology ldns: region /Common/europe-but-gb server: pool /Common/EU { score 20 }
`
	for _, tc := range []struct {
		query  string
		iberia bool
		eu     bool
	}{
		{"source country=PT continent=EU", true, true},
		{"source ip=10.34.1.1", true, false},                     // iberia > region spain > subnet
		{"source region=spain", true, false},                     // declared inside a nested region
		{"source country=ES continent=EU", true, true},           // iberia > region spain > country ES
		{"source country=GB continent=EU", false, false},         // excluded by "not country GB"
		{"source country=FR continent=EU region=x", false, true}, // region x: declared, unknown, harmless
	} {
		t.Run(tc.query, func(t *testing.T) {
			d := decidePaste(t, regions+tc.query+"\n")
			if _, _, ok := candidateScore(t, d, "IBERIA"); ok != tc.iberia {
				t.Errorf("IBERIA scored %v, want %v", ok, tc.iberia)
			}
			if _, _, ok := candidateScore(t, d, "EU"); ok != tc.eu {
				t.Errorf("EU scored %v, want %v", ok, tc.eu)
			}
			if !hasNote(d, RuleNegatedMember) {
				t.Errorf("the negated member should be flagged: %q", d.Notes)
			}
		})
	}
	_, err := ParseTMSH(strings.NewReader(`gtm region /Common/a { region-members { region /Common/b { } } }
gtm region /Common/b { region-members { region /Common/a { } } }
gtm topology ldns: region /Common/a server: pool /Common/P { score 1 }
`))
	if err == nil || !strings.Contains(err.Error(), "region cycle") {
		t.Fatalf("a region cycle should be refused: %v", err)
	}
}

// In the paste the region record comes first and the /24 last; the region gives POOL1 10, the
// /24 gives POOL1 50, the wildcard POOL2 20.
const longestMatchPaste = `gtm global-settings load-balancing { topology-longest-match %s }
gtm region /Common/near { region-members { subnet 10.1.0.0/16 { } } }
gtm topology ldns: region /Common/near server: pool /Common/POOL1 { score 10 }
gtm topology ldns: subnet 0.0.0.0/0 server: pool /Common/POOL2 { score 20 }
gtm topology ldns: subnet 10.1.2.0/24 server: pool /Common/POOL1 { score 50 }
source ip=10.1.2.7
`

func TestTopologyTMSHLongestMatchOnAndOff(t *testing.T) {
	on := decidePaste(t, strings.Replace(longestMatchPaste, "%s", "yes", 1))
	if !on.LongestMatch {
		t.Fatal("topology-longest-match yes read as off")
	}
	winnerIs(t, on, "POOL1")
	if s, from, _ := candidateScore(t, on, "POOL1"); s != 50 || from != 3 {
		t.Errorf("on: POOL1 %d from record %d, want 50 from the /24 (record 3), sorted first", s, from)
	}

	off := decidePaste(t, strings.Replace(longestMatchPaste, "%s", "no", 1))
	if off.LongestMatch {
		t.Fatal("topology-longest-match no read as on")
	}
	winnerIs(t, off, "POOL2")
	if s, from, _ := candidateScore(t, off, "POOL1"); s != 10 || from != 1 {
		t.Errorf("off: POOL1 %d from record %d, want 10 from record 1, walked as pasted", s, from)
	}
	if r := off.Records[2]; r.Index != 3 || r.ShadowedBy == nil || *r.ShadowedBy != 1 {
		t.Errorf("off: the /24 walks last, shadowed by record 1: %+v", r)
	}

	// Off, tmsh's order lines set the walk, not the paste order.
	ordered := strings.NewReplacer(
		"{ score 10 }", "{ order 3 score 10 }",
		"{ score 20 }", "{ order 2 score 20 }",
		"{ score 50 }", "{ order 1 score 50 }",
	).Replace(strings.Replace(longestMatchPaste, "%s", "no", 1))
	d := decidePaste(t, ordered)
	if d.Records[0].Index != 3 || d.Records[2].Index != 1 {
		t.Errorf("off with order lines: walk %d, %d, %d, want 3, 2, 1", d.Records[0].Index, d.Records[1].Index, d.Records[2].Index)
	}
	winnerIs(t, d, "POOL1")
}

func TestTopologyTMSHDecisionJSONShape(t *testing.T) {
	d := decidePaste(t, strings.Replace(ExampleTMSH, "    order 3\n    score 30\n", "    order 3\n", 1))
	raw, err := json.Marshal(d)
	if err != nil {
		t.Fatal(err)
	}
	var got map[string]any
	if err := json.Unmarshal(raw, &got); err != nil {
		t.Fatal(err)
	}
	if got["mode"] != "evaluate" {
		t.Errorf("mode %v", got["mode"])
	}
	records := got["records"].([]any)
	want := []struct {
		index      float64
		group      string
		shadowedBy any
		text       string
	}{
		{3, "plain", nil, "gtm topology ldns: subnet 10.1.2.0/24 server: pool /Common/POOL1 { order 3 }"},
		{2, "plain", nil, "gtm topology ldns: region /Common/around-10-1 server: pool /Common/POOL2 { order 2 score 20 }"},
		{1, "wildcard", 2.0, "gtm topology ldns: subnet 0.0.0.0/0 server: pool /Common/POOL2 { order 1 score 40 }"},
	}
	for i, w := range want {
		r := records[i].(map[string]any)
		if sb, ok := r["shadowed_by"]; !ok || sb != w.shadowedBy {
			t.Errorf("records[%d].shadowed_by = %v (present %v), want %v", i, sb, ok, w.shadowedBy)
		}
		if r["index"] != w.index || r["group"] != w.group || r["text"] != w.text {
			t.Errorf("records[%d] = index %v group %v text %q, want %v %v %q", i, r["index"], r["group"], r["text"], w.index, w.group, w.text)
		}
	}
	cands := got["candidates"].([]any)
	for i, w := range []struct {
		name        string
		score, from float64
	}{{"POOL2", 20, 2}, {"POOL1", 1, 3}} {
		c := cands[i].(map[string]any)
		if c["name"] != w.name || c["score"] != w.score || c["from_record"] != w.from {
			t.Errorf("candidates[%d] = %v, want name %s score %v from_record %v", i, c, w.name, w.score, w.from)
		}
	}
	win := got["winner"].(map[string]any)
	if names := win["names"].([]any); len(names) != 1 || names[0] != "POOL2" || win["score"] != 20.0 || win["tie"] != false {
		t.Errorf("winner %v, want POOL2 at 20, no tie (POOL1 weighs the default 1)", win)
	}
	notes := got["notes"].([]any)
	found := false
	for _, n := range notes {
		found = found || strings.Contains(n.(string), "has no score and weighs the default 1")
	}
	if !found {
		t.Errorf("no default-weight note in %v", notes)
	}

	// Sorted-only: no source line.
	d = decidePaste(t, strings.Replace(ExampleTMSH, "source ip=10.1.2.7\n", "", 1))
	raw, _ = json.Marshal(d)
	got = nil
	if err := json.Unmarshal(raw, &got); err != nil {
		t.Fatal(err)
	}
	win = got["winner"].(map[string]any)
	if got["mode"] != "sorted-only" || len(win["names"].([]any)) != 0 || win["score"] != nil || win["tie"] != false {
		t.Errorf("sorted-only: mode %v winner %v", got["mode"], win)
	}
	for i, r := range got["records"].([]any) {
		if sb, ok := r.(map[string]any)["shadowed_by"]; !ok || sb != nil {
			t.Errorf("sorted-only records[%d].shadowed_by = %v, want null", i, sb)
		}
	}
}

func TestTopologyTMSHNoMatchAndRoundRobinAreNoted(t *testing.T) {
	d := decidePaste(t, `gtm topology ldns: subnet 10.0.0.0/8 server: pool /Common/A { score 5 }
source ip=192.0.2.1
`)
	winnerIs(t, d)
	if d.Winner.Score != nil || !strings.Contains(strings.Join(d.Notes, "\n"), noAnswer) {
		t.Errorf("no match: winner %+v notes %q", d.Winner, d.Notes)
	}
	d = decidePaste(t, `gtm topology ldns: subnet 10.0.0.0/8 server: pool /Common/A { score 5 }
gtm topology ldns: subnet 10.0.0.0/8 server: pool /Common/B { score 5 }
source ip=10.0.0.1
`)
	winnerIs(t, d, "A", "B")
	if !d.Winner.Tie || !strings.Contains(strings.Join(d.Notes, "\n"), "round robin decides") {
		t.Errorf("tie: winner %+v notes %q", d.Winner, d.Notes)
	}
}

// twoLevels: the wide IP picks pool_near (50) over pool_far (10); pool_near's members are
// vs_near1 (down in the stanza) and vs_near2 (down on the query line), so it has none
// available. pool_far's member is in DC2, which a data-center record scores.
const twoLevels = `gtm topology ldns: subnet 10.1.0.0/16 server: pool /Common/pool_near { score 50 }
gtm topology ldns: subnet 0.0.0.0/0 server: pool /Common/pool_far { score 10 }
gtm topology ldns: subnet 10.0.0.0/8 server: datacenter /Common/DC2 { score 5 }
gtm wideip a www.example.com {
    pool-lb-mode topology
    pools {
        /Common/pool_near { order 0 }
        /Common/pool_far { order 1 }
    }
}
gtm pool a /Common/pool_near {
    fallback-mode FALLBACK
    load-balancing-mode topology
    members {
        /Common/dc1-server:/Common/vs_near1 {
            member-order 0
            state down
        }
        /Common/dc1-server:/Common/vs_near2 { member-order 1 }
    }
}
gtm pool a /Common/pool_far {
    fallback-mode none
    load-balancing-mode topology
    members { /Common/dc2-server:/Common/vs_far { member-order 0 } }
}
gtm server /Common/dc2-server {
    datacenter /Common/DC2
    virtual-servers { /Common/vs_far { destination 198.51.100.10:80 } }
}
source ip=10.1.2.7
down vs_near2
`

func TestTopologyTMSHTwoLevelsWithAnEmptyChosenPool(t *testing.T) {
	d := decidePaste(t, strings.Replace(twoLevels, "FALLBACK", "return-to-dns", 1))
	winnerIs(t, d, "pool_near")
	if d.WideIP != "www.example.com" || len(d.PoolLevel) != 1 || d.PoolLevel[0].Pool != "pool_near" {
		t.Fatalf("want the wide IP's choice, then pool_near's member decision: %+v", d)
	}
	if len(d.PoolLevel[0].Candidates) != 0 || len(d.PoolLevel[0].Winner.Names) != 0 {
		t.Errorf("pool_near has no available member, so no candidate: %+v", d.PoolLevel[0].Candidates)
	}
	if d.Answer == nil || d.Answer.By != "local-bind" || !strings.Contains(d.Answer.Text, "return-to-dns") {
		t.Errorf("with fallback return-to-dns the empty pool ends at the local BIND: %+v", d.Answer)
	}
	if !hasNote(d, RuleFallbackNotNone) || !strings.Contains(strings.Join(d.Notes, "\n"), "pool pool_near's fallback is return-to-dns") {
		t.Errorf("pool_near's fallback should be flagged: %q", d.Notes)
	}
	if hasNote(d, RuleUnknownPool) || hasNote(&d.PoolLevel[0], RuleUnknownPool) {
		t.Errorf("the wide IP's pools are known at both levels: %q %q", d.Notes, d.PoolLevel[0].Notes)
	}

	d = decidePaste(t, strings.Replace(twoLevels, "FALLBACK", "none", 1))
	if hasNote(d, RuleFallbackNotNone) {
		t.Errorf("fallback none everywhere: nothing to flag: %q", d.Notes)
	}
	if len(d.PoolLevel) != 2 || d.PoolLevel[1].Pool != "pool_far" {
		t.Fatalf("with fallback none the wide IP passes the query to pool_far: %+v", d.PoolLevel)
	}
	far := d.PoolLevel[1]
	winnerIs(t, &far, "dc2-server:vs_far")
	if s, from, _ := candidateScore(t, &far, "dc2-server:vs_far"); s != 5 || from != 3 {
		t.Errorf("vs_far: %d from record %d, want 5 from the DC2 record (3)", s, from)
	}
	if d.Answer == nil || d.Answer.By != "topology" || d.Answer.Pool != "pool_far" || d.Answer.Member != "dc2-server:vs_far" {
		t.Errorf("answer %+v, want vs_far in pool_far by topology", d.Answer)
	}
}

func TestTopologyTMSHBadInputShowsTheExpectedShape(t *testing.T) {
	for _, tc := range []struct{ name, paste, says string }{
		{"empty", "  \n\n", "empty input"},
		{"no records", "gtm pool a /Common/P { load-balancing-mode topology }\nsource ip=10.0.0.1\n", "no gtm topology records"},
		{"region destination", "gtm region /Common/r { region-members { country PT { } } }\n" +
			"gtm topology ldns: country PT server: region /Common/r { score 5 }\nsource country=PT\n", `record 1's destination "region r" cannot be a candidate`},
		{"candidates unknown", "gtm topology ldns: country PT server: pool /Common/A { score 5 }\ncandidates X Y\nsource country=PT\n", "candidates X Y: names nothing known"},
		{"unclosed", "gtm topology ldns: country PT server: pool /Common/A {\n score 5\n", "is never closed"},
		{"not tmsh", "gtm topology ldns: country PT server: pool /Common/A { score 5 }\nhello world\n", `"hello world" is not a gtm stanza`},
		{"bad score", "gtm topology ldns: country PT server: pool /Common/A { score high }\n", `score "high": want a whole number`},
		{"bad statement", "gtm topology ldns: subnet 10.1.2.7/24 server: pool /Common/A { score 5 }\n", "record 1 (line 1).source"},
		{"down unknown", "gtm topology ldns: country PT server: pool /Common/A { score 5 }\ndown vs9\nsource country=PT\n", "down vs9: no pasted pool member"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			p, err := ParseTMSH(strings.NewReader(tc.paste))
			if err == nil {
				_, err = Decide(p, 0)
			}
			if err == nil {
				t.Fatal("accepted")
			}
			if !strings.Contains(err.Error(), tc.says) || !strings.HasSuffix(err.Error(), tmshShape) {
				t.Fatalf("error %q\nwant it to say %q and end with the expected shape", err, tc.says)
			}
		})
	}
}

func TestTopologyLooksLikeTMSH(t *testing.T) {
	for text, want := range map[string]bool{
		ExampleTMSH: true,
		"root@(bigip1)(cfg-sync Standalone)(Active)(/Common)(tmos)# list gtm topology\ngtm topology ldns: x": true,
		"# a comment\n\nsource ip=10.0.0.1\n": true,
		ExampleYAML:                           false,
		"":                                    false,
	} {
		if got := LooksLikeTMSH(text); got != want {
			t.Errorf("LooksLikeTMSH(%.40q) = %v, want %v", text, got, want)
		}
	}
}

// FuzzParseTMSH: the reader never panics, what it accepts Decide answers or refuses with the
// shape, and the records it reads, printed back in the one-line form, read the same.
func FuzzParseTMSH(f *testing.F) {
	for _, s := range []string{
		ExampleTMSH, exampleOneLine, twoLevels, longestMatchPaste,
		"gtm topology ldns: not isp \"A \\\"B\\\"\" server: not datacenter DC { }\n",
		"gtm region /C/r { region-members { not state \"US/Ohio\" { } } }\ngtm topology ldns: region r server: pool p\nsource region=r",
		"{", "}", "gtm", "source ip=", "candidates", "gtm topology ldns: server:", "\"", "# x\n",
	} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, text string) {
		p, err := ParseTMSH(strings.NewReader(text))
		if err != nil {
			if !strings.HasSuffix(err.Error(), tmshShape) {
				t.Fatalf("error without the shape: %v", err)
			}
			return
		}
		if _, err := Decide(p, 1); err != nil && !strings.HasSuffix(err.Error(), tmshShape) {
			t.Fatalf("Decide error without the shape: %v", err)
		}
		var b strings.Builder
		for _, name := range sortedKeys(p.Regions) {
			b.WriteString("gtm region " + name + " { region-members {")
			for _, m := range p.Regions[name] {
				b.WriteString(" " + quoteValue(m) + " { }")
			}
			b.WriteString(" } }\n")
		}
		for _, r := range p.Records {
			b.WriteString("gtm topology ldns: " + quoteValue(r.Source) + " server: " + quoteValue(r.Destination))
			if !r.DefaultScore {
				b.WriteString(" { score " + strconv.Itoa(r.Score) + " }")
			}
			b.WriteString("\n")
		}
		again, err := ParseTMSH(strings.NewReader(b.String()))
		if err != nil {
			t.Fatalf("%q read, but its one-line form\n%s\ndoes not: %v", text, b.String(), err)
		}
		for i := range p.Records {
			if p.Records[i].Record != again.Records[i].Record {
				t.Fatalf("record %d: %+v, one-line form reads %+v", i+1, p.Records[i].Record, again.Records[i].Record)
			}
		}
	})
}

// quoteValue prints a statement as tmsh does, quoting an ISP or state name.
func quoteValue(st Statement) string {
	if st.Kind != KindISP && st.Kind != KindState {
		return st.String()
	}
	s := ""
	if st.Not {
		s = "not "
	}
	return s + string(st.Kind) + ` "` + strings.NewReplacer(`\`, `\\`, `"`, `\"`).Replace(st.Name) + `"`
}

func TestTopologyTMSHClientSubnetFollowsGlobalSettings(t *testing.T) {
	const paste = `gtm global-settings load-balancing {
    topology-longest-match yes
    topology-prefer-edns0-client-subnet PREFER
}
gtm topology ldns: subnet 10.1.0.0/16 server: pool /Common/NEAR { score 50 }
gtm topology ldns: subnet 0.0.0.0/0 server: pool /Common/FAR { score 10 }
source ip=192.0.2.1 ecs=10.1.2.0/24
`
	d := decidePaste(t, strings.Replace(paste, "PREFER", "enabled", 1))
	winnerIs(t, d, "NEAR")
	if d.AddressFrom != fromECS {
		t.Errorf("classified %s from %s, want the client subnet", d.Address, d.AddressFrom)
	}
	d = decidePaste(t, strings.Replace(paste, "PREFER", "disabled", 1))
	winnerIs(t, d, "FAR")
	if !hasNote(d, RuleECSIgnored) {
		t.Errorf("the ignored client subnet should be noted: %q", d.Notes)
	}
}

// A paste of tmsh list gtm topology alone (no gtm region stanzas) is the common case: a record
// naming a region the paste does not define is scored, the region holding the query when the
// source line declares it, and the notes say which regions were taken as declared. Continents
// read by name as tmsh and the GUI show them.
func TestTopologyTMSHRecordsAlone(t *testing.T) {
	const records = `gtm topology ldns: region /Common/APAC server: pool /Common/ASIA { score 40 }
gtm topology ldns: region /Common/EMEA server: pool /Common/EU { score 30 }
gtm topology ldns: continent "North America" server: pool /Common/US { score 20 }
gtm topology ldns: continent Europe server: pool /Common/EU { score 10 }
`
	d := decidePaste(t, records+"source region=APAC\n")
	if s, from, ok := candidateScore(t, d, "ASIA"); !ok || s != 40 || from != 1 {
		t.Errorf("ASIA: score %d from record %d (%v), want 40 from record 1 (region APAC, declared)", s, from, ok)
	}
	if _, _, ok := candidateScore(t, d, "EU"); ok {
		t.Error("EU scored: region EMEA is neither pasted nor declared, and no continent is declared")
	}
	notes := strings.Join(d.Notes, "\n")
	if !strings.Contains(notes, "taken as declared on the source line (the query is inside them): APAC") ||
		!strings.Contains(notes, "regions not pasted nor declared on the source line: EMEA") {
		t.Errorf("notes %q: want APAC taken as declared and EMEA named as unknown", d.Notes)
	}

	if _, err := ParseTMSH(strings.NewReader(records + "source continent=Atlantis\n")); err == nil ||
		!strings.Contains(err.Error(), `continent "Atlantis" is not one of AF AN AS EU NA OC SA, nor their names`) {
		t.Errorf("source continent=Atlantis: %v, want the continent rule", err)
	}
	for _, tc := range []struct{ query, winner string }{
		{`source continent="North America"`, "US"},
		{"source continent=NA", "US"},
		{"source continent=Europe", "EU"},
	} {
		d := decidePaste(t, records+tc.query+"\n")
		if got := d.Winner.Names; len(got) != 1 || got[0] != tc.winner {
			t.Errorf("%s: winner %v, want %s\n%q", tc.query, got, tc.winner, d.Notes)
		}
	}

	// the sorted-only walk of the records alone says the same of its regions
	d = decidePaste(t, records)
	if !strings.Contains(strings.Join(d.Notes, "\n"), "regions not pasted nor declared on the source line: APAC, EMEA") {
		t.Errorf("sorted-only notes %q: want APAC and EMEA named", d.Notes)
	}

	// a region the paste defines is still checked against its definition: nothing is taken
	// as declared when it is pasted
	d = decidePaste(t, records+"gtm region /Common/APAC { region-members { country JP { } } }\nsource country=CN\n")
	if _, _, ok := candidateScore(t, d, "ASIA"); ok {
		t.Error("ASIA scored for CN: the pasted region APAC holds JP only")
	}
}

// tmsh lists a pool's members by name, each with its member-order: the pool's round-robin
// order, as a wide IP's pools go by their order. Equal top scores go round robin in that order,
// so turn 0 is the member with member-order 0, whatever its place in the paste.
func TestTopologyTMSHMembersGoRoundRobinByMemberOrder(t *testing.T) {
	d := decidePaste(t, `gtm topology ldns: subnet 10.0.0.0/8 server: datacenter /Common/DC1 { order 1 score 10 }
gtm pool a /Common/p {
    fallback-mode none
    load-balancing-mode topology
    members {
        /Common/s1:/Common/vs_a { member-order 1 }
        /Common/s1:/Common/vs_b { member-order 0 }
    }
}
gtm server /Common/s1 {
    datacenter /Common/DC1
    virtual-servers {
        /Common/vs_a { destination 192.0.2.10:80 }
        /Common/vs_b { destination 192.0.2.11:80 }
    }
}
source ip=10.1.2.7
`)
	if !d.Winner.Tie || d.Winner.Chosen != "s1:vs_b" {
		t.Errorf("turn 0 of the tie goes to %q (tied: %v), want s1:vs_b (member-order 0)", d.Winner.Chosen, d.Winner.Names)
	}
	var order []string
	for _, c := range d.Candidates {
		order = append(order, c.Name)
	}
	if want := []string{"s1:vs_b", "s1:vs_a"}; !slices.Equal(order, want) {
		t.Errorf("candidates in the order %v, want the member order %v", order, want)
	}
}

// tmsh writes an IPv6 virtual server's destination as ADDRESS.PORT (2001:db8::10.80), an IPv4
// one as ADDRESS:PORT: both are read, and the IPv6 member's address is matched by subnet.
func TestTopologyTMSHReadsIPv6VirtualServerDestinations(t *testing.T) {
	d := decidePaste(t, `gtm topology ldns: subnet 10.0.0.0/8 server: subnet 2001:db8::/64 { order 1 score 30 }
gtm topology ldns: subnet 10.0.0.0/8 server: subnet 192.0.2.0/24 { order 2 score 20 }
gtm pool a /Common/p {
    fallback-mode none
    load-balancing-mode topology
    members {
        /Common/s1:/Common/vs4 { member-order 0 }
        /Common/s1:/Common/vs6 { member-order 1 }
    }
}
gtm server /Common/s1 {
    datacenter /Common/DC1
    virtual-servers {
        /Common/vs4 { destination 192.0.2.10:80 }
        /Common/vs6 { destination 2001:db8::10.80 }
    }
}
source ip=10.1.2.7
`)
	winnerIs(t, d, "s1:vs6")
}

// A disabled pool (a lone "disabled" in its stanza) has no member that answers, as though each
// were down: with fallback none the wide IP passes the query to its next pool. Read past, the
// flag left the pool answering.
func TestTopologyTMSHADisabledPoolHasNoAvailableMember(t *testing.T) {
	paste := strings.Replace(strings.Replace(twoLevels, "FALLBACK", "none", 1), "down vs_near2\n", "", 1)
	if d := decidePaste(t, paste); d.Answer == nil || d.Answer.Pool != "pool_near" {
		t.Fatalf("pool_near enabled, vs_near2 up: answer %+v, want pool_near", d.Answer)
	}
	paste = strings.Replace(paste, "gtm pool a /Common/pool_near {\n", "gtm pool a /Common/pool_near {\n    disabled\n", 1)
	d := decidePaste(t, paste)
	if d.Answer == nil || d.Answer.Pool != "pool_far" || d.Answer.Member != "dc2-server:vs_far" {
		t.Fatalf("pool_near disabled: answer %+v, want vs_far in pool_far (pool_near has no available member)", d.Answer)
	}
}
