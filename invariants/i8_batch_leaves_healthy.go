package invariants

import (
	"fmt"

	"github.com/zero502/zero502/infra/config"
)

// evaluateI8: a rollout batch never drains every serving target before a replacement serves (an
// ALB with no healthy target fails open and routes to all of them, draining or not). Stop-first
// drains the batch's old instances before their successors start, so the batch must leave a
// healthy host; start-first keeps each old target in rotation until its successor is healthy at
// the balancer, so any batch up to the whole fleet does, except the rollout.max_unavailable
// hosts of each batch whose old instance drains as the new one starts: those must leave a
// healthy host. The fleet's host count stands for the healthy hosts; the deployer's preflight
// checks the live count with BatchLeavesHealthy (or batchLeavesHealthyWith for the strategy).
func evaluateI8(c *config.Config) Verdict {
	return batchLeavesHealthyWith(c.Rollout.Strategy, c.Rollout.Batch, c.Rollout.MaxUnavailable, len(c.Hosts))
}

// BatchLeavesHealthy is I8 for a stop-first batch size and a number of healthy hosts; it is
// skipped when there are no hosts.
func BatchLeavesHealthy(batch, healthy int) Verdict {
	return batchLeavesHealthyWith(config.StopFirst, batch, 0, healthy)
}

// batchLeavesHealthyWith is I8 for rollout.strategy strategy (stop-first when empty), a batch
// size, rollout.max_unavailable (start-first) and a number of healthy hosts; it is skipped when
// there are no hosts.
func batchLeavesHealthyWith(strategy string, batch, unavailable, healthy int) Verdict {
	startFirst := strategy == config.StartFirst
	inv := Invariant{
		ID:       "I8",
		Relation: "rollout.batch < healthy hosts (start-first: rollout.batch ≤ healthy hosts, rollout.max_unavailable < healthy hosts)",
		Why:      "never drain the last healthy target (ALB fails open)",
	}
	if healthy == 0 {
		return skipped(inv, "no hosts in the fleet")
	}
	nums := []Number{count("rollout.batch", batch), count("healthy hosts", healthy)}
	if startFirst {
		return startFirstBatch(inv, nums, batch, unavailable, healthy)
	}
	arith := fmt.Sprintf("%d < %d", batch, healthy)
	if relationI8(batch, healthy, false) {
		return holds(inv, nums, arith, fmt.Sprintf(
			"rollout.batch %d leaves %d of %d healthy hosts in rotation", batch, healthy-batch, healthy))
	}
	fix := fmt.Sprintf("lower rollout.batch to at most %d or add hosts", healthy-1)
	if healthy == 1 {
		fix = "add a host: a single host cannot be drained without dropping requests"
	}
	fix += ", or set rollout.strategy start-first (the old instance serves until the new one is healthy)"
	return violated(inv, nums, arith, fmt.Sprintf(
		"rollout.batch %d must be below the %d healthy hosts: "+
			"a batch would drain every healthy target and the balancer would route to draining ones or none; %s",
		batch, healthy, fix))
}

// startFirstBatch is I8 under rollout.strategy start-first.
func startFirstBatch(inv Invariant, nums []Number, batch, unavailable, healthy int) Verdict {
	arith := fmt.Sprintf("%d ≤ %d", batch, healthy)
	if unavailable > 0 {
		nums = append(nums, count("rollout.max_unavailable", unavailable))
		if !relationI8(unavailable, healthy, false) {
			nums := []Number{count("rollout.max_unavailable", unavailable), count("healthy hosts", healthy)}
			return violated(inv, nums, fmt.Sprintf("%d < %d", unavailable, healthy), fmt.Sprintf(
				"rollout.max_unavailable %d must be below the %d healthy hosts: that many hosts drain their old instance "+
					"before the new one is in rotation, and with every healthy target draining the balancer would route to "+
					"draining ones or none; lower rollout.max_unavailable to at most %d (0: no host leaves rotation before "+
					"its successor serves)", unavailable, healthy, healthy-1))
		}
	}
	if relationI8(batch, healthy, true) {
		return holds(inv, nums, arith, fmt.Sprintf(
			"rollout.strategy start-first keeps each old target in rotation until its successor is healthy at "+
				"the balancer, so rollout.batch %d of %d healthy hosts drains no serving target before its "+
				"replacement serves (any batch up to the host count holds, a single host included)%s", batch, healthy,
			unavailableNote(unavailable, healthy)))
	}
	return violated(inv, nums, arith, fmt.Sprintf(
		"rollout.batch %d must be at most the %d healthy hosts: a batch cannot hold more hosts than the fleet "+
			"serves with; lower rollout.batch to at most %d", batch, healthy, healthy))
}

// relationI8 is I8: stop-first drains fewer hosts at once than are healthy; start-first, whose
// old targets serve until their successors do, may take every healthy host in one batch.
func relationI8(batch, healthy int, startFirst bool) bool {
	if startFirst {
		return batch <= healthy
	}
	return batch < healthy
}

// unavailableNote says what rollout.max_unavailable leaves in rotation, when it is set.
func unavailableNote(unavailable, healthy int) string {
	if unavailable == 0 {
		return ""
	}
	return fmt.Sprintf("; rollout.max_unavailable %d lets that many hosts of a batch leave rotation as their new instance "+
		"starts, leaving %d of %d healthy hosts in rotation", unavailable, healthy-unavailable, healthy)
}
