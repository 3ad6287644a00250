package invariants

import (
	"strings"
	"testing"
	"time"
)

func TestI10CanaryOutlastsWindow(t *testing.T) {
	for _, tc := range []struct {
		name             string
		hosts            int
		duration, window time.Duration
		want             Status
	}{
		{"source numbers: 60s canary against 30s batches", 1, 60 * time.Second, 30 * time.Second, Holds},
		{"exactly the window", 1, 30 * time.Second, 30 * time.Second, Violated},
		{"one millisecond past the window", 1, 30*time.Second + time.Millisecond, 30 * time.Second, Holds},
		{"a canary judged shorter than a batch", 1, 10 * time.Second, 30 * time.Second, Violated},
		{"no canary", 0, 10 * time.Second, 30 * time.Second, Skipped},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c := judged(3)
			c.Rollout.Canary.Hosts, c.Rollout.Canary.Duration, c.Rollout.Analysis.Window = tc.hosts, tc.duration, tc.window
			expect(t, c, "I10", tc.want)
		})
	}
	t.Run("the sentence names the keys, the numbers and the fix", func(t *testing.T) {
		c := judged(3)
		c.Rollout.Canary.Duration, c.Rollout.Analysis.Window, c.Rollout.Canary.Weight = 2*time.Second, 3100*time.Millisecond, 10
		v := expect(t, c, "I10", Violated)
		for _, want := range []string{"rollout.canary.duration 2s must exceed rollout.analysis.window 3.1s",
			"rollout.canary.weight 10 %", "raise rollout.canary.duration to at least 3.101s"} {
			if !strings.Contains(v.Sentence, want) {
				t.Errorf("sentence %q lacks %q", v.Sentence, want)
			}
		}
		if v.Arithmetic != "2s ≤ 3.1s" {
			t.Errorf("arithmetic %q, want 2s ≤ 3.1s", v.Arithmetic)
		}
	})
	requireShippedHold(t, "I10")
}
