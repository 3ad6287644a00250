package topology

import (
	"net/netip"
	"strings"
	"testing"
)

// rec builds a record from tmsh statements or fails the test.
func rec(t *testing.T, source, destination string, score int) Record {
	t.Helper()
	src, err := parseStatement(source)
	if err != nil {
		t.Fatal(err)
	}
	dst, err := parseStatement(destination)
	if err != nil {
		t.Fatal(err)
	}
	return Record{Source: src, Destination: dst, Score: score}
}

// sortedIndexes is the file indexes of s's records in walk order.
func sortedIndexes(s *Set) []int {
	var out []int
	for _, r := range s.Sorted() {
		out = append(out, r.Index)
	}
	return out
}

// Each row is one ordering rule, with the record that must come first (upper) and the one that
// must come second (lower). Both file orders are tried: the rule, not the file, decides.
func TestLongestMatchOrdersEachRuleWhicheverWayTheFileLists(t *testing.T) {
	type side struct {
		source, destination string
		score               int
	}
	for _, tc := range []struct {
		name         string
		upper, lower side
	}{
		// Source hierarchy.
		{"source /32 above /24", side{"subnet 10.1.2.7/32", "pool P", 1}, side{"subnet 10.1.2.0/24", "pool P", 1}},
		{"source /24 above /16", side{"subnet 10.1.2.0/24", "pool P", 1}, side{"subnet 10.1.0.0/16", "pool P", 1}},
		{"source IP subnet above region", side{"subnet 10.0.0.0/8", "pool P", 1}, side{"region r", "pool P", 1}},
		{"a region is one entity: below a /16 though it holds a /32", side{"subnet 10.1.0.0/16", "pool P", 1}, side{"region holds-32", "pool P", 1}},
		{"source region above ISP", side{"region r", "pool P", 1}, side{"isp ExampleNet", "pool P", 1}},
		{"source ISP above country", side{"isp ExampleNet", "pool P", 1}, side{"country PT", "pool P", 1}},
		{"source country above continent", side{"country PT", "pool P", 1}, side{"continent EU", "pool P", 1}},
		{"the source decides before the destination", side{"subnet 10.1.2.0/24", "continent EU", 1}, side{"region r", "subnet 10.1.2.7/32", 1}},
		{"the source decides before the score", side{"country PT", "pool P", 1}, side{"continent EU", "pool P", 100}},

		// Destination hierarchy, sources tied.
		{"destination /32 above /24", side{"country PT", "subnet 192.0.2.1/32", 1}, side{"country PT", "subnet 192.0.2.0/24", 1}},
		{"destination IP subnet above pool", side{"country PT", "subnet 192.0.2.0/24", 1}, side{"country PT", "pool P", 1}},
		{"destination pool above region", side{"country PT", "pool P", 1}, side{"country PT", "region r", 1}},
		{"destination data center above region", side{"country PT", "datacenter DC1", 1}, side{"country PT", "region r", 1}},
		{"destination region above ISP", side{"country PT", "region r", 1}, side{"country PT", "isp ExampleNet", 1}},
		{"destination ISP above country", side{"country PT", "isp ExampleNet", 1}, side{"country PT", "country ES", 1}},
		{"destination country above continent", side{"country PT", "country ES", 1}, side{"country PT", "continent EU", 1}},
		{"the destination decides before the score", side{"country PT", "pool P", 1}, side{"country PT", "region r", 100}},

		// Weight, last key: higher first (assumed; see compareRecords).
		{"higher score first when source and destination tie", side{"subnet 10.1.2.0/24", "pool P", 40}, side{"subnet 10.1.2.0/24", "pool Q", 20}},

		// Groups (K10721).
		{"plain continent above server-side negation of a /32", side{"continent EU", "pool P", 1}, side{"subnet 10.1.2.7/32", "not pool P", 1}},
		{"server-side negation above LDNS-side negation", side{"continent EU", "not pool P", 1}, side{"not subnet 10.1.2.7/32", "pool P", 1}},
		{"LDNS-side negation above wildcard", side{"not continent EU", "pool P", 1}, side{"subnet 0.0.0.0/0", "pool P", 100}},
		{"plain above wildcard whatever the score", side{"continent EU", "pool P", 1}, side{"subnet 0.0.0.0/0", "pool P", 100}},
		{"IPv6 ::/0 is a wildcard too", side{"continent EU", "pool P", 1}, side{"subnet ::/0", "pool P", 100}},
		{"a negated /0 is an LDNS-side negation, not a wildcard", side{"not subnet 0.0.0.0/0", "pool P", 1}, side{"subnet 0.0.0.0/0", "pool P", 1}},
		{"the hierarchy still orders within the negations", side{"not subnet 10.1.2.0/24", "pool P", 1}, side{"not country ES", "pool P", 1}},
		{"the destination orders the wildcards", side{"subnet 0.0.0.0/0", "pool P", 1}, side{"subnet 0.0.0.0/0", "region r", 100}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			upper := rec(t, tc.upper.source, tc.upper.destination, tc.upper.score)
			lower := rec(t, tc.lower.source, tc.lower.destination, tc.lower.score)
			for _, records := range [][]Record{{upper, lower}, {lower, upper}} {
				s := &Set{LongestMatch: true, Records: records, Regions: map[string][]Statement{
					"r":        {{Kind: KindCountry, Name: "PT"}},
					"holds-32": {{Kind: KindSubnet, Subnet: netip.MustParsePrefix("10.1.2.7/32")}},
				}}
				got := s.Sorted()
				if got[0].Record != upper || got[1].Record != lower {
					t.Fatalf("file order %s, %s: walked %s, then %s", records[0], records[1], got[0].Record, got[1].Record)
				}
				if got[1].Tie || got[1].Why == "" {
					t.Fatalf("decided by a documented key, so no tie and a reason: %+v", got[1])
				}
			}
		})
	}
}

// Two records equal on every documented key stay in file order, in both file orders, and are
// marked as a tie.
func TestLongestMatchKeepsFileOrderOnFullTies(t *testing.T) {
	for _, tc := range []struct {
		name string
		a, b [2]string
	}{
		{"pool and data center share a rank", [2]string{"country PT", "pool P"}, [2]string{"country PT", "datacenter DC1"}},
		{"two countries", [2]string{"country PT", "pool P"}, [2]string{"country ES", "pool Q"}},
		{"two /24s", [2]string{"subnet 10.1.2.0/24", "pool P"}, [2]string{"subnet 10.1.3.0/24", "pool P"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			a, b := rec(t, tc.a[0], tc.a[1], 10), rec(t, tc.b[0], tc.b[1], 10)
			for _, records := range [][]Record{{a, b}, {b, a}} {
				got := (&Set{LongestMatch: true, Records: records}).Sorted()
				if got[0].Index != 0 || got[1].Index != 1 {
					t.Fatalf("a full tie left file order: %+v", got)
				}
				if !got[1].Tie || !strings.Contains(got[1].Why, "file order kept") {
					t.Fatalf("a full tie is not marked: %+v", got[1])
				}
			}
		})
	}
}

func TestLongestMatchOffWalksTheFileOrder(t *testing.T) {
	records := []Record{
		rec(t, "subnet 0.0.0.0/0", "pool P", 1),
		rec(t, "continent EU", "pool P", 1),
		rec(t, "subnet 10.1.2.7/32", "pool P", 1),
	}
	if got := sortedIndexes(&Set{LongestMatch: false, Records: records}); got[0] != 0 || got[1] != 1 || got[2] != 2 {
		t.Fatalf("longest match off reordered: %v", got)
	}
	if got := sortedIndexes(&Set{LongestMatch: true, Records: records}); got[0] != 2 || got[1] != 1 || got[2] != 0 {
		t.Fatalf("longest match on: %v, want [2 1 0]", got)
	}
}

func TestSortedExplainsThePlaceInWords(t *testing.T) {
	got := Example().Sorted()
	for i, want := range []struct{ key, why string }{
		{"source IP subnet /24", ""},
		{"user-defined region (rank 3 of 6, one entity whatever its members)", "source user-defined region sorts below IP subnet /24 (records[2])"},
		{"wildcard (always last)", "wildcards go to the very end"},
	} {
		if !strings.Contains(got[i].Key, want.key) || !strings.Contains(got[i].Why, want.why) {
			t.Errorf("position %d: key %q why %q; want %q and %q", i+1, got[i].Key, got[i].Why, want.key, want.why)
		}
	}
	weight := (&Set{LongestMatch: true, Records: []Record{
		rec(t, "country PT", "pool P", 20), rec(t, "country PT", "pool Q", 40),
	}}).Sorted()
	if !strings.Contains(weight[1].Why, "higher weight first: assumed") {
		t.Errorf("the weight direction is not said to be assumed: %q", weight[1].Why)
	}
}
