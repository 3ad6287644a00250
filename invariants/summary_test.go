package invariants

import (
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/zero502/zero502/infra/config"
)

// A config with drain.window 10s violates I1 (detection 5s × 2 = 10s) and, with shutdown 10s
// against stop_grace 20s, I2 as well; the defaults hold everything.
func summaryConfigs(t *testing.T) (holding, breaking *config.Config) {
	t.Helper()
	holding = config.Defaults()
	breaking = config.Defaults()
	breaking.Drain.Window = 10 * time.Second
	breaking.Drain.StopGrace = breaking.Drain.Window + breaking.Drain.Shutdown
	if got := Check(breaking); len(got) != 2 || got[0].ID != "I1" || got[1].ID != "I2" {
		t.Fatalf("the breaking config violates %v, want I1 and I2", got)
	}
	if got := Check(holding); len(got) != 0 {
		t.Fatalf("the defaults violate %v", got)
	}
	return holding, breaking
}

func TestSummaryOfAHoldingConfigWithoutDriftIsNoError(t *testing.T) {
	holding, _ := summaryConfigs(t)
	for _, live := range []bool{false, true} {
		s := Summary{Verdicts: Evaluate(holding), Live: live}
		if got := s.Violated(); len(got) != 0 {
			t.Errorf("live %v: Violated() = %v, want none", live, got)
		}
		if err := s.Err(); err != nil {
			t.Errorf("live %v: Err() = %v, want nil", live, err)
		}
	}
}

func TestSummaryCountsAndNamesEveryProblem(t *testing.T) {
	holding, breaking := summaryConfigs(t)
	for _, tc := range []struct {
		name     string
		s        Summary
		violated []string
		err      string
	}{
		{"violations on the config", Summary{Verdicts: Evaluate(breaking)}, []string{"I1", "I2"},
			"2 invariant(s) violated: I1, I2"},
		{"violations on the live numbers", Summary{Verdicts: Evaluate(breaking), Live: true}, []string{"I1", "I2"},
			"2 invariant(s) violated on the live balancer's numbers: I1, I2"},
		{"drift alone", Summary{Verdicts: Evaluate(holding), Live: true, Drifted: []string{"balancer.interval"}}, nil,
			"1 live setting(s) drifted from the config: balancer.interval (run zero502 provision, " +
				"restart the balancer from this config, or change the config to match)"},
		{"drift and violations, drift first", Summary{Verdicts: Evaluate(breaking), Live: true,
			Drifted: []string{"balancer.interval", "balancer.unhealthy_threshold"}}, []string{"I1", "I2"},
			"2 live setting(s) drifted from the config: balancer.interval, balancer.unhealthy_threshold (run zero502 provision, " +
				"restart the balancer from this config, or change the config to match); " +
				"2 invariant(s) violated on the live balancer's numbers: I1, I2"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := tc.s.Violated(); !slices.Equal(got, tc.violated) {
				t.Errorf("Violated() = %v, want %v", got, tc.violated)
			}
			err := tc.s.Err()
			if err == nil || err.Error() != tc.err {
				t.Errorf("Err() = %v\nwant      %s", err, tc.err)
			}
		})
	}
}

// A skipped invariant is not a pass, but it is not a violation either: it is not counted.
func TestSummaryDoesNotCountSkippedInvariants(t *testing.T) {
	cfg := config.Defaults()
	cfg.Balancer.Kind = config.BalancerNone
	vs := Evaluate(cfg)
	if !slices.ContainsFunc(vs, func(v Verdict) bool { return v.Status == Skipped }) {
		t.Fatal("balancer.kind none skips nothing; the test needs a skipped invariant")
	}
	s := Summary{Verdicts: vs}
	if got := s.Violated(); len(got) != 0 || s.Err() != nil {
		t.Fatalf("Violated() = %v, Err() = %v, want none and nil", got, s.Err())
	}
	if strings.Contains(Summary{Verdicts: vs, Drifted: []string{"x"}}.Err().Error(), "invariant") {
		t.Fatal("drift alone mentions invariants")
	}
}

// A warning (I12, I13: an estimate of the traffic) is said, not counted: Err stays nil, and Check
// (what the deployer's preflight refuses on) leaves it out.
func TestSummaryListsWarningsButDoesNotFailOnThem(t *testing.T) {
	cfg := judged(3)
	cfg.Rollout.Analysis.ExpectedRate = 1 // 1/s: neither the canary nor a batch reaches 20 requests
	s := Summary{Verdicts: Evaluate(cfg)}
	if got := s.Warned(); !slices.Equal(got, []string{"I12", "I13"}) {
		t.Fatalf("Warned() = %v, want [I12 I13]", got)
	}
	if got := s.Violated(); len(got) != 0 || s.Err() != nil {
		t.Fatalf("Violated() = %v, Err() = %v, want none and nil", got, s.Err())
	}
	if got := Check(cfg); len(got) != 0 {
		t.Fatalf("Check = %v, want no violation", got)
	}
	if got := Warnings(cfg); len(got) != 2 || got[0].ID != "I12" || got[1].ID != "I13" {
		t.Fatalf("Warnings = %v, want I12 and I13", got)
	}
}
