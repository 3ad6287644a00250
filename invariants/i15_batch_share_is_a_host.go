package invariants

import (
	"fmt"

	"github.com/zero502/zero502/infra/config"
)

// evaluateI15 (a warning): rollout.batch written as a share of the fleet ("20%") is rounded down
// to whole hosts, and a share that comes to less than one host is taken as one, as Nomad, ECS
// and CodeDeploy do: the deploy then takes more of the fleet out of rotation at once than the
// share asked (one host of ten for "5%" is 10 %). The share must come to at least one host:
// share × hosts ≥ 100 %. A batch written as a number, or a fleet with no hosts, is skipped.
func evaluateI15(c *config.Config) Verdict {
	inv := Invariant{
		ID:       "I15",
		Relation: "rollout.batch (a share, in %) × hosts ≥ 100 % (a warning)",
		Why:      "a batch given as a share of the fleet takes out no more of it than the share says",
	}
	share, hosts := c.Rollout.BatchShare, len(c.Hosts)
	if share == 0 {
		return skipped(inv, "rollout.batch is a number of hosts, not a share of the fleet")
	}
	if hosts == 0 {
		return skipped(inv, "no hosts")
	}
	nums := []Number{{Name: "rollout.batch", Value: fmt.Sprintf("%d%%", share)}, count("hosts", hosts),
		count("hosts per batch", c.Rollout.Batch)}
	arith := fmt.Sprintf("%d%% × %d = %d%% ≥ 100%%", share, hosts, share*hosts)
	if relationI15(share, hosts) {
		return holds(inv, nums, arith, fmt.Sprintf("rollout.batch %d%% of %d hosts is %d host(s) at once", share, hosts, c.Rollout.Batch))
	}
	least := (100 + hosts - 1) / hosts
	return warned(inv, nums, arith,
		fmt.Sprintf("rollout.batch %d%% of %d hosts comes to less than one host and is taken as 1 (%d%% of the fleet, more than "+
			"the %d%% asked); write a number of hosts (batch: 1) or a share of at least %d%%", share, hosts, 100/hosts, share, least))
}

// relationI15 is I15: the share must come to a whole host.
func relationI15(share, hosts int) bool { return share*hosts >= 100 }
