package invariants

import (
	"strings"
	"testing"
	"time"
)

func TestI11WindowOutlastsResponse(t *testing.T) {
	for _, tc := range []struct {
		name           string
		window, header time.Duration
		want           Status
	}{
		{"source numbers: 30s window against 3s", 30 * time.Second, 3 * time.Second, Holds},
		{"exactly the header timeout", 3 * time.Second, 3 * time.Second, Violated},
		{"one millisecond past it", 3*time.Second + time.Millisecond, 3 * time.Second, Holds},
		{"the examples' first window: 1s against 3s", time.Second, 3 * time.Second, Violated},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c := judged(3)
			c.Rollout.Analysis.Window, c.Balancer.HeaderTimeout = tc.window, tc.header
			c.Rollout.Canary.Duration = 2 * tc.window // keep I10 out of the way
			expect(t, c, "I11", tc.want)
		})
	}
	t.Run("the sentence names the keys, the numbers and the fix", func(t *testing.T) {
		c := judged(3)
		c.Rollout.Analysis.Window = time.Second
		v := expect(t, c, "I11", Violated)
		for _, want := range []string{"rollout.analysis.window 1s must exceed balancer.header_timeout 3s",
			"a version that never answers", "rollout.analysis.on_no_traffic pass",
			"raise rollout.analysis.window to at least 3.001s or lower balancer.header_timeout"} {
			if !strings.Contains(v.Sentence, want) {
				t.Errorf("sentence %q lacks %q", v.Sentence, want)
			}
		}
	})
	requireShippedHold(t, "I11")
}
