package topology

import (
	"encoding/json"
	"slices"
	"strings"
	"testing"
)

// decidePaste parses and decides a paste, failing the test on an error.
func decidePaste(t *testing.T, text string) *Decision {
	t.Helper()
	p, err := ParseTMSH(strings.NewReader(text))
	if err != nil {
		t.Fatalf("ParseTMSH: %v\n%s", err, text)
	}
	d, err := Decide(p, 0)
	if err != nil {
		t.Fatalf("Decide: %v\n%s", err, text)
	}
	return d
}

func candidateScore(t *testing.T, d *Decision, name string) (score, from int, ok bool) {
	t.Helper()
	for _, c := range d.Candidates {
		if c.Name == name {
			if c.Score == nil {
				return 0, 0, false
			}
			return *c.Score, *c.FromRecord, true
		}
	}
	t.Fatalf("no candidate %s among %+v", name, d.Candidates)
	return 0, 0, false
}

func winnerIs(t *testing.T, d *Decision, names ...string) {
	t.Helper()
	if !slices.Equal(d.Winner.Names, names) {
		t.Fatalf("winner %v, want %v\nnotes: %q", d.Winner.Names, names, d.Notes)
	}
}

// dropRecord removes the multi-line record whose header contains marker from a paste.
func dropRecord(t *testing.T, text, marker string) string {
	t.Helper()
	i := strings.Index(text, marker)
	if i < 0 {
		t.Fatalf("no %q in the paste", marker)
	}
	start := strings.LastIndex(text[:i], "\n") + 1
	end := i + strings.Index(text[i:], "\n}\n") + 3
	return text[:start] + text[end:]
}

func TestTopologyTMSHWorkedExampleFlipsWhenTheRegionRecordGoes(t *testing.T) {
	d := decidePaste(t, ExampleTMSH)
	winnerIs(t, d, "POOL1")
	if s, from, _ := candidateScore(t, d, "POOL1"); s != 30 || from != 3 {
		t.Errorf("POOL1 %d from record %d, want 30 from record 3", s, from)
	}
	if s, from, _ := candidateScore(t, d, "POOL2"); s != 20 || from != 2 {
		t.Errorf("POOL2 %d from record %d, want 20 from record 2 (the region)", s, from)
	}
	var walk []int
	for _, r := range d.Records {
		walk = append(walk, r.Index)
	}
	if !slices.Equal(walk, []int{3, 2, 1}) {
		t.Errorf("walk %v, want the /24 (3), the region (2), the wildcard (1)", walk)
	}
	if wc := d.Records[2]; wc.ShadowedBy == nil || *wc.ShadowedBy != 2 || wc.Group != "wildcard" {
		t.Errorf("the wildcard's 40 should be shadowed by record 2: %+v", wc)
	}

	d = decidePaste(t, dropRecord(t, ExampleTMSH, "ldns: region"))
	winnerIs(t, d, "POOL2")
	if s, _, _ := candidateScore(t, d, "POOL2"); s != 40 {
		t.Errorf("without the region record POOL2 takes the wildcard's 40, got %d", s)
	}
}

const exampleOneLine = `gtm topology ldns: subnet 0.0.0.0/0 server: pool /Common/POOL2 { order 1 score 40 }
gtm topology ldns: region /Common/around-10-1 server: pool /Common/POOL2 { order 2 score 20 }
gtm topology ldns: subnet 10.1.2.0/24 server: pool /Common/POOL1 { order 3 score 30 }
gtm region /Common/around-10-1 { region-members { subnet 10.1.0.0/16 { } } }
source ip=10.1.2.7
`

func TestTopologyTMSHOneLineAndMultiLineFormsReadIdentically(t *testing.T) {
	multi, err := ParseTMSH(strings.NewReader(ExampleTMSH))
	if err != nil {
		t.Fatal(err)
	}
	one, err := ParseTMSH(strings.NewReader(exampleOneLine))
	if err != nil {
		t.Fatal(err)
	}
	for i := range multi.Records {
		m, o := multi.Records[i], one.Records[i]
		if m.Record != o.Record || m.Order != o.Order {
			t.Errorf("record %d: multi-line %+v, one-line %+v", i+1, m, o)
		}
		if strings.Contains(o.Text, "\n") || o.Text != exampleLines(exampleOneLine)[i] {
			t.Errorf("record %d text %q, want the pasted line", i+1, o.Text)
		}
	}
	if !slices.Equal(multi.Regions["around-10-1"], one.Regions["around-10-1"]) || len(one.Regions) != 1 {
		t.Errorf("regions: multi-line %v, one-line %v", multi.Regions, one.Regions)
	}
	dm, err := Decide(multi, 0)
	if err != nil {
		t.Fatal(err)
	}
	do, err := Decide(one, 0)
	if err != nil {
		t.Fatal(err)
	}
	for _, d := range []*Decision{dm, do} {
		for i := range d.Records {
			d.Records[i].Text = ""
		}
	}
	a, _ := json.Marshal(dm)
	b, _ := json.Marshal(do)
	if string(a) != string(b) {
		t.Errorf("decisions differ:\nmulti-line %s\none-line   %s", a, b)
	}
}

func exampleLines(s string) []string { return strings.Split(s, "\n") }

func TestTopologyTMSHEveryStatementType(t *testing.T) {
	const regions = `gtm region /Common/lisbon { region-members { subnet 10.1.0.0/16 { } } }
`
	for _, tc := range []struct {
		source, query string
		matches       bool
	}{
		{"subnet 10.1.0.0/16", "source ip=10.1.2.7", true},
		{"subnet 10.1.0.0/16", "source ip=10.2.0.1", false},
		{"region /Common/lisbon", "source ip=10.1.2.7", true},
		{"region /Common/lisbon", "source region=lisbon", true},
		{"region /Common/lisbon", "source ip=10.9.0.1", false},
		{`isp "Example Net"`, `source isp="Example Net"`, true},
		{`isp "Example Net"`, `source isp=Other`, false},
		{"country PT", "source country=PT", true},
		{"country PT", "source country=ES", false},
		{"continent EU", "source continent=EU", true},
		{"continent EU", "source continent=NA", false},
		{`state "US/New York"`, `source state="US/New York"`, true},
		{`state "US/New York"`, `source state=US/Ohio`, false},
		{"subnet 0.0.0.0/0", "source country=PT", true},
	} {
		for _, not := range []bool{false, true} {
			src, want := tc.source, tc.matches
			if not {
				src, want = "not "+src, !want
			}
			t.Run(src+" | "+tc.query, func(t *testing.T) {
				paste := "gtm topology ldns: " + src + " server: pool /Common/P { score 10 }\n" + regions + tc.query + "\n"
				d := decidePaste(t, paste)
				if got := len(d.Winner.Names) == 1; got != want {
					t.Fatalf("source matches %v, want %v\n%+v", got, want, d.Records)
				}
				if strings.Contains(src, "state") && !hasNote(d, "rank-unconfirmed") {
					t.Errorf("a state record should carry the rank-unconfirmed note: %q", d.Notes)
				}
			})
		}
	}

	// Destinations: pool (wide-IP level), data center and pool at pool level, each negated too.
	d := decidePaste(t, `gtm topology ldns: subnet 10.0.0.0/8 server: not pool /Common/A { score 7 }
gtm topology ldns: subnet 10.0.0.0/8 server: pool /Common/A { score 3 }
source ip=10.1.2.7
`)
	if s, _, _ := candidateScore(t, d, "A"); s != 3 {
		t.Errorf("A: %d, want 3 (not pool A does not match A)", s)
	}
	d = decidePaste(t, `gtm topology ldns: subnet 10.0.0.0/8 server: datacenter /Common/DC1 { score 7 }
gtm topology ldns: subnet 10.0.0.0/8 server: not datacenter /Common/DC1 { score 9 }
gtm topology ldns: subnet 10.0.0.0/8 server: datacenter /Common/DC2 { score 2 }
source ip=10.1.2.7
`)
	if d.Level != LevelPool {
		t.Errorf("data-center destinations decide at pool level, got %s", d.Level)
	}
	// Plain records sort above server-side negations: DC2 takes 2 and "not DC1"'s 9 is shadowed.
	if s, from, _ := candidateScore(t, d, "DC2"); s != 2 || from != 3 {
		t.Errorf("DC2: %d from record %d, want 2 from record 3", s, from)
	}
	if r := d.Records[2]; r.Index != 2 || r.Group != "server-negation" || r.ShadowedBy == nil || *r.ShadowedBy != 3 {
		t.Errorf("the server-side negation should walk last, shadowed by record 3: %+v", r)
	}
	winnerIs(t, d, "DC1")
}

func hasNote(d *Decision, rule string) bool {
	return slices.ContainsFunc(d.Notes, func(n string) bool { return strings.Contains(n, "["+rule+"]") })
}
