package invariants

import (
	"fmt"
	"strings"
	"time"

	"github.com/zero502/zero502/infra/config"
)

// evaluateI9: a service with drain: balancer knows nothing of the drain; the deployer takes its
// target out of rotation at the balancer, waits until nothing is in flight to it or the drain
// window at the balancer ends, and only then sends the stop signal. A request already in flight
// may wait up to balancer.header_timeout for its response head before the balancer answers 504
// itself, so the window must outlast that wait, or the signal can cut a request still being
// answered. The window is drain.window for the in-house LB (the deployer waits up to it for the
// target's in-flight count to reach 0) and the target group's deregistration delay for an ALB.
func evaluateI9(c *config.Config) Verdict {
	inv := Invariant{
		ID: "I9",
		Relation: "drain window at the balancer > balancer.header_timeout " +
			"(inhouse: drain.window, alb: balancer.deregistration_delay)",
		Why: "the stop signal never cuts a request still waiting for its response",
	}
	if reason, skip := noBalancer(c); skip {
		return skipped(inv, reason)
	}
	if c.Balancer.Kind == config.BalancerDNS {
		return skipped(inv, "balancer.kind dns: the edges forward bytes, and a request through them is answered by "+
			"the LB behind; the wait after an edge leaves the A set is I6's")
	}
	_, services := drainModes(c)
	if len(services) == 0 {
		return skipped(inv, "no service uses drain: balancer: every service drains itself by the handshake")
	}
	key, window := "drain.window", c.Drain.Window
	suggest := above(c.Balancer.HeaderTimeout)
	if c.Balancer.Kind == config.BalancerALB {
		// An ALB's deregistration delay is a whole number of seconds.
		key, window = "balancer.deregistration_delay", c.Balancer.DeregistrationDelay
		suggest = c.Balancer.HeaderTimeout.Truncate(time.Second) + time.Second
	}
	header := c.Balancer.HeaderTimeout
	names := strings.Join(services, ", ")
	nums := []Number{dur(key, window), dur("balancer.header_timeout", header)}
	arith := fmt.Sprintf("%s > %s", window, header)
	if relationI9(window, header) {
		return holds(inv, nums, arith, fmt.Sprintf(
			"%s %s, the longest the %s balancer drains %s before the stop signal, exceeds "+
				"balancer.header_timeout %s, the longest a request in flight waits for its response, by %s",
			key, window, c.Balancer.Kind, names, header, window-header))
	}
	return violated(inv, nums, arith, fmt.Sprintf(
		"%s %s must exceed balancer.header_timeout %s: the deployer stops %s (drain: balancer) once the "+
			"%s balancer's drain window is over, while a request in flight may still wait up to %s for its "+
			"response, so the stop signal can cut it; raise %s to at least %s or lower balancer.header_timeout",
		key, window, header, names, c.Balancer.Kind, header, key, suggest))
}

// relationI9 is I9: the drain window at the balancer must outlast the wait for a response head.
func relationI9(window, headerTimeout time.Duration) bool {
	return window > headerTimeout
}
