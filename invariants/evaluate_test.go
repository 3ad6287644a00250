package invariants

import (
	"testing"
	"time"

	"github.com/zero502/zero502/infra"
)

func TestEvaluateGivesEveryInvariantInOrder(t *testing.T) {
	vs := Evaluate(withHosts(infra.Defaults(), 3))
	if len(vs) != 9 {
		t.Fatalf("got %d verdicts, want 9", len(vs))
	}
	for i, v := range vs {
		if want := "I" + string(rune('1'+i)); v.ID != want || v.Relation == "" || v.Why == "" || v.Sentence == "" {
			t.Errorf("verdict %d: %+v, want ID %s with relation, why and sentence", i, v, want)
		}
	}
}

func TestBalancerRelationsAreSkippedWithoutABalancer(t *testing.T) {
	c := infra.Defaults()
	c.Balancer.Kind = infra.BalancerNone
	c.Drain.Window = time.Second // would violate I1 with a balancer
	for _, id := range []string{"I1", "I3", "I4", "I7", "I9"} {
		expect(t, c, id, Skipped)
	}
	expect(t, c, "I2", Holds)
}

func TestCheckReturnsEveryViolation(t *testing.T) {
	c := withHosts(infra.Defaults(), 1)
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
