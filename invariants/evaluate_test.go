package invariants

import (
	"fmt"
	"testing"
	"time"

	"github.com/zero502/zero502/infra/config"
)

func TestEvaluateGivesEveryInvariantInOrder(t *testing.T) {
	vs := Evaluate(withHosts(config.Defaults(), 3))
	if len(vs) != 16 {
		t.Fatalf("got %d verdicts, want 16", len(vs))
	}
	for i, v := range vs {
		if want := fmt.Sprintf("I%d", i+1); v.ID != want || v.Relation == "" || v.Why == "" || v.Sentence == "" {
			t.Errorf("verdict %d: %+v, want ID %s with relation, why and sentence", i, v, want)
		}
	}
}

func TestBalancerRelationsAreSkippedWithoutABalancer(t *testing.T) {
	c := config.Defaults()
	c.Balancer.Kind = config.BalancerNone
	c.Drain.Window = time.Second // would violate I1 with a balancer
	for _, id := range []string{"I1", "I3", "I4", "I7", "I9"} {
		expect(t, c, id, Skipped)
	}
	expect(t, c, "I2", Holds)
}

// The analysis relations apply only where the deployer judges a batch: the analysis on, behind
// the in-house LB (the only balancer that publishes outcomes), with a balanced service.
func TestAnalysisRelationsAreSkippedWhereNothingIsJudged(t *testing.T) {
	breaking := func() *config.Config {
		// Judged, this breaks all four: I10 (1s not above 1s), I11 (1s not above 3s), and a rate
		// far too low for I12 and I13.
		c := judged(3)
		c.Rollout.Analysis.Window, c.Rollout.Canary.Duration = time.Second, time.Second
		c.Rollout.Analysis.ExpectedRate = 0.001
		return c
	}
	for _, id := range []string{"I10", "I11", "I12", "I13"} {
		expect(t, breaking(), id, map[string]Status{"I10": Violated, "I11": Violated, "I12": Warned, "I13": Warned}[id])
	}
	for name, change := range map[string]func(*config.Config){
		"analysis off": func(c *config.Config) { c.Rollout.Analysis.Enabled = false },
		"an ALB":       func(c *config.Config) { c.Balancer.Kind = config.BalancerALB },
		"the edges":    func(c *config.Config) { c.Balancer.Kind = config.BalancerEdges },
		"no balancer":  func(c *config.Config) { c.Balancer.Kind = config.BalancerNone },
		"no port":      func(c *config.Config) { c.Services[0].Port = 0 },
		"no service":   func(c *config.Config) { c.Services = nil },
		"dns":          func(c *config.Config) { c.Balancer.Kind = config.BalancerDNS },
	} {
		t.Run(name, func(t *testing.T) {
			for _, id := range []string{"I10", "I11", "I12", "I13"} {
				c := breaking()
				change(c)
				expect(t, c, id, Skipped)
			}
		})
	}
}

func TestCheckReturnsEveryViolation(t *testing.T) {
	c := withHosts(config.Defaults(), 1)
	c.Drain.Window = 10 * time.Second
	c.Drain.StopGrace = 20 * time.Second
	var ids []string
	for _, v := range Check(c) {
		ids = append(ids, v.ID)
	}
	if got := len(ids); got != 3 || ids[0] != "I1" || ids[1] != "I2" || ids[2] != "I8" {
		t.Fatalf("Check = %v, want [I1 I2 I8]", ids)
	}
}
