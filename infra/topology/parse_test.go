package topology

import (
	"net/netip"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"go.yaml.in/yaml/v3"
)

// parse reads a set from YAML or fails the test.
func parse(t *testing.T, yaml string) *Set {
	t.Helper()
	s, err := Parse(strings.NewReader(yaml))
	if err != nil {
		t.Fatalf("Parse: %v\n%s", err, yaml)
	}
	return s
}

func TestParseAppliesTheDefaults(t *testing.T) {
	s := parse(t, `
pools: [{name: POOL1}]
records:
  - {source: "subnet 10.1.2.0/24", destination: "pool POOL1"}
`)
	if !s.LongestMatch || s.PreferECS || s.Level != LevelWideIP || s.WideIPLoadBalancing != "topology" {
		t.Fatalf("options: %+v", s)
	}
	if p := s.Pools[0]; p.LoadBalancing != "round-robin" || p.Fallback != "return-to-dns" {
		t.Fatalf("pool defaults: %+v", p)
	}
	if r := s.Records[0]; r.Score != 1 || !r.DefaultScore {
		t.Fatalf("a record without a score weighs 1: %+v", r)
	}
}

func TestParseLongestMatchFalseIsKept(t *testing.T) {
	s := parse(t, "longest_match: false\npools: [{name: P}]\nrecords: [{source: subnet 10.0.0.0/8, destination: pool P, score: 0}]\n")
	if s.LongestMatch {
		t.Fatal("longest_match: false read as true")
	}
	if r := s.Records[0]; r.Score != 0 || r.DefaultScore {
		t.Fatalf("an explicit score 0 is not the default: %+v", r)
	}
}

func TestParseRefusesUnknownKeys(t *testing.T) {
	_, err := Parse(strings.NewReader("pools: [{name: P, fallbak: none}]\nrecords: [{source: subnet 10.0.0.0/8, destination: pool P}]\n"))
	if err == nil || !strings.Contains(err.Error(), "fallbak") {
		t.Fatalf("unknown key accepted: %v", err)
	}
}

func TestParseRefusesEmptyInput(t *testing.T) {
	if _, err := Parse(strings.NewReader("")); err == nil || !strings.Contains(err.Error(), "empty") {
		t.Fatalf("empty file: %v", err)
	}
}

// A topology file is one YAML document: a second one (after ---) is refused, naming where it
// starts, not dropped with its records; so is a first document followed by broken YAML.
func TestParseRefusesASecondYAMLDocument(t *testing.T) {
	const first = "pools: [{name: POOL1}, {name: POOL2}]\nrecords:\n  - {source: \"subnet 10.0.0.0/8\", destination: \"pool POOL1\", score: 10}\n"
	for _, tc := range []struct{ name, in, want string }{
		{"more records", first + "---\nrecords:\n  - {source: \"subnet 10.1.2.0/24\", destination: \"pool POOL2\", score: 90}\n",
			"a second YAML document starts at line 4 (after ---): a topology file is one YAML document"},
		{"an empty one", first + "---\n", "a second YAML document starts at line 4"},
		{"broken YAML after it", first + "---\nrecords: [\n", "after the first document: yaml: line 5"},
		{"with a type error in the first", "pools: [{name: P}]\nrecords: 3\n---\nrecords: []\n", "a second YAML document starts at line 3"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s, err := Parse(strings.NewReader(tc.in))
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Errorf("error %v, want one saying %q", err, tc.want)
				if err == nil {
					t.Errorf("%d records parsed: the second document was dropped", len(s.Records))
				}
			}
		})
	}
	if _, err := Parse(strings.NewReader("---\n" + first + "...\n")); err != nil {
		t.Errorf("one document between --- and ... refused: %v", err)
	}
}

// FuzzParse: Parse never panics, and YAML with more than one document is never accepted.
func FuzzParse(f *testing.F) {
	for _, s := range []string{
		ExampleYAML, "", "---\n", "pools: [{name: P}]\nrecords: [{source: subnet 10.0.0.0/8, destination: pool P}]\n",
		"pools: [{name: P}]\nrecords: [{source: subnet 10.0.0.0/8, destination: pool P}]\n---\nrecords: []\n",
		"pools: [{name: P}]\nrecords: [{source: subnet 10.0.0.0/8, destination: pool P}]\n...\n---\n",
		"a: 1\n---\nb: [\n", "{", "records: 3\n---\n",
	} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, in string) {
		if _, err := Parse(strings.NewReader(in)); err != nil {
			return
		}
		dec := yaml.NewDecoder(strings.NewReader(in))
		var doc yaml.Node
		for n := 0; ; n++ {
			err := dec.Decode(&doc)
			if err != nil {
				if n > 1 {
					t.Fatalf("accepted %d YAML documents:\n%s", n, in)
				}
				return
			}
		}
	})
}

// Every problem is reported at once, each naming the field, the value and the rule.
func TestParseReportsEveryErrorWithFieldValueAndRule(t *testing.T) {
	_, err := Parse(strings.NewReader(`
level: wideip
regions:
  a: ["region b", "subnet 10.0.0.0/8"]
  b: ["region a"]
  c: ["region nowhere", "not country ES"]
geo:
  - {subnet: 10.0.0.0/33, country: PT}
  - {subnet: 10.0.0.0/8}
  - {subnet: 11.0.0.0/8, continent: Atlantis}
pools:
  - {name: POOL1, fallback: nothing}
  - {name: POOL1}
  - {name: POOL2, members: [{name: vs1, address: not-an-ip}]}
records:
  - {source: "subnet 10.1.2.7/24", destination: "pool POOL1", score: 30}
  - {source: "region missing", destination: "pool POOL1", score: -1}
  - {source: "pool POOL1", destination: "planet POOL2"}
`))
	if err == nil {
		t.Fatal("accepted")
	}
	for _, want := range []string{
		"regions.a: region cycle a → b → a",
		`regions.c[0]: region "nowhere" is not defined under regions`,
		`geo[0].subnet: "10.0.0.0/33" is not CIDR`,
		"geo[1]: 10.0.0.0/8 classifies nothing",
		`geo[2].continent: "Atlantis" is not one of AF AN AS EU NA OC SA, nor their names`,
		`pools[0].fallback: "nothing": want a tmsh fallback-mode`,
		"pools[1].name: POOL1 duplicates pools[0]",
		`pools[2].members[0].address: "not-an-ip" is not an IP address`,
		"records[0].source: \"subnet 10.1.2.7/24\": subnet 10.1.2.7/24 has host bits set (did you mean 10.1.2.0/24?)",
		`records[1].source: "region missing": region "missing" is not defined under regions`,
		"records[1].score: -1: a score is zero or more",
		`records[2].source: "pool POOL1": an LDNS is never in a pool`,
		`records[2].destination: "planet POOL2": unknown kind "planet"`,
	} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("error does not say %q", want)
		}
	}
	if t.Failed() {
		t.Log(err)
	}
}

func TestParseRefusesARegionThatContainsItself(t *testing.T) {
	_, err := Parse(strings.NewReader(`
regions: {loop: ["region loop"]}
pools: [{name: P}]
records: [{source: region loop, destination: pool P}]
`))
	if err == nil || !strings.Contains(err.Error(), "regions.loop: region cycle loop → loop") {
		t.Fatalf("self-containing region: %v", err)
	}
}

func TestParseAcceptsNestedRegionsWithoutACycle(t *testing.T) {
	// A diamond (a contains b and c, both contain d) is not a cycle.
	s := parse(t, `
regions:
  a: ["region b", "region c"]
  b: ["region d"]
  c: ["region d"]
  d: ["subnet 10.0.0.0/8"]
pools: [{name: P}]
records: [{source: region a, destination: pool P, score: 5}]
`)
	if len(s.Regions) != 4 {
		t.Fatalf("regions: %v", s.Regions)
	}
}

func TestParseChecksTheLevel(t *testing.T) {
	for _, tc := range []struct{ name, yaml, says string }{
		{"unknown level", "level: datacenter\npools: [{name: P}]\n", `level: "datacenter": want wideip`},
		{"wide IP not topology", "wideip_load_balancing: ratio\npools: [{name: P}]\n", "wideip_load_balancing: ratio: level wideip scores"},
		{"pool field at wide IP level", "pool: P\npools: [{name: P}]\n", "pool: P: only used with level pool"},
		{"level pool, two pools, none named", "level: pool\npools: [{name: P}, {name: Q}]\n", "level pool with 2 pools: name the pool"},
		{"level pool, unknown pool", "level: pool\npool: R\npools: [{name: P}, {name: Q}]\n", "pool: R is not under pools"},
		{"level pool, no members", "level: pool\npools: [{name: P, load_balancing: topology}]\n", "pools[0].members: pool P has no members"},
		{"level pool, pool not topology", "level: pool\npools: [{name: P, members: [{name: vs1, address: 192.0.2.1}]}]\n",
			"pools[0].load_balancing: round-robin: level pool scores pool P's topology choice"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := Parse(strings.NewReader(tc.yaml + "records: [{source: subnet 10.0.0.0/8, destination: pool P}]\n"))
			if err == nil || !strings.Contains(err.Error(), tc.says) {
				t.Fatalf("got %v, want an error saying %q", err, tc.says)
			}
		})
	}
}

func TestParseLevelPoolWithOnePoolTakesIt(t *testing.T) {
	s := parse(t, `
level: pool
pools: [{name: P, load_balancing: topology, members: [{name: vs1, address: 192.0.2.1}]}]
records: [{source: subnet 10.0.0.0/8, destination: pool P}]
`)
	if s.Pool != "P" {
		t.Fatalf("pool = %q, want P", s.Pool)
	}
	if c := s.Candidates(); len(c) != 1 || c[0].Name != "vs1" {
		t.Fatalf("candidates: %+v", c)
	}
}

func TestLoadNamesTheFile(t *testing.T) {
	path := filepath.Join(t.TempDir(), "topology.yaml")
	if err := os.WriteFile(path, []byte("pools: []\nrecords: []\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	_, err := Load(path)
	if err == nil || !strings.Contains(err.Error(), path+": pools: no pools") || !strings.Contains(err.Error(), "records: no records") {
		t.Fatalf("Load: %v", err)
	}
	if _, err := Load(filepath.Join(t.TempDir(), "missing.yaml")); err == nil {
		t.Fatal("a missing file loaded")
	}
}

func TestExampleYAMLParses(t *testing.T) {
	s := Example()
	if len(s.Records) != 3 || len(ExampleWithoutRegion().Records) != 2 {
		t.Fatalf("example records: %d", len(s.Records))
	}
	if w := s.Warnings(); len(w) != 0 {
		t.Fatalf("the worked example should need no warning: %v", w)
	}
}

// The YAML takes the same statements as a tmsh paste: state (off the ladder, flagged) and
// negated region members (flagged).
func TestTopologyYAMLTakesStateAndNegatedRegionMembers(t *testing.T) {
	s, err := Parse(strings.NewReader(`regions:
  europe-but-gb: ["continent EU", "not country GB"]
geo:
  - {subnet: 10.44.0.0/16, country: GB, continent: EU}
  - {subnet: 10.33.0.0/16, country: FR, continent: EU, state: "FR/Ile-de-France"}
pools: [{name: EU}, {name: PARIS}]
records:
  - {source: "region europe-but-gb", destination: "pool EU", score: 10}
  - {source: "state FR/Ile-de-France", destination: "pool PARIS", score: 20}
`))
	if err != nil {
		t.Fatal(err)
	}
	gb := s.Score(Query{LDNS: netip.MustParseAddr("10.44.0.1")}, 0)
	fr := s.Score(Query{LDNS: netip.MustParseAddr("10.33.0.1")}, 0)
	if !gb.NoMatch || fr.Winner != "PARIS" || fr.Candidates[0].Score != 10 {
		t.Fatalf("GB: no match %v; FR: winner %s, EU %+v", gb.NoMatch, fr.Winner, fr.Candidates[0])
	}
	var rules []string
	for _, w := range fr.Warnings {
		rules = append(rules, w.Rule)
	}
	if !slices.Contains(rules, RuleNegatedMember) || !slices.Contains(rules, RuleRankUnconfirmed) {
		t.Fatalf("want the negated member and the state rank flagged: %v", rules)
	}
}
