package invariants

import (
	"strings"
	"testing"

	"github.com/zero502/zero502/infra/config"
)

func TestI8BatchLeavesHealthyHost(t *testing.T) {
	for _, tc := range []struct {
		name         string
		strategy     string
		batch, hosts int
		want         Status
		unavailable  int // rollout.max_unavailable
	}{
		{"source numbers: one host at a time of three", config.StopFirst, 1, 3, Holds, 0},
		{"exactly every host at once", config.StopFirst, 3, 3, Violated, 0},
		{"one host fewer than the fleet", config.StopFirst, 2, 3, Holds, 0},
		{"a single-host fleet", config.StopFirst, 1, 1, Violated, 0},
		{"no hosts", config.StopFirst, 1, 0, Skipped, 0},
		{"start-first: one host at a time of three", config.StartFirst, 1, 3, Holds, 0},
		{"start-first: every host at once", config.StartFirst, 3, 3, Holds, 0},
		{"start-first: one host more than the fleet", config.StartFirst, 4, 3, Violated, 0},
		{"start-first: a single-host fleet", config.StartFirst, 1, 1, Holds, 0},
		{"start-first: no hosts", config.StartFirst, 1, 0, Skipped, 0},
		{"start-first: one of three may leave rotation", config.StartFirst, 3, 3, Holds, 1},
		{"start-first: two of three may leave rotation", config.StartFirst, 2, 3, Holds, 2},
		{"start-first: every host may leave rotation", config.StartFirst, 3, 3, Violated, 3},
		{"start-first: more than the batch, below the fleet", config.StartFirst, 1, 3, Holds, 2},
		{"start-first: a single host that may leave rotation", config.StartFirst, 1, 1, Violated, 1},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c := withHosts(config.Defaults(), tc.hosts)
			c.Rollout.Batch, c.Rollout.Strategy, c.Rollout.MaxUnavailable = tc.batch, tc.strategy, tc.unavailable
			expect(t, c, "I8", tc.want)
		})
	}
	t.Run("the preflight's stop-first call and the strategy's agree", func(t *testing.T) {
		for _, n := range [][2]int{{1, 1}, {1, 2}, {2, 2}} {
			if a, b := BatchLeavesHealthy(n[0], n[1]), batchLeavesHealthyWith(config.StopFirst, n[0], 0, n[1]); a.Status != b.Status {
				t.Errorf("batch %d of %d: BatchLeavesHealthy %s, stop-first %s", n[0], n[1], a.Status, b.Status)
			}
		}
		if v := batchLeavesHealthyWith("", 1, 0, 1); v.Status != Violated {
			t.Errorf("no strategy given, one host of one: %s; want stop-first's violation", v.Status)
		}
	})
	t.Run("the sentences say why and what to change", func(t *testing.T) {
		c := withHosts(config.Defaults(), 1)
		v := expect(t, c, "I8", Violated)
		if !strings.Contains(v.Sentence, "set rollout.strategy start-first") {
			t.Errorf("stop-first single host: %q does not offer start-first", v.Sentence)
		}
		c.Rollout.Strategy = config.StartFirst
		v = expect(t, c, "I8", Holds)
		for _, want := range []string{"until its successor is healthy at the balancer", "a single host included"} {
			if !strings.Contains(v.Sentence, want) {
				t.Errorf("start-first single host: %q lacks %q", v.Sentence, want)
			}
		}
		c = withHosts(c, 2)
		c.Rollout.Batch = 3
		v = expect(t, c, "I8", Violated)
		if !strings.Contains(v.Sentence, "rollout.batch 3 must be at most the 2 healthy hosts") || v.Arithmetic != "3 > 2" {
			t.Errorf("start-first batch 3 of 2: %q (%s)", v.Sentence, v.Arithmetic)
		}
		c.Rollout.Batch, c.Rollout.MaxUnavailable = 2, 2
		v = expect(t, c, "I8", Violated)
		if !strings.Contains(v.Sentence, "rollout.max_unavailable 2 must be below the 2 healthy hosts") ||
			!strings.Contains(v.Sentence, "lower rollout.max_unavailable to at most 1") || v.Arithmetic != "2 ≥ 2" {
			t.Errorf("start-first max_unavailable 2 of 2: %q (%s)", v.Sentence, v.Arithmetic)
		}
		c.Rollout.MaxUnavailable = 1
		v = expect(t, c, "I8", Holds)
		if !strings.Contains(v.Sentence, "leaving 1 of 2 healthy hosts in rotation") {
			t.Errorf("start-first max_unavailable 1 of 2: %q", v.Sentence)
		}
	})
	requireShippedHold(t, "I8")
}
