package invariants

import (
	"fmt"
	"time"

	"github.com/zero502/zero502/infra/config"
)

// evaluateI11: the analysis judges a batch by the outcomes the in-house LB counted between two
// snapshots rollout.analysis.window apart, and the LB counts an attempt when it ends: its
// response head, or its failure. An attempt at a version that never answers (a request path
// stuck on a lock or an exhausted pool while /health still answers) ends only when
// balancer.header_timeout runs out (the LB answers 504). A window no longer than that timeout
// ends before any request sent during it to a hanging version has ended, so the window holds
// none of them: the verdict is "not enough traffic", which rollout.analysis.on_no_traffic pass
// (the default) lets through, batch after batch. Requests sent before the window (the target is
// in rotation during its bake) may end inside it, but the bake's floor,
// balancer.healthy_threshold × interval, is the time the balancer takes to put the target in
// rotation, so the window cannot count on them.
func evaluateI11(c *config.Config) Verdict {
	inv := Invariant{
		ID:       "I11",
		Relation: "rollout.analysis.window > balancer.header_timeout",
		Why:      "the window sees the outcome of a request to a version that never answers (the LB counts it at its 504)",
	}
	if reason, skip := notJudged(c); skip {
		return skipped(inv, reason)
	}
	window, header := c.Rollout.Analysis.Window, c.Balancer.HeaderTimeout
	nums := []Number{dur("rollout.analysis.window", window), dur("balancer.header_timeout", header)}
	arith := fmt.Sprintf("%s > %s", window, header)
	if relationI11(window, header) {
		return holds(inv, nums, arith, fmt.Sprintf(
			"rollout.analysis.window %s exceeds balancer.header_timeout %s by %s: a request sent in the first %s of "+
				"the window to a version that never answers ends (the LB's 504) inside it and is counted as an error",
			window, header, window-header, window-header))
	}
	return violated(inv, nums, arith, fmt.Sprintf(
		"rollout.analysis.window %s must exceed balancer.header_timeout %s: the LB counts a request when it ends, and a "+
			"request to a version that never answers ends only when balancer.header_timeout runs out, after the "+
			"window, so the window sees none of the requests sent during it to a hanging version and its verdict is "+
			"\"not enough traffic\" (rollout.analysis.on_no_traffic %s); raise rollout.analysis.window to at least %s "+
			"or lower balancer.header_timeout",
		window, header, c.Rollout.Analysis.OnNoTraffic, above(header)))
}

// relationI11 is I11: the analysis window must outlast the longest wait for a response head.
func relationI11(window, headerTimeout time.Duration) bool {
	return window > headerTimeout
}
