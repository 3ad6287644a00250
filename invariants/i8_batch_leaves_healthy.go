package invariants

import (
	"fmt"

	"github.com/zero502/zero502/infra"
)

// evaluateI8: a rollout batch never drains every healthy target at once (an ALB with no healthy
// target fails open and routes to all of them, draining or not). The fleet's host count stands
// for the healthy hosts; the deployer's preflight checks the live count with BatchLeavesHealthy.
func evaluateI8(c *infra.Config) Verdict {
	return BatchLeavesHealthy(c.Rollout.Batch, len(c.Hosts))
}

// BatchLeavesHealthy is I8 for a batch size and a number of healthy hosts; it is skipped when
// there are no hosts.
func BatchLeavesHealthy(batch, healthy int) Verdict {
	inv := Invariant{
		ID:       "I8",
		Relation: "rollout.batch < healthy hosts",
		Why:      "never drain the last healthy target (ALB fails open)",
	}
	if healthy == 0 {
		return skipped(inv, "no hosts in the fleet")
	}
	nums := []Number{count("rollout.batch", batch), count("healthy hosts", healthy)}
	arith := fmt.Sprintf("%d < %d", batch, healthy)
	if relationI8(batch, healthy) {
		return holds(inv, nums, arith, fmt.Sprintf(
			"rollout.batch %d leaves %d of %d healthy hosts in rotation", batch, healthy-batch, healthy))
	}
	fix := fmt.Sprintf("lower rollout.batch to at most %d or add hosts", healthy-1)
	if healthy == 1 {
		fix = "add a host: a single host cannot be drained without dropping requests"
	}
	return violated(inv, nums, arith, fmt.Sprintf(
		"rollout.batch %d must be below the %d healthy hosts: "+
			"a batch would drain every healthy target and the balancer would route to draining ones or none; %s",
		batch, healthy, fix))
}

// relationI8 is I8: the hosts drained at once must be fewer than the healthy hosts.
func relationI8(batch, healthy int) bool {
	return batch < healthy
}
