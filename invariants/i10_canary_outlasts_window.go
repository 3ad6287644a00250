package invariants

import (
	"fmt"
	"time"

	"github.com/zero502/zero502/infra/config"
)

// evaluateI10: the canary (the first rollout.canary.hosts hosts, given only rollout.canary.weight
// % of the traffic) is judged for rollout.canary.duration, every later batch for
// rollout.analysis.window. The canary is the step meant to catch a bad version before the rest
// of the fleet gets it, on a small share of the users; judged no longer than a batch that gets
// its full share, it would be the weakest gate of the rollout instead of the strongest.
func evaluateI10(c *config.Config) Verdict {
	inv := Invariant{
		ID:       "I10",
		Relation: "rollout.canary.duration > rollout.analysis.window",
		Why:      "the canary is judged longer than any batch: it gets a small share of the traffic and goes first",
	}
	if reason, skip := notJudged(c); skip {
		return skipped(inv, reason)
	}
	if c.Rollout.Canary.Hosts == 0 {
		return skipped(inv, "rollout.canary.hosts is 0: no canary, the first batch is an ordinary batch")
	}
	duration, window, weight := c.Rollout.Canary.Duration, c.Rollout.Analysis.Window, c.Rollout.Canary.Weight
	nums := []Number{dur("rollout.canary.duration", duration), dur("rollout.analysis.window", window)}
	arith := fmt.Sprintf("%s > %s", duration, window)
	if relationI10(duration, window) {
		return holds(inv, nums, arith, fmt.Sprintf(
			"rollout.canary.duration %s judges the canary (rollout.canary.hosts %d, %d %% of the traffic) %s longer "+
				"than rollout.analysis.window %s judges each later batch",
			duration, c.Rollout.Canary.Hosts, weight, duration-window, window))
	}
	return violated(inv, nums, arith, fmt.Sprintf(
		"rollout.canary.duration %s must exceed rollout.analysis.window %s: the canary, the first hosts on the new "+
			"version with only rollout.canary.weight %d %% of the traffic, would be judged no longer than each later "+
			"batch, on less evidence, though it is the step meant to catch a bad version before the rest of the fleet "+
			"gets it; raise rollout.canary.duration to at least %s or lower rollout.analysis.window",
		duration, window, weight, above(window)))
}

// relationI10 is I10: the canary must be judged longer than a batch.
func relationI10(canary, window time.Duration) bool {
	return canary > window
}
