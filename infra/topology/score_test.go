package topology

import (
	"net/netip"
	"strings"
	"testing"
)

func query(ldns string) Query { return Query{LDNS: netip.MustParseAddr(ldns)} }

// scoreOf is what the result gave candidate name: its score and the record it came from, or
// -1, -1 when it has none.
func scoreOf(t *testing.T, r Result, name string) (score, record int) {
	t.Helper()
	for _, c := range r.Candidates {
		if c.Name == name {
			if !c.Scored {
				return -1, -1
			}
			return c.Score, c.Record
		}
	}
	t.Fatalf("no candidate %s in %+v", name, r.Candidates)
	return 0, 0
}

// rules are the warning rules of r, in order.
func rules(r Result) []string {
	var out []string
	for _, w := range r.Warnings {
		out = append(out, w.Rule)
	}
	return out
}

func hasRule(r Result, rule string) bool {
	for _, w := range r.Warnings {
		if w.Rule == rule {
			return true
		}
	}
	return false
}

// The worked example: the /24 gives POOL1 30, the region gives POOL2 20, the wildcard's 40
// for POOL2 is shadowed, and POOL1 wins 30 to 20 though a 40 is in the list.
func TestWorkedExampleRegionShadowsTheWildcardAndPool1Wins(t *testing.T) {
	r := Example().Score(ExampleQuery(), 0)
	if r.Winner != "POOL1" || r.WinnerScore != 30 {
		t.Fatalf("winner %s %d, want POOL1 30", r.Winner, r.WinnerScore)
	}
	if s, rec := scoreOf(t, r, "POOL1"); s != 30 || rec != 2 {
		t.Errorf("POOL1: %d from records[%d], want 30 from records[2] (the /24)", s, rec)
	}
	if s, rec := scoreOf(t, r, "POOL2"); s != 20 || rec != 1 {
		t.Errorf("POOL2: %d from records[%d], want 20 from records[1] (the region)", s, rec)
	}
	want := shadow{Record: 0, Score: 40, Candidate: "POOL2", By: 1, ByScore: 20}
	if len(r.Shadowed) != 1 || r.Shadowed[0] != want {
		t.Errorf("shadowed: %+v, want only %+v", r.Shadowed, want)
	}
	if got := [3]int{r.Walk[0].Index, r.Walk[1].Index, r.Walk[2].Index}; got != [3]int{2, 1, 0} {
		t.Errorf("walk order %v, want subnet (2), region (1), wildcard (0)", got)
	}
	if r.Walk[1].Via != "subnet 10.1.0.0/16" {
		t.Errorf("region matched via %q, want the /16", r.Walk[1].Via)
	}
	if len(r.Warnings) != 0 {
		t.Errorf("warnings: %v", r.Warnings)
	}
}

// Delete the region record and POOL2 takes its score from the wildcard: 40 beats 30.
func TestWorkedExampleWithoutTheRegionFlipsToPool2(t *testing.T) {
	r := ExampleWithoutRegion().Score(ExampleQuery(), 0)
	if r.Winner != "POOL2" || r.WinnerScore != 40 {
		t.Fatalf("winner %s %d, want POOL2 40", r.Winner, r.WinnerScore)
	}
	if s, _ := scoreOf(t, r, "POOL1"); s != 30 {
		t.Errorf("POOL1 %d, want 30", s)
	}
	if len(r.Shadowed) != 0 {
		t.Errorf("nothing is shadowed any more: %+v", r.Shadowed)
	}
}

// Specificity only decides which record scores each candidate; then the scores decide.
func TestWildcardWorth100BeatsSlash32Worth5(t *testing.T) {
	s := parse(t, `
pools: [{name: POOL1}, {name: POOL2}]
records:
  - {source: "subnet 10.1.2.7/32", destination: "pool POOL1", score: 5}
  - {source: "subnet 0.0.0.0/0", destination: "pool POOL2", score: 100}
`)
	r := s.Score(query("10.1.2.7"), 0)
	if r.Winner != "POOL2" || r.WinnerScore != 100 {
		t.Fatalf("winner %s %d, want POOL2 100", r.Winner, r.WinnerScore)
	}
	if sc, rec := scoreOf(t, r, "POOL1"); sc != 5 || rec != 0 {
		t.Fatalf("POOL1: %d from records[%d], want 5 from records[0]", sc, rec)
	}
}

// The first matching record in the walk speaks for a candidate; a later one with a higher
// score is shadowed, and turning Longest Match off (file order) changes which one speaks.
func TestFirstMatchInTheWalkScoresTheCandidate(t *testing.T) {
	const yaml = `
pools: [{name: POOL1}, {name: POOL2}]
records:
  - {source: "subnet 10.1.0.0/16", destination: "pool POOL1", score: 90}
  - {source: "subnet 10.1.2.0/24", destination: "pool POOL1", score: 10}
  - {source: "subnet 10.1.0.0/16", destination: "pool POOL2", score: 50}
`
	for _, tc := range []struct {
		longestMatch bool
		pool1, by    int
		winner       string
	}{
		{true, 10, 1, "POOL2"}, // the /24 sorts first: POOL1 gets 10, the /16's 90 is shadowed
		{false, 90, 0, "POOL1"},
	} {
		s := parse(t, yaml)
		s.LongestMatch = tc.longestMatch
		r := s.Score(query("10.1.2.7"), 0)
		if sc, rec := scoreOf(t, r, "POOL1"); sc != tc.pool1 || rec != tc.by {
			t.Errorf("longest match %v: POOL1 %d from records[%d], want %d from records[%d]", tc.longestMatch, sc, rec, tc.pool1, tc.by)
		}
		if r.Winner != tc.winner {
			t.Errorf("longest match %v: winner %s, want %s", tc.longestMatch, r.Winner, tc.winner)
		}
		if len(r.Shadowed) != 1 || r.Shadowed[0].Candidate != "POOL1" || r.Shadowed[0].By != tc.by {
			t.Errorf("longest match %v: shadowed %+v", tc.longestMatch, r.Shadowed)
		}
	}
}

// A region sorts as a region: holding a /32 does not lift it above a /16 subnet record.
func TestRegionDoesNotInheritTheSpecificityOfItsSubnet(t *testing.T) {
	s := parse(t, `
regions: {exact: ["subnet 10.1.2.7/32"]}
pools: [{name: POOL1}]
records:
  - {source: "region exact", destination: "pool POOL1", score: 50}
  - {source: "subnet 10.1.0.0/16", destination: "pool POOL1", score: 10}
`)
	r := s.Score(query("10.1.2.7"), 0)
	if sc, rec := scoreOf(t, r, "POOL1"); sc != 10 || rec != 1 {
		t.Fatalf("POOL1 %d from records[%d], want 10 from the /16 (records[1])", sc, rec)
	}
	if len(r.Shadowed) != 1 || r.Shadowed[0].Record != 0 {
		t.Fatalf("the region record should be shadowed: %+v", r.Shadowed)
	}
}

func TestEqualTopScoresGoRoundRobinInFileOrder(t *testing.T) {
	s := parse(t, `
pools: [{name: POOL1}, {name: POOL2}, {name: POOL3}]
records:
  - {source: "subnet 10.0.0.0/8", destination: "pool POOL2", score: 30}
  - {source: "subnet 10.0.0.0/8", destination: "pool POOL1", score: 30}
  - {source: "subnet 10.0.0.0/8", destination: "pool POOL3", score: 29}
`)
	for rr, want := range []string{"POOL1", "POOL2", "POOL1", "POOL2"} {
		r := s.Score(query("10.1.2.7"), uint64(rr))
		if r.Winner != want || len(r.Tied) != 2 || r.Tied[0] != "POOL1" || r.Tied[1] != "POOL2" {
			t.Errorf("rr %d: winner %s tied %v, want %s of [POOL1 POOL2]", rr, r.Winner, r.Tied, want)
		}
	}
	if r := s.Score(query("10.1.2.7"), 1<<63+1); r.Winner != "POOL2" {
		t.Errorf("a large counter: winner %s", r.Winner)
	}
}

func TestNoRecordMatchedMeansNoTopologyMatch(t *testing.T) {
	s := parse(t, `
pools: [{name: POOL1}]
records: [{source: "subnet 10.0.0.0/8", destination: "pool POOL1", score: 30}]
`)
	for _, q := range []Query{query("192.0.2.1"), query("2001:db8::1"), {}} {
		r := s.Score(q, 0)
		if !r.NoMatch || r.Winner != "" {
			t.Errorf("%v: no match %v, winner %q", q.LDNS, r.NoMatch, r.Winner)
		}
	}
	if r := s.Score(query("::ffff:10.1.2.7"), 0); r.Winner != "POOL1" {
		t.Errorf("an IPv4-mapped LDNS is its IPv4 address: winner %q", r.Winner)
	}
}

// A candidate no record matched has no score and cannot win, even against a score of 0.
func TestUnscoredCandidateCannotWinEvenAgainstZero(t *testing.T) {
	s := parse(t, `
pools: [{name: POOL1}, {name: POOL2}]
records: [{source: "subnet 10.0.0.0/8", destination: "pool POOL1", score: 0}]
`)
	for rr := range uint64(3) {
		r := s.Score(query("10.1.2.7"), rr)
		if r.Winner != "POOL1" || r.NoMatch {
			t.Fatalf("rr %d: winner %q", rr, r.Winner)
		}
		if sc, _ := scoreOf(t, r, "POOL2"); sc != -1 {
			t.Fatalf("POOL2 scored %d", sc)
		}
		if !hasRule(r, RuleZeroScore) {
			t.Fatalf("a zero-score winner is not flagged: %v", rules(r))
		}
	}
}

const geoYAML = `
geo:
  - {subnet: 10.0.0.0/8, country: PT, continent: EU, isp: ExampleNet}
  - {subnet: 10.9.0.0/16, country: ES, continent: EU}
  - {subnet: 192.0.2.0/24, country: US, continent: NA}
`

func TestSourcesClassifyByTheLongestGeoEntryAndRegions(t *testing.T) {
	s := parse(t, geoYAML+`
regions:
  europe: ["region iberia", "continent AS"]
  iberia: ["country ES", "country PT"]
pools: [{name: P}]
records: [{source: "region europe", destination: "pool P", score: 7}]
`)
	for _, tc := range []struct {
		ldns, via string
		match     bool
	}{
		{"10.1.2.7", "region iberia > country PT", true},
		{"10.9.1.1", "region iberia > country ES", true}, // the /16 (ES), not the /8 (PT)
		{"192.0.2.1", "", false},
		{"198.51.100.1", "", false}, // in no geo entry
	} {
		r := s.Score(query(tc.ldns), 0)
		if r.Walk[0].SourceMatches != tc.match || r.Walk[0].Via != tc.via {
			t.Errorf("%s: matches %v via %q, want %v via %q", tc.ldns, r.Walk[0].SourceMatches, r.Walk[0].Via, tc.match, tc.via)
		}
	}
	if r := s.Score(query("10.9.1.1"), 0); r.Geo == nil || r.Geo.Country != "ES" {
		t.Errorf("classification: %+v", r.Geo)
	}
}

func TestNegatedSourceMatchesEverythingElse(t *testing.T) {
	s := parse(t, geoYAML+`
pools: [{name: P}]
records: [{source: "not country ES", destination: "pool P", score: 7}]
`)
	for ldns, want := range map[string]bool{"10.1.2.7": true, "10.9.1.1": false, "198.51.100.1": true} {
		if r := s.Score(query(ldns), 0); r.Walk[0].SourceMatches != want {
			t.Errorf("%s: not country ES matches = %v, want %v", ldns, !want, want)
		}
	}
}

func TestEDNS0ClientSubnetIsClassifiedOnlyWhenPreferred(t *testing.T) {
	const yaml = geoYAML + `
pools: [{name: PT}, {name: ES}]
records:
  - {source: "country PT", destination: "pool PT", score: 10}
  - {source: "country ES", destination: "pool ES", score: 10}
`
	ecs := netip.MustParsePrefix("10.9.0.0/24")
	for _, tc := range []struct {
		name   string
		prefer bool
		q      Query
		winner string
		from   string
		warned bool
	}{
		{"preferred and present: the client subnet", true, Query{LDNS: netip.MustParseAddr("10.1.2.7"), ECS: ecs}, "ES", fromECS, false},
		{"preferred but absent: the LDNS", true, query("10.1.2.7"), "PT", fromLDNS, false},
		{"present but not preferred: the LDNS, flagged", false, Query{LDNS: netip.MustParseAddr("10.1.2.7"), ECS: ecs}, "PT", fromLDNS, true},
		// RFC 7871: a source prefix length of 0 carries no client information, not "0.0.0.0"
		{"preferred but /0: the LDNS, flagged", true, Query{LDNS: netip.MustParseAddr("10.1.2.7"), ECS: netip.MustParsePrefix("0.0.0.0/0")}, "PT", fromLDNS, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s := parse(t, yaml)
			s.PreferECS = tc.prefer
			r := s.Score(tc.q, 0)
			if r.Winner != tc.winner || r.AddressFrom != tc.from || (hasRule(r, RuleECSIgnored) || hasRule(r, RuleECSEmpty)) != tc.warned {
				t.Fatalf("winner %s from %s, warnings %v", r.Winner, r.AddressFrom, rules(r))
			}
		})
	}
}

func TestPoolLevelScoresMembersByPoolDataCenterSubnetAndGeo(t *testing.T) {
	s := parse(t, geoYAML+`
level: pool
pool: WEB
pools:
  - name: WEB
    load_balancing: topology
    fallback: none
    members:
      - {name: vs-lisbon, address: 10.1.0.10, datacenter: LIS}
      - {name: vs-madrid, address: 10.9.0.10, datacenter: MAD}
      - {name: vs-nyc, address: 192.0.2.10, datacenter: NYC}
  - {name: OTHER, members: [{name: vs-other, address: 10.1.0.99}]}
records:
  - {source: "country PT", destination: "datacenter MAD", score: 20}
  - {source: "country PT", destination: "country PT", score: 30}
  - {source: "country PT", destination: "subnet 192.0.2.0/24", score: 5}
  - {source: "country PT", destination: "pool OTHER", score: 100}
`)
	r := s.Score(query("10.1.2.7"), 0)
	for name, want := range map[string]int{"vs-lisbon": 30, "vs-madrid": 20, "vs-nyc": 5} {
		if sc, _ := scoreOf(t, r, name); sc != want {
			t.Errorf("%s: %d, want %d", name, sc, want)
		}
	}
	if len(r.Candidates) != 3 {
		t.Errorf("only pool WEB's members compete: %+v", r.Candidates)
	}
	if r.Winner != "vs-lisbon" || len(r.Warnings) != 0 {
		t.Errorf("winner %s, warnings %v", r.Winner, r.Warnings)
	}
}

func TestDataCenterDestinationNeverMatchesAtWideIPLevelAndIsFlagged(t *testing.T) {
	s := parse(t, `
pools: [{name: POOL1, members: [{name: vs1, address: 192.0.2.1, datacenter: DC1}]}]
records:
  - {source: "subnet 10.0.0.0/8", destination: "datacenter DC1", score: 50}
  - {source: "subnet 10.0.0.0/8", destination: "not datacenter DC2", score: 40}
  - {source: "subnet 10.0.0.0/8", destination: "subnet 192.0.2.0/24", score: 30}
  - {source: "subnet 10.0.0.0/8", destination: "region dcs", score: 20}
  - {source: "subnet 10.0.0.0/8", destination: "region outer", score: 10}
regions:
  dcs: ["datacenter DC1"]
  outer: ["region inner"]
  inner: ["pool POOL2"]
`)
	r := s.Score(query("10.1.2.7"), 0)
	if !r.NoMatch {
		t.Fatalf("a data-center or subnet destination scored a pool: %+v", r.Candidates)
	}
	var dc, other int
	for _, w := range r.Warnings {
		switch w.Rule {
		case RuleDataCenterAtWideIP:
			dc++
			if !strings.Contains(w.Text, "applies at pool level") {
				t.Errorf("warning does not say where it applies: %s", w.Text)
			}
		case RuleDestinationAtWideIP:
			other++
		}
	}
	if dc != 2 || other != 2 {
		t.Fatalf("want 2 data-center warnings, 1 for the subnet and 1 for the region without a pool: %v", rules(r))
	}
}

func TestFallbackMustBeNoneWhenTopologyRunsAtBothLevels(t *testing.T) {
	s := parse(t, `
pools:
  - {name: BOTH-BAD, load_balancing: topology, fallback: return-to-dns}
  - {name: BOTH-OK, load_balancing: topology, fallback: none}
  - {name: WIDEIP-ONLY, load_balancing: round-robin, fallback: return-to-dns}
records: [{source: "subnet 10.0.0.0/8", destination: "pool BOTH-OK", score: 1}]
`)
	var got []string
	for _, w := range s.Warnings() {
		if w.Rule == RuleFallbackNotNone {
			got = append(got, w.Text)
		}
	}
	if len(got) != 1 || !strings.Contains(got[0], "pool BOTH-BAD's fallback is return-to-dns") {
		t.Fatalf("fallback warnings: %q", got)
	}

	// At pool level with a wide IP that does not use topology, one level only: no warning.
	s = parse(t, `
level: pool
wideip_load_balancing: round-robin
pools: [{name: P, load_balancing: topology, fallback: return-to-dns, members: [{name: vs1, address: 192.0.2.1}]}]
records: [{source: "subnet 10.0.0.0/8", destination: "pool P", score: 1}]
`)
	if w := s.Warnings(); len(w) != 0 {
		t.Fatalf("topology at one level: %v", w)
	}
}

// A shadowing decided only by the weight, or only by the file order, is flagged; one decided
// by a documented key is not (the worked example has no warning at all).
func TestShadowingNotDecidedByTheDocumentedKeysIsFlagged(t *testing.T) {
	for _, tc := range []struct {
		name      string
		a, b      string
		rule      string
		mentioned string
	}{
		{"weight alone", "20", "40", RuleWeightDirection, "POOL1 would score 20"},
		{"full tie", "30", "30", RuleTieFileOrder, "only their order in the file decided"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s := parse(t, `
regions: {a: ["subnet 10.0.0.0/8"], b: ["subnet 10.1.0.0/16"]}
pools: [{name: POOL1}]
records:
  - {source: "region a", destination: "pool POOL1", score: `+tc.a+`}
  - {source: "region b", destination: "pool POOL1", score: `+tc.b+`}
`)
			r := s.Score(query("10.1.2.7"), 0)
			if len(r.Warnings) != 1 || r.Warnings[0].Rule != tc.rule || !strings.Contains(r.Warnings[0].Text, tc.mentioned) {
				t.Fatalf("warnings %v, want one %s saying %q", r.Warnings, tc.rule, tc.mentioned)
			}
			s.LongestMatch = false
			if r := s.Score(query("10.1.2.7"), 0); len(r.Warnings) != 0 {
				t.Fatalf("with longest match off the file order is the user's: %v", r.Warnings)
			}
		})
	}
}

func TestSetWarningsFlagWhatTheSourcesDoNotPlace(t *testing.T) {
	s := parse(t, geoYAML+`
pools: [{name: P}]
records:
  - {source: "not country ES", destination: "not pool P", score: 1}
  - {source: "subnet 0.0.0.0/0", destination: "not pool P", score: 1}
  - {source: "country FR", destination: "pool P", score: 1}
  - {source: "not subnet 0.0.0.0/0", destination: "pool P", score: 1}
  - {source: "country PT", destination: "pool TYPO"}
  - {source: "not country FR", destination: "pool P", score: 1}
`)
	got := map[string]int{}
	for _, w := range s.Warnings() {
		got[w.Rule]++
	}
	want := map[string]int{RuleNegationUnconfirmed: 2, RuleNeverMatches: 2, RuleUnknownPool: 1, RuleDefaultScore: 1}
	for rule, n := range want {
		if got[rule] != n {
			t.Errorf("%s: %d warnings, want %d (all: %v)", rule, got[rule], n, got)
		}
	}
	if len(got) != len(want) {
		t.Errorf("unexpected rules: %v", got)
	}
}

func TestRegionDestinationMatchesItsPoolsAtWideIPLevel(t *testing.T) {
	s := parse(t, `
regions: {primary: ["region inner"], inner: ["pool POOL2", "datacenter DC1"]}
pools: [{name: POOL1}, {name: POOL2}]
records:
  - {source: "subnet 10.0.0.0/8", destination: "region primary", score: 20}
  - {source: "subnet 10.0.0.0/8", destination: "not region primary", score: 10}
`)
	r := s.Score(query("10.1.2.7"), 0)
	if p1, _ := scoreOf(t, r, "POOL1"); p1 != 10 {
		t.Errorf("POOL1 (not in the region) %d, want 10 from the negated record", p1)
	}
	if p2, _ := scoreOf(t, r, "POOL2"); p2 != 20 || r.Winner != "POOL2" {
		t.Errorf("POOL2 (in the region) %d, winner %s", p2, r.Winner)
	}
}

// At wide-IP level a region matches a pool only through a pool member of the region: a region
// whose members are all negated statements of other kinds (here "not country ES") holds no
// pool, so, like "not country ES" as a destination of its own, it scores no pool, negated or
// not, and the set says so.
func TestRegionOfNegatedNonPoolMembersScoresNoPoolAtWideIPLevel(t *testing.T) {
	s := parse(t, `
regions: {not-spain: ["not country ES"]}
geo: [{subnet: 10.0.0.0/8, country: PT}]
pools: [{name: POOL1}, {name: POOL2}]
records:
  - {source: "subnet 10.0.0.0/8", destination: "region not-spain", score: 100}
  - {source: "subnet 10.0.0.0/8", destination: "pool POOL2", score: 50}
  - {source: "subnet 10.0.0.0/8", destination: "not region not-spain", score: 200}
`)
	r := s.Score(query("10.1.2.7"), 0)
	for _, c := range r.Candidates {
		if c.Record != 1 && c.Record != -1 {
			t.Errorf("%s scored %d by records[%d] (region not-spain, which holds no pool)", c.Name, c.Score, c.Record)
		}
	}
	if r.Winner != "POOL2" {
		t.Errorf("winner %s (score %d), want POOL2 with 50", r.Winner, r.WinnerScore)
	}
	if !hasRule(r, RuleDestinationAtWideIP) {
		t.Errorf("no %s warning for a region that holds no pool; warnings: %v", RuleDestinationAtWideIP, r.Warnings)
	}
}

// An ISP or a state is a name: a record that writes it in other case than the geo table is the
// same ISP (it silently matched nothing, and the query fell to a lower record).
func TestISPAndStateNamesMatchWhateverTheirCase(t *testing.T) {
	s := parse(t, `
geo:
  - {subnet: 10.0.0.0/8, country: US, continent: NA, isp: ExampleNet, state: CA}
pools: [{name: NET}, {name: STATE}, {name: US}]
records:
  - {source: "isp examplenet", destination: "pool NET", score: 30}
  - {source: "state ca", destination: "pool STATE", score: 20}
  - {source: "country US", destination: "pool US", score: 10}
`)
	r := s.Score(query("10.1.2.7"), 0)
	if r.Winner != "NET" {
		t.Fatalf("winner %s, want NET (isp examplenet is the geo table's ExampleNet)", r.Winner)
	}
	for _, c := range r.Candidates {
		if c.Name == "STATE" && c.Score != 20 {
			t.Errorf("pool STATE scored %d, want 20 (state ca is the geo table's CA)", c.Score)
		}
	}
}
