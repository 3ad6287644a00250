package invariants

import (
	"fmt"
	"time"

	"github.com/zero502/zero502/infra/config"
)

// evaluateI4: one health check ends before the next begins (an ALB refuses anything else).
func evaluateI4(c *config.Config) Verdict {
	inv := Invariant{
		ID:       "I4",
		Relation: "balancer.timeout < balancer.interval",
		Why:      "ALB rejects anything else; a check must end before the next",
	}
	if reason, skip := noBalancer(c); skip {
		return skipped(inv, reason)
	}
	timeout, interval := c.Balancer.Timeout, c.Balancer.Interval
	nums := []Number{dur("balancer.timeout", timeout), dur("balancer.interval", interval)}
	arith := fmt.Sprintf("%s < %s", timeout, interval)
	if relationI4(timeout, interval) {
		return holds(inv, nums, arith, fmt.Sprintf(
			"balancer.timeout %s ends %s before the next check at balancer.interval %s",
			timeout, interval-timeout, interval))
	}
	return violated(inv, nums, arith, fmt.Sprintf(
		"balancer.timeout %s must be below balancer.interval %s: "+
			"a health check could still run when the next one starts, and an ALB refuses the setting; "+
			"lower balancer.timeout to at most %s or raise balancer.interval to at least %s",
		timeout, interval, below(interval), above(timeout)))
}

// relationI4 is I4: a health check's timeout must be below the interval between checks.
func relationI4(timeout, interval time.Duration) bool {
	return timeout < interval
}
