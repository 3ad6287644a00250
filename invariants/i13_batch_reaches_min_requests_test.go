package invariants

import (
	"strings"
	"testing"
	"time"
)

func TestI13BatchReachesMinRequests(t *testing.T) {
	for _, tc := range []struct {
		name                 string
		rate                 float64
		hosts, canary, batch int
		window               time.Duration
		minimum              int
		want                 Status
		wantArithmetic       string
	}{
		{"source numbers: no expected rate", 0, 3, 1, 1, 30 * time.Second, 20, Skipped, ""},
		{"exactly min_requests: 60/s × 1/3 × 1s", 60, 3, 1, 1, time.Second, 20, Holds, "60/s × 1/3 × 1s = 20 ≥ 20"},
		{"one millisecond short of it", 60, 3, 1, 1, time.Second - time.Millisecond, 20, Warned, "60/s × 1/3 × 999ms = 19.98 < 20"},
		{"the last batch is the smallest: 5 hosts after the canary in 2s, 2s, 1", 60, 6, 1, 2, 2 * time.Second, 20, Holds, "60/s × 1/6 × 2s = 20 ≥ 20"},
		{"and one millisecond short", 60, 6, 1, 2, 2*time.Second - time.Millisecond, 20, Warned, ""},
		{"without a canary every batch holds 2 of 6", 60, 6, 0, 2, time.Second, 20, Holds, "60/s × 2/6 × 1s = 20 ≥ 20"},
		{"the canary is the whole fleet", 60, 1, 1, 1, time.Second, 20, Skipped, ""},
		{"no hosts", 60, 0, 1, 1, time.Second, 20, Skipped, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c := judged(tc.hosts)
			c.Rollout.Analysis.ExpectedRate, c.Rollout.Analysis.MinRequests = tc.rate, tc.minimum
			c.Rollout.Canary.Hosts, c.Rollout.Batch, c.Rollout.Analysis.Window = tc.canary, tc.batch, tc.window
			v := expect(t, c, "I13", tc.want)
			if tc.wantArithmetic != "" && v.Arithmetic != tc.wantArithmetic {
				t.Errorf("arithmetic %q, want %q", v.Arithmetic, tc.wantArithmetic)
			}
		})
	}
	t.Run("the sentence names the keys, the numbers and the fixes", func(t *testing.T) {
		c := judged(3)
		c.Rollout.Analysis.ExpectedRate, c.Rollout.Analysis.Window = 30, time.Second
		v := expect(t, c, "I13", Warned)
		for _, want := range []string{"the smallest batch after the canary (1 of 3 hosts) would get about 10 requests",
			"rollout.analysis.expected_rate 30/s × 1/3 × rollout.analysis.window 1s = 10 is below rollout.analysis.min_requests 20",
			"raise rollout.analysis.window to at least 2s or rollout.batch, or lower rollout.analysis.min_requests to at most 10"} {
			if !strings.Contains(v.Sentence, want) {
				t.Errorf("sentence %q lacks %q", v.Sentence, want)
			}
		}
	})
	requireShippedHold(t, "I13")
}
