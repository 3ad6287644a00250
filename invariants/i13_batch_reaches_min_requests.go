package invariants

import (
	"fmt"
	"math"

	"github.com/zero502/zero502/infra/config"
)

// evaluateI13 (a warning): the in-house LB goes round every target in rotation, so while a batch
// is judged its targets get its share of the hosts of the traffic, and at
// rollout.analysis.expected_rate about rate × size / hosts × rollout.analysis.window requests.
// The smallest batch gets the fewest: the last one when rollout.batch does not divide the hosts
// left after the canary. Fewer than rollout.analysis.min_requests and its verdict is "not enough
// traffic": it passes unjudged (on_no_traffic pass) or fails a good version (fail). The rate is
// an estimate, so this is said and refuses nothing; with no rate (0) it is skipped.
func evaluateI13(c *config.Config) Verdict {
	inv := Invariant{
		ID: "I13",
		Relation: "rollout.analysis.expected_rate × smallest batch / hosts × rollout.analysis.window ≥ " +
			"rollout.analysis.min_requests (a warning)",
		Why: "every batch gets enough requests to be judged, not waved through as \"not enough traffic\"",
	}
	if reason, skip := notJudged(c); skip {
		return skipped(inv, reason)
	}
	an := c.Rollout.Analysis
	hosts := len(c.Hosts)
	size, canary := smallestBatch(c)
	switch {
	case hosts == 0:
		return skipped(inv, "no hosts in the fleet")
	case size == 0:
		return skipped(inv, "the canary is the whole fleet: no batch follows it (I12 is the canary's)")
	case an.ExpectedRate == 0:
		return skipped(inv, "rollout.analysis.expected_rate is 0 (unknown): a batch's traffic cannot be estimated")
	}
	rate, window, minimum := an.ExpectedRate, an.Window, an.MinRequests
	expected := rate * float64(size) * window.Seconds() / float64(hosts)
	which := "the smallest batch"
	if canary > 0 {
		which = "the smallest batch after the canary"
	}
	nums := []Number{
		amount("rollout.analysis.expected_rate", rate), count("smallest batch", size), count("hosts", hosts),
		dur("rollout.analysis.window", window),
		amount("rollout.analysis.expected_rate × smallest batch / hosts × rollout.analysis.window", expected),
		count("rollout.analysis.min_requests", minimum),
	}
	arith := fmt.Sprintf("%s/s × %d/%d × %s = %s ≥ %d", decimal(rate), size, hosts, window, decimal(expected), minimum)
	if relationI13(expected, float64(minimum)) {
		return holds(inv, nums, arith, fmt.Sprintf(
			"at rollout.analysis.expected_rate %s/s %s (%d of %d hosts) gets about %s requests in "+
				"rollout.analysis.window %s, at least rollout.analysis.min_requests %d",
			decimal(rate), which, size, hosts, decimal(expected), window, minimum))
	}
	return warned(inv, nums, arith, fmt.Sprintf(
		"%s (%d of %d hosts) would get about %s requests: rollout.analysis.expected_rate %s/s × %d/%d × "+
			"rollout.analysis.window %s = %s is below rollout.analysis.min_requests %d, so its verdict would be \"not "+
			"enough traffic\" (rollout.analysis.on_no_traffic %s) instead of a judgement; raise rollout.analysis.window "+
			"to at least %s or rollout.batch, or lower rollout.analysis.min_requests to at most %d",
		which, size, hosts, decimal(expected), decimal(rate), size, hosts, window, decimal(expected), minimum,
		an.OnNoTraffic, ceilMillis(float64(minimum)*float64(hosts)/(rate*float64(size))), int(math.Floor(expected+1e-9))))
}

// smallestBatch is the size of the smallest batch the rollout judges after the canary (0 when
// the canary is the whole fleet), and the canary's size (0 without one): the deployer rolls
// min(rollout.canary.hosts, hosts) hosts first, then the rest rollout.batch at a time, the last
// batch holding what is left.
func smallestBatch(c *config.Config) (size, canary int) {
	hosts, batch := len(c.Hosts), max(c.Rollout.Batch, 1)
	canary = min(c.Rollout.Canary.Hosts, hosts)
	rest := hosts - canary
	if rest <= 0 {
		return 0, canary
	}
	return (rest-1)%batch + 1, canary
}

// relationI13 is I13: the smallest batch's expected requests must reach min_requests.
func relationI13(expected, minRequests float64) bool {
	return expected >= minRequests
}
