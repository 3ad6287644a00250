package invariants

import (
	"fmt"
	"time"

	"github.com/zero502/zero502/infra/config"
)

// evaluateI14 (a warning): a fleet lock held on a lock host over SSH is a lease, renewed by the
// deployer every config.LockRenewal on the lock's session. A deployer cut off by a silent
// partition (its session never closed) notices before its next batch and stops there; the lock
// host frees the lock once rollout.lock_lease has passed without a renewal. So that the batch
// in progress ends before another deploy can take the lock, the lease must outlast a batch's
// worst case: for each service a drain (drain.window, or the ALB's deregistration delay) and a
// stop (drain.stop_grace), a start that may take rollout.healthy_deadline, and the same again
// to roll it back; then the bake, the analysis window and the canary; plus one renewal interval.
// It is an upper bound, counted whether or not each part applies. A local lock host's lock is a
// file on the deployer's machine, with no lease: skipped.
func evaluateI14(c *config.Config) Verdict {
	inv := Invariant{
		ID: "I14",
		Relation: "rollout.lock_lease > 2 × services × (drain.window + balancer.deregistration_delay + drain.stop_grace + " +
			"rollout.healthy_deadline) + rollout.bake + balancer.healthy_threshold × balancer.interval + " +
			"rollout.analysis.window + rollout.canary.duration + the renewal interval (a warning)",
		Why: "a deployer cut off from the lock host mid-batch ends that batch and stops before the lock is freed for another deploy",
	}
	h, ok := c.FleetLockHost()
	if !ok || h.SSH == "" {
		return skipped(inv, "the fleet lock is a file on the deployer's machine (no lock host over ssh): it has no lease")
	}
	r, b, d := c.Rollout, c.Balancer, c.Drain
	services := len(c.Services)
	perService := config.AddDurations(d.Window, b.DeregistrationDelay, d.StopGrace, r.HealthyDeadline)
	worst := config.AddDurations(config.MulDuration(perService, 2*services), r.Bake, config.MulDuration(b.Interval, b.HealthyThreshold),
		r.Analysis.Window, r.Canary.Duration, config.MaxLockRenewal)
	nums := []Number{
		dur("rollout.lock_lease", r.LockLease), count("services", services), dur("drain.window", d.Window),
		dur("balancer.deregistration_delay", b.DeregistrationDelay), dur("drain.stop_grace", d.StopGrace),
		dur("rollout.healthy_deadline", r.HealthyDeadline), dur("rollout.bake", r.Bake),
		count("balancer.healthy_threshold", b.HealthyThreshold), dur("balancer.interval", b.Interval),
		dur("rollout.analysis.window", r.Analysis.Window), dur("rollout.canary.duration", r.Canary.Duration),
		dur("renewal interval", config.MaxLockRenewal), dur("a batch's worst case", worst),
	}
	arith := fmt.Sprintf("%s > 2 × %d × (%s + %s + %s + %s) + %s + %d × %s + %s + %s + %s = %s", r.LockLease, services,
		d.Window, b.DeregistrationDelay, d.StopGrace, r.HealthyDeadline, r.Bake, b.HealthyThreshold, b.Interval,
		r.Analysis.Window, r.Canary.Duration, config.MaxLockRenewal, worst)
	if relationI14(r.LockLease, worst) {
		return holds(inv, nums, arith, fmt.Sprintf("rollout.lock_lease %s outlasts a batch's worst case %s: a deployer cut off "+
			"from lock host %s ends its batch before the lock is freed", r.LockLease, worst, h.Name))
	}
	return warned(inv, nums, arith, fmt.Sprintf("rollout.lock_lease %s does not outlast a batch's worst case %s (%s): a deployer "+
		"cut off from lock host %s by a silent partition may still be in its batch when the lease ends and another deploy "+
		"takes the lock; raise rollout.lock_lease to more than %s, or lower rollout.healthy_deadline or drain.stop_grace",
		r.LockLease, worst, negate(arith), h.Name, worst))
}

// relationI14 is I14: the lease must outlast the worst case.
func relationI14(lease, worst time.Duration) bool { return lease > worst }
