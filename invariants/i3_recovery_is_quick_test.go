package invariants

import (
	"math"
	"testing"
	"time"

	"github.com/zero502/zero502/infra/config"
)

func TestI3HostReturnsToRotationQuickly(t *testing.T) {
	for _, tc := range []struct {
		name                  string
		threshold             int
		interval, maxRecovery time.Duration
		want                  Status
	}{
		{"source numbers: 2 × 5s within 30s", 2, 5 * time.Second, 30 * time.Second, Holds},
		{"exactly at max recovery", 2, 5 * time.Second, 10 * time.Second, Holds},
		{"one millisecond over max recovery", 2, 5 * time.Second, 10*time.Second - time.Millisecond, Violated},
		{"ALB's default 5 healthy checks every 30s", 5, 30 * time.Second, 30 * time.Second, Violated},
		{"a threshold whose recovery overflows (wraps to -2346317h…)", 2000000000, 5 * time.Second, 30 * time.Second, Violated},
		{"an interval whose recovery overflows", 2, math.MaxInt64, 30 * time.Second, Violated},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c := config.Defaults()
			c.Balancer.HealthyThreshold, c.Balancer.Interval, c.Drain.MaxRecovery = tc.threshold, tc.interval, tc.maxRecovery
			c.Balancer.Timeout = time.Second // keep I4 out of the way
			expect(t, c, "I3", tc.want)
		})
	}
	requireShippedHold(t, "I3")
}
