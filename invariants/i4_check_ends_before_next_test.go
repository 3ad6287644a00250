package invariants

import (
	"testing"
	"time"

	"github.com/zero502/zero502/infra/config"
)

func TestI4HealthCheckEndsBeforeNext(t *testing.T) {
	for _, tc := range []struct {
		name              string
		timeout, interval time.Duration
		want              Status
	}{
		{"source numbers: 2s timeout every 5s", 2 * time.Second, 5 * time.Second, Holds},
		{"exactly at the interval", 5 * time.Second, 5 * time.Second, Violated},
		{"one millisecond below the interval", 5*time.Second - time.Millisecond, 5 * time.Second, Holds},
		{"timeout twice the interval", 10 * time.Second, 5 * time.Second, Violated},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c := config.Defaults()
			c.Balancer.Timeout, c.Balancer.Interval = tc.timeout, tc.interval
			expect(t, c, "I4", tc.want)
		})
	}
	requireShippedHold(t, "I4")
}
