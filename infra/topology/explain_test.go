package topology

import (
	"bytes"
	"encoding/json"
	"errors"
	"strings"
	"testing"
)

func TestWriteTextPutsTheAnswerFirstAndShowsTheShadowing(t *testing.T) {
	var out bytes.Buffer
	if err := Example().Score(ExampleQuery(), 0).WriteText(&out); err != nil {
		t.Fatal(err)
	}
	text := out.String()
	if first, _, _ := strings.Cut(text, "\n"); first != "winner: POOL1, score 30; then POOL2 20" {
		t.Fatalf("first line %q", first)
	}
	for _, want := range []string{
		"classified 10.1.2.7 (the LDNS address)",
		"POOL2      20     records[1]  region around-10-1 → pool POOL2",
		"then score, higher first: that direction is assumed",
		"yes, via subnet 10.1.0.0/16",
		"SHADOWED for POOL2 by records[1] (keeps 20; this 40 is never used)",
		"here because: wildcard source: wildcards go to the very end",
		"no warnings",
	} {
		if !strings.Contains(text, want) {
			t.Errorf("explanation lacks %q", want)
		}
	}
	if t.Failed() {
		t.Log(text)
	}
}

func TestWriteTextSaysNoMatchTiesAndWarnings(t *testing.T) {
	s := parse(t, `
pools: [{name: POOL1, load_balancing: topology}, {name: POOL2}]
records:
  - {source: "subnet 10.0.0.0/8", destination: "pool POOL1", score: 30}
  - {source: "subnet 10.0.0.0/8", destination: "pool POOL2", score: 30}
`)
	var out bytes.Buffer
	if err := s.Score(query("10.1.2.7"), 1).WriteText(&out); err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{
		"winner: POOL2, score 30 (round robin 1 among POOL1, POOL2, tied at 30)",
		"warnings (1):",
		"! [fallback-not-none] topology runs at both levels",
	} {
		if !strings.Contains(out.String(), want) {
			t.Errorf("explanation lacks %q\n%s", want, out.String())
		}
	}
	out.Reset()
	if err := s.Score(query("192.0.2.1"), 0).WriteText(&out); err != nil {
		t.Fatal(err)
	}
	if !strings.HasPrefix(out.String(), "no topology match") || !strings.Contains(out.String(), "POOL1      -      no record matched") {
		t.Errorf("no-match explanation:\n%s", out.String())
	}
}

func TestResultJSONCarriesTheDecision(t *testing.T) {
	b, err := json.Marshal(Example().Score(ExampleQuery(), 0))
	if err != nil {
		t.Fatal(err)
	}
	var got struct {
		Winner     string `json:"winner"`
		Candidates []struct {
			Name   string `json:"name"`
			Score  int    `json:"score"`
			Record int    `json:"record"`
		} `json:"candidates"`
		Shadowed []shadow `json:"shadowed"`
		Walk     []struct {
			Index  int `json:"index"`
			Record struct {
				Source string `json:"source"`
			} `json:"record"`
			Key string `json:"key"`
		} `json:"walk"`
		Query map[string]any `json:"query"`
	}
	if err := json.Unmarshal(b, &got); err != nil {
		t.Fatal(err)
	}
	if got.Winner != "POOL1" || len(got.Candidates) != 2 || got.Candidates[1].Record != 1 || len(got.Shadowed) != 1 ||
		got.Walk[0].Record.Source != "subnet 10.1.2.0/24" || got.Walk[0].Key == "" || got.Query["ldns"] != "10.1.2.7" {
		t.Fatalf("JSON: %s", b)
	}
	if _, ok := got.Query["ecs"]; ok {
		t.Fatalf("a query without ECS should not carry one: %s", b)
	}
}

type failingWriter struct{}

func (failingWriter) Write([]byte) (int, error) { return 0, errors.New("disk full") }

func TestWriteTextReturnsTheWriteError(t *testing.T) {
	if err := Example().Score(ExampleQuery(), 0).WriteText(failingWriter{}); err == nil || err.Error() != "disk full" {
		t.Fatalf("WriteText = %v", err)
	}
}
