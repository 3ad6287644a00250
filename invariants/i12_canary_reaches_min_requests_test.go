package invariants

import (
	"strings"
	"testing"
	"time"
)

func TestI12CanaryReachesMinRequests(t *testing.T) {
	for _, tc := range []struct {
		name            string
		rate            float64
		hosts, weight   int
		duration        time.Duration
		minimum         int
		want            Status
		wantArithmetic  string
		wantNotInAnyway string
	}{
		{"source numbers: no expected rate", 0, 1, 10, 60 * time.Second, 20, Skipped, "", ""},
		{"exactly min_requests: 20/s × 10 % × 10s", 20, 1, 10, 10 * time.Second, 20, Holds, "20/s × 10 % × 10s = 20 ≥ 20", ""},
		{"one millisecond short of it", 20, 1, 10, 10*time.Second - time.Millisecond, 20, Warned, "20/s × 10 % × 9.999s = 20 < 20", ""},
		{"a 1 % canary is not rounded to no traffic: 2000/s × 1 % × 1s", 2000, 1, 1, time.Second, 20, Holds, "", ""},
		{"any-service's demo load at 10 %: 30/s × 10 % × 3s = 9", 30, 1, 10, 3 * time.Second, 20, Warned, "", ""},
		{"no canary", 20, 0, 10, time.Second, 20, Skipped, "", ""},
		{"min_requests 0 always holds", 0.5, 1, 1, time.Second, 0, Holds, "", ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c := judged(3)
			c.Rollout.Analysis.ExpectedRate, c.Rollout.Analysis.MinRequests = tc.rate, tc.minimum
			c.Rollout.Canary.Hosts, c.Rollout.Canary.Weight, c.Rollout.Canary.Duration = tc.hosts, tc.weight, tc.duration
			v := expect(t, c, "I12", tc.want)
			if tc.wantArithmetic != "" && v.Arithmetic != tc.wantArithmetic {
				t.Errorf("arithmetic %q, want %q", v.Arithmetic, tc.wantArithmetic)
			}
		})
	}
	t.Run("the sentence names the keys, the numbers and the fixes", func(t *testing.T) {
		c := judged(3)
		c.Rollout.Analysis.ExpectedRate = 30
		c.Rollout.Canary.Duration, c.Rollout.Canary.Weight = 3*time.Second, 10
		v := expect(t, c, "I12", Warned)
		for _, want := range []string{"the canary would get about 9 requests",
			"rollout.analysis.expected_rate 30/s × rollout.canary.weight 10 % × rollout.canary.duration 3s = 9 is below rollout.analysis.min_requests 20",
			"rollout.analysis.on_no_traffic pass",
			"raise rollout.canary.duration to at least 6.667s or rollout.canary.weight to at least 23 %, or lower rollout.analysis.min_requests to at most 9"} {
			if !strings.Contains(v.Sentence, want) {
				t.Errorf("sentence %q lacks %q", v.Sentence, want)
			}
		}
		c.Rollout.Analysis.ExpectedRate = 1 // even 100 % of 1/s for 3s is 3 requests: no weight suffices
		v = expect(t, c, "I12", Warned)
		if strings.Contains(v.Sentence, "rollout.canary.weight to") {
			t.Errorf("sentence %q suggests a weight above 100 %%", v.Sentence)
		}
	})
	requireShippedHold(t, "I12")
}
