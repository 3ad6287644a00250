package invariants

import (
	"fmt"
	"time"

	"github.com/zero502/zero502/infra/config"
)

// evaluateI5: the watchdog needs longer to give up on a service than a drain takes, so a
// draining service never looks dead long enough to be "healed", even if the lock were missed
// (the source's watchdog healed on the first failed check and fought every deploy).
//
// Ticks come every watchdog.interval at a phase the drain does not know, so a failing stretch of
// length D holds up to floor(D / interval) + 1 ticks (the first can land at its very start). The
// watchdog heals on the heal_after-th, so a drain is safe only when
// floor(D / interval) + 1 < heal_after, that is (heal_after − 1) × interval > D. The first
// statement of I5, heal_after × interval > D, allowed one failing tick too many.
//
// The watchdog, not its timer, keeps the ticks that far apart: it counts a failure only about an
// interval after the last counted one, and the heal_after-th only (heal_after − 1) × interval
// after the first (watchdog's notCounted), whatever runs its ticks: a timer ticking more often
// than watchdog.interval, a run by hand or --loop beside it. So the heal comes more than D after
// the first failing check, which is no sooner than the drain's start.
func evaluateI5(c *config.Config) Verdict {
	inv := Invariant{
		ID:       "I5",
		Relation: "(watchdog.heal_after − 1) × watchdog.interval > drain.window + drain.shutdown",
		Why:      "a draining service never looks dead long enough to be healed, even without the lock",
	}
	healAfter, interval := c.Watchdog.HealAfter, c.Watchdog.Interval
	window, shutdown := c.Drain.Window, c.Drain.Shutdown
	patience, drain := config.MulDuration(interval, healAfter-1), config.AddDurations(window, shutdown)
	nums := []Number{
		count("watchdog.heal_after", healAfter), dur("watchdog.interval", interval),
		dur("(watchdog.heal_after − 1) × watchdog.interval", patience),
		dur("drain.window", window), dur("drain.shutdown", shutdown),
		dur("drain.window + drain.shutdown", drain),
	}
	arith := fmt.Sprintf("(%d − 1) × %s = %s > %s + %s = %s", healAfter, interval, patience, window, shutdown, drain)
	if relationI5(patience, drain) {
		return holds(inv, nums, arith, fmt.Sprintf(
			"(watchdog.heal_after %d − 1) × watchdog.interval %s = %s outlasts drain.window %s + drain.shutdown %s = %s by %s: "+
				"a drain fits in fewer than %d failing ticks",
			healAfter, interval, patience, window, shutdown, drain, patience-drain, healAfter))
	}
	// With heal_after 1 (or less) the patience is 0 whatever the interval and the drain: only
	// heal_after can fix it.
	fix := fmt.Sprintf("raise watchdog.heal_after to at least %d: with heal_after %d the watchdog heals on the first "+
		"failed check, whatever watchdog.interval and however short the drain", int(drain/interval)+2, healAfter)
	if healAfter > 1 {
		fix = fmt.Sprintf("raise watchdog.heal_after to at least %d or watchdog.interval to at least %s, or shorten the drain",
			int(drain/interval)+2, above(drain/time.Duration(healAfter-1)))
	}
	return violated(inv, nums, arith, fmt.Sprintf(
		"(watchdog.heal_after %d − 1) × watchdog.interval %s = %s must exceed drain.window %s + drain.shutdown %s = %s: "+
			"a drain can span %d watchdog ticks, so the watchdog may heal a service that is only draining and fight the deploy; %s",
		healAfter, interval, patience, window, shutdown, drain, int(drain/interval)+1, fix))
}

// relationI5 is I5: the watchdog's patience (heal_after − 1 intervals) must exceed the drain and
// the shutdown.
func relationI5(patience, drain time.Duration) bool {
	return patience > drain
}
