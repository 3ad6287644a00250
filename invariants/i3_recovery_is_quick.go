package invariants

import (
	"fmt"
	"time"

	"github.com/zero502/zero502/infra/config"
)

// evaluateI3: a healthy host is back in rotation within drain.max_recovery, so a rolling deploy
// does not leave the fleet short for long.
func evaluateI3(c *config.Config) Verdict {
	inv := Invariant{
		ID:       "I3",
		Relation: "balancer.healthy_threshold × balancer.interval ≤ drain.max_recovery",
		Why:      "a host returns to rotation quickly",
	}
	if reason, skip := noBalancer(c); skip {
		return skipped(inv, reason)
	}
	threshold, interval, maxRecovery := c.Balancer.HealthyThreshold, c.Balancer.Interval, c.Drain.MaxRecovery
	recovery := config.MulDuration(interval, threshold)
	nums := []Number{
		count("balancer.healthy_threshold", threshold), dur("balancer.interval", interval),
		dur("balancer.healthy_threshold × balancer.interval", recovery), dur("drain.max_recovery", maxRecovery),
	}
	arith := fmt.Sprintf("%d × %s = %s ≤ %s", threshold, interval, recovery, maxRecovery)
	if relationI3(recovery, maxRecovery) {
		return holds(inv, nums, arith, fmt.Sprintf(
			"balancer.healthy_threshold %d × balancer.interval %s = %s is within drain.max_recovery %s",
			threshold, interval, recovery, maxRecovery))
	}
	return violated(inv, nums, arith, fmt.Sprintf(
		"balancer.healthy_threshold %d × balancer.interval %s = %s must not exceed drain.max_recovery %s: "+
			"a healthy host stays out of rotation too long and the fleet runs short during a deploy; "+
			"raise drain.max_recovery to at least %s or lower balancer.healthy_threshold or balancer.interval",
		threshold, interval, recovery, maxRecovery, recovery))
}

// relationI3 is I3: the time back into rotation must be at most drain.max_recovery.
func relationI3(recovery, maxRecovery time.Duration) bool {
	return recovery <= maxRecovery
}
