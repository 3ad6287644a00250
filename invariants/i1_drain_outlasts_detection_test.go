package invariants

import (
	"math"
	"strings"
	"testing"
	"time"

	"github.com/zero502/zero502/infra/config"
)

func TestI1DrainOutlastsDetection(t *testing.T) {
	for _, tc := range []struct {
		name            string
		drain, interval time.Duration
		threshold       int
		want            Status
	}{
		{"source numbers: 15s drain, 5s × 2", 15 * time.Second, 5 * time.Second, 2, Holds},
		{"exactly at detection", 10 * time.Second, 5 * time.Second, 2, Violated},
		{"one millisecond past detection", 10*time.Second + time.Millisecond, 5 * time.Second, 2, Holds},
		{"the original bug: 5s drain against 5s × 2", 5 * time.Second, 5 * time.Second, 2, Violated},
		{"threshold raised to 3 catches up with the drain", 15 * time.Second, 5 * time.Second, 3, Violated},
		// 5s × 2000000000 wraps around to -2346317h… in time.Duration: the detection saturates instead.
		{"a threshold whose detection overflows", 15 * time.Second, 5 * time.Second, 2000000000, Violated},
		{"an interval whose detection overflows", 15 * time.Second, math.MaxInt64, 2, Violated},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c := config.Defaults()
			c.Drain.Window, c.Balancer.Interval, c.Balancer.UnhealthyThreshold = tc.drain, tc.interval, tc.threshold
			expect(t, c, "I1", tc.want)
		})
	}
	t.Run("the sentence names the keys, the numbers and the fix", func(t *testing.T) {
		c := config.Defaults()
		c.Drain.Window = 10 * time.Second
		v := expect(t, c, "I1", Violated)
		for _, want := range []string{
			"drain.window 10s must exceed balancer.interval 5s × balancer.unhealthy_threshold 2 = 10s",
			"raise drain.window to at least 10.001s",
		} {
			if !strings.Contains(v.Sentence, want) {
				t.Errorf("sentence %q lacks %q", v.Sentence, want)
			}
		}
		if got := (Violation{Numbers: v.Numbers}); !hasNumber(got, "drain.window", "10s") ||
			!hasNumber(got, "balancer.interval × balancer.unhealthy_threshold", "10s") {
			t.Errorf("numbers %v lack drain.window 10s or the detection 10s", v.Numbers)
		}
	})
	t.Run("an overflowing detection is the largest duration, never a negative one", func(t *testing.T) {
		c := config.Defaults()
		c.Balancer.UnhealthyThreshold = 2000000000
		v := expect(t, c, "I1", Violated)
		if want := "15s ≤ 5s × 2000000000 = 2562047h47m16.854775807s"; v.Arithmetic != want {
			t.Errorf("arithmetic %q, want %q", v.Arithmetic, want)
		}
	})
	requireShippedHold(t, "I1")
}

func hasNumber(v Violation, name, value string) bool {
	got, ok := v.Value(name)
	return ok && got == value
}
