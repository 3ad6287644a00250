package invariants

import (
	"fmt"
	"time"

	"github.com/zero502/zero502/infra/config"
)

// evaluateI16: the deployer stops a host's step that has reported nothing for
// rollout.progress_deadline (a host frozen, a call that hangs). A step that is only slow, within
// its own limits, must never look stalled: every wait it makes without an event is bounded by a
// number of the config, and the deadline must outlast them all, taken together as one service's
// whole step is (an upper bound, counted whether or not each part applies): the drain at the
// balancer (config.BalancerDrainWindow: drain.window, an ALB's balancer.deregistration_delay,
// the DNS set's edge.drain) and the stop (drain.stop_grace),
// the start (rollout.healthy_deadline), the bake (rollout.bake, at least
// balancer.healthy_threshold × balancer.interval) and the per-host hooks that are set
// (hooks.pre_traffic, hooks.post_traffic, each within its timeout).
func evaluateI16(c *config.Config) Verdict {
	inv := Invariant{
		ID: "I16",
		Relation: "rollout.progress_deadline > the drain at the balancer (drain.window; alb: balancer.deregistration_delay; " +
			"dns: edge.drain) + drain.stop_grace + " +
			"rollout.healthy_deadline + rollout.bake + balancer.healthy_threshold × balancer.interval + " +
			"hooks.pre_traffic.timeout + hooks.post_traffic.timeout (the hooks that are set)",
		Why: "a step that is slow within its own limits is never stopped as stalled",
	}
	r, b, d, hk := c.Rollout, c.Balancer, c.Drain, c.Hooks
	pre, post := hookTimeout(hk.PreTraffic), hookTimeout(hk.PostTraffic)
	drainKey, drain := drainAtBalancer(c)
	step := config.AddDurations(drain, d.StopGrace, r.HealthyDeadline, r.Bake,
		config.MulDuration(b.Interval, b.HealthyThreshold), pre, post)
	nums := []Number{
		dur("rollout.progress_deadline", r.ProgressDeadline), dur(drainKey, drain), dur("drain.stop_grace", d.StopGrace),
		dur("rollout.healthy_deadline", r.HealthyDeadline), dur("rollout.bake", r.Bake),
		count("balancer.healthy_threshold", b.HealthyThreshold), dur("balancer.interval", b.Interval),
		dur("hooks.pre_traffic.timeout", pre), dur("hooks.post_traffic.timeout", post), dur("a service's step", step),
	}
	arith := fmt.Sprintf("%s > %s + %s + %s + %s + %d × %s + %s + %s = %s", r.ProgressDeadline, drain, d.StopGrace, r.HealthyDeadline, r.Bake, b.HealthyThreshold, b.Interval, pre, post, step)
	if relationI16(r.ProgressDeadline, step) {
		return holds(inv, nums, arith, fmt.Sprintf("rollout.progress_deadline %s outlasts a service's whole step %s: "+
			"only a step that is stuck is stopped", r.ProgressDeadline, step))
	}
	return violated(inv, nums, arith, fmt.Sprintf("rollout.progress_deadline %s must outlast a service's whole step %s (%s): "+
		"a step that waits within its own limits (a drain, a slow start, the bake, a hook) could be stopped as stalled "+
		"and its host rolled back; raise rollout.progress_deadline to more than %s, or lower rollout.healthy_deadline, "+
		"drain.stop_grace or the hooks' timeouts", r.ProgressDeadline, step, negate(arith), step))
}

// drainAtBalancer is the key and value of how long the deployer may wait for a target drained
// at the balancer (config.BalancerDrainWindow).
func drainAtBalancer(c *config.Config) (string, time.Duration) {
	switch c.Balancer.Kind {
	case config.BalancerALB:
		return "balancer.deregistration_delay", c.BalancerDrainWindow()
	case config.BalancerDNS:
		return "edge.drain", c.BalancerDrainWindow()
	}
	return "drain.window", c.BalancerDrainWindow()
}

// hookTimeout is how long a per-host hook may run: its timeout when it is set, 0 when not.
func hookTimeout(h config.Hook) time.Duration {
	if !h.Set() {
		return 0
	}
	return h.Timeout
}

// relationI16 is I16: the deadline must outlast a service's whole step.
func relationI16(deadline, step time.Duration) bool { return deadline > step }
