package invariants

import (
	"math"
	"regexp"
	"strconv"
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

// Each change a violated I5 suggests makes it hold when made: heal_after raised to what it
// names, or the interval raised to what it names. With heal_after 1 the watchdog heals on the
// first failed check whatever its interval, so no interval can be the fix.
func TestI5SuggestsOnlyChangesThatMakeItHold(t *testing.T) {
	healAfterRE := regexp.MustCompile(`raise watchdog\.heal_after to at least (\d+)`)
	intervalRE := regexp.MustCompile(`watchdog\.interval to at least ([0-9.]+[a-zµ]+)`)
	for _, healAfter := range []int{1, 2, 4} {
		c := config.Defaults()
		c.Watchdog.HealAfter, c.Watchdog.Interval = healAfter, time.Second
		v := expect(t, c, "I5", Violated)
		m := healAfterRE.FindStringSubmatch(v.Sentence)
		if m == nil {
			t.Fatalf("heal_after %d: no heal_after to raise to in %q", healAfter, v.Sentence)
		}
		fixed := *c
		fixed.Watchdog.HealAfter, _ = strconv.Atoi(m[1])
		if got := verdictOf(t, &fixed, "I5"); got.Status != Holds {
			t.Errorf("heal_after %d: watchdog.heal_after %s as suggested: %s", healAfter, m[1], got.Status)
		}
		m = intervalRE.FindStringSubmatch(v.Sentence)
		if m == nil {
			continue
		}
		fixed = *c
		d, err := time.ParseDuration(m[1])
		if err != nil {
			t.Fatal(err)
		}
		fixed.Watchdog.Interval = d
		if got := verdictOf(t, &fixed, "I5"); got.Status != Holds {
			t.Errorf("heal_after %d: watchdog.interval %s as suggested in %q: %s", healAfter, m[1], v.Sentence, got.Status)
		}
	}
}
