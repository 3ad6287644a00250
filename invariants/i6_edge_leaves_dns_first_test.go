package invariants

import (
	"math"
	"testing"
	"time"

	"github.com/zero502/zero502/infra/config"
)

func TestI6EdgeLeavesDNSBeforeItStopsForwarding(t *testing.T) {
	edge := func(drain, ttl, interval time.Duration, threshold int) config.Edge {
		return config.Edge{Drain: drain, DNSTTL: ttl, CheckInterval: interval, UnhealthyThreshold: threshold}
	}
	for _, tc := range []struct {
		name string
		edge config.Edge
		want Status
	}{
		{"production numbers: 90s against 30s + 10s × 3", edge(90*time.Second, 30*time.Second, 10*time.Second, 3), Holds},
		{"exactly when the last resolver forgets", edge(60*time.Second, 30*time.Second, 10*time.Second, 3), Violated},
		{"one millisecond after", edge(60*time.Second+time.Millisecond, 30*time.Second, 10*time.Second, 3), Holds},
		{"drain only as long as the TTL", edge(30*time.Second, 30*time.Second, 10*time.Second, 3), Violated},
		{"no edge configured", edge(0, 30*time.Second, 10*time.Second, 3), Skipped},
		// 5s × 2000000000 wraps around to -2346317h… in time.Duration: the detection saturates instead.
		{"a threshold whose detection overflows", edge(90*time.Second, 30*time.Second, 5*time.Second, 2000000000), Violated},
		{"an interval whose detection overflows", edge(90*time.Second, 30*time.Second, math.MaxInt64, 2), Violated},
		{"a TTL that overflows with the detection", edge(90*time.Second, math.MaxInt64, 10*time.Second, 3), Violated},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c := config.Defaults()
			c.Edge = tc.edge
			expect(t, c, "I6", tc.want)
		})
	}
	requireShippedHold(t, "I6")
}
