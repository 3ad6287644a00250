package mesh

import (
	"strings"
	"testing"
	"time"
)

func TestThresholdsRefuseEachRuleNamingFieldValueAndRule(t *testing.T) {
	for _, tc := range []struct {
		name   string
		change func(*Thresholds)
		want   []string // empty: valid
	}{
		{"the defaults", nil, nil},
		{"fail streak 2 is a streak", func(th *Thresholds) { th.FailStreak = 2 }, nil},
		{"fail streak 1 is one failed probe", func(th *Thresholds) { th.FailStreak = 1 },
			[]string{"FailStreak 1", "2 or more", "one failed probe means nothing"}},
		{"heal streak 0 never heals", func(th *Thresholds) { th.HealStreak = 0 },
			[]string{"HealStreak 0", "1 or more"}},
		{"quorum 2 is several servers", func(th *Thresholds) { th.Quorum = 2 }, nil},
		{"quorum 1 is one opinion", func(th *Thresholds) { th.Quorum = 1 },
			[]string{"Quorum 1", "2 or more", "one server's opinion is not a verdict"}},
		{"share 1 is every neighbour", func(th *Thresholds) { th.UnreliableShare = 1 }, nil},
		{"share 0", func(th *Thresholds) { th.UnreliableShare = 0 },
			[]string{"UnreliableShare 0", "above 0 and at most 1"}},
		{"share above 1", func(th *Thresholds) { th.UnreliableShare = 1.01 },
			[]string{"UnreliableShare 1.01", "above 0 and at most 1"}},
		{"no report staleness", func(th *Thresholds) { th.ReportStaleAfter = 0 },
			[]string{"ReportStaleAfter 0s", "above 0"}},
		{"negative probe staleness", func(th *Thresholds) { th.ProbeStaleAfter = -time.Second },
			[]string{"ProbeStaleAfter -1s", "above 0"}},
		{"every error at once", func(th *Thresholds) { *th = Thresholds{} },
			[]string{"FailStreak 0", "HealStreak 0", "Quorum 0", "UnreliableShare 0", "ReportStaleAfter 0s", "ProbeStaleAfter 0s"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			err := withThresholds(tc.change).Validate()
			if len(tc.want) == 0 {
				if err != nil {
					t.Fatalf("refused: %v", err)
				}
				return
			}
			if err == nil {
				t.Fatal("accepted")
			}
			for _, w := range tc.want {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("the error does not say %q: %v", w, err)
				}
			}
		})
	}
}

func TestNewEvaluatorRefusesABadMesh(t *testing.T) {
	for _, tc := range []struct {
		name    string
		servers []string
		want    string
	}{
		{"one server", []string{"a"}, "2 or more servers"},
		{"a duplicate", []string{"a", "b", "a"}, `"a" is listed twice`},
		{"an empty name", []string{"a", ""}, "empty name"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := newEvaluator(DefaultThresholds(), fakeClock(), nil, tc.servers...)
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("error %v, want it to say %q", err, tc.want)
			}
		})
	}
	if _, err := newEvaluator(DefaultThresholds(), nil, nil, "a", "b"); err == nil || !strings.Contains(err.Error(), "no clock") {
		t.Fatalf("nil clock: %v", err)
	}
	if _, err := newEvaluator(Thresholds{}, fakeClock(), nil, "a", "b"); err == nil || !strings.Contains(err.Error(), "FailStreak") {
		t.Fatalf("zero thresholds: %v", err)
	}
	if _, err := newEvaluator(DefaultThresholds(), fakeClock(), []string{"z"}, "a", "b"); err == nil || !strings.Contains(err.Error(), `checker "z"`) ||
		!strings.Contains(err.Error(), "not a member") {
		t.Fatalf("a checker outside the mesh: %v", err)
	}
}
