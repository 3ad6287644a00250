package invariants

import (
	"math"
	"testing"
	"time"

	"github.com/zero502/zero502/infra/config"
)

func TestI5WatchdogOutwaitsDrain(t *testing.T) {
	for _, tc := range []struct {
		name                     string
		healAfter                int
		interval, drain, shutdwn time.Duration
		want                     Status
	}{
		{"source numbers: (4 − 1) × 60s against 15s + 10s", 4, time.Minute, 15 * time.Second, 10 * time.Second, Holds},
		{"exactly at drain plus shutdown: 3 × 8s = 14s + 10s", 4, 8 * time.Second, 14 * time.Second, 10 * time.Second, Violated},
		{"one millisecond past drain plus shutdown", 4, 8001 * time.Millisecond, 14 * time.Second, 10 * time.Second, Holds},
		{"DESIGN's first rule holds (4 × 8s > 24s) yet a drain spans 4 ticks", 4, 8 * time.Second, 20 * time.Second, 10 * time.Second, Violated},
		{"the original watchdog: healed on 1 failure a minute against a 150s drain", 1, time.Minute, 140 * time.Second, 10 * time.Second, Violated},
		// (2000000000 − 1) × 60s wraps around to a negative duration: the patience saturates instead.
		{"a patience that overflows outlasts any drain", 2000000000, time.Minute, 15 * time.Second, 10 * time.Second, Holds},
		{"a drain that overflows outlasts any patience", 4, time.Minute, math.MaxInt64, 10 * time.Second, Violated},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c := config.Defaults()
			c.Watchdog.HealAfter, c.Watchdog.Interval = tc.healAfter, tc.interval
			c.Drain.Window, c.Drain.Shutdown = tc.drain, tc.shutdwn
			expect(t, c, "I5", tc.want)
		})
	}
	requireShippedHold(t, "I5")
}
