package invariants

import (
	"fmt"
	"time"

	"github.com/zero502/zero502/infra/config"
)

// evaluateI1: the drain outlasts the balancer's detection, so the balancer has taken the target
// out of rotation before the server stops listening (the source's 502s: drain 5s, detection 10s).
func evaluateI1(c *config.Config) Verdict {
	inv := Invariant{
		ID:       "I1",
		Relation: "drain.window > balancer.interval × balancer.unhealthy_threshold",
		Why:      "the balancer notices before the server stops listening",
	}
	if reason, skip := noBalancer(c); skip {
		return skipped(inv, reason)
	}
	window, interval, threshold := c.Drain.Window, c.Balancer.Interval, c.Balancer.UnhealthyThreshold
	detection := config.MulDuration(interval, threshold)
	nums := []Number{
		dur("drain.window", window), dur("balancer.interval", interval),
		count("balancer.unhealthy_threshold", threshold),
		dur("balancer.interval × balancer.unhealthy_threshold", detection),
	}
	arith := fmt.Sprintf("%s > %s × %d = %s", window, interval, threshold, detection)
	if relationI1(window, detection) {
		return holds(inv, nums, arith, fmt.Sprintf(
			"drain.window %s exceeds balancer.interval %s × balancer.unhealthy_threshold %d = %s by %s",
			window, interval, threshold, detection, window-detection))
	}
	return violated(inv, nums, arith, fmt.Sprintf(
		"drain.window %s must exceed balancer.interval %s × balancer.unhealthy_threshold %d = %s: "+
			"the balancer may still route to the server after it stops listening; "+
			"raise drain.window to at least %s or lower balancer.interval or balancer.unhealthy_threshold",
		window, interval, threshold, detection, above(detection)))
}

// relationI1 is I1: the drain window must exceed the balancer's detection time.
func relationI1(window, detection time.Duration) bool {
	return window > detection
}
