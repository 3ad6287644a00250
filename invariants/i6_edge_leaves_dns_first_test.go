package invariants

import (
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
	} {
		t.Run(tc.name, func(t *testing.T) {
			c := config.Defaults()
			c.Edge = tc.edge
			expect(t, c, "I6", tc.want)
		})
	}
	requireShippedHold(t, "I6")
}
