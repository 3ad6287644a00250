package invariants

import (
	"fmt"
	"math"

	"github.com/zero502/zero502/infra/config"
)

// evaluateI12 (a warning): the canary's targets get rollout.canary.weight % of the traffic
// together while the canary is judged for rollout.canary.duration, so at
// rollout.analysis.expected_rate they get about rate × weight / 100 × duration requests. Fewer
// than rollout.analysis.min_requests and the canary's verdict is "not enough traffic": it passes
// unjudged (on_no_traffic pass) or fails a good version (fail). The rate is an estimate, so this
// is said and refuses nothing; with no rate (0) it is skipped.
func evaluateI12(c *config.Config) Verdict {
	inv := Invariant{
		ID: "I12",
		Relation: "rollout.analysis.expected_rate × rollout.canary.weight % × rollout.canary.duration ≥ " +
			"rollout.analysis.min_requests (a warning)",
		Why: "the canary gets enough requests to be judged, not waved through as \"not enough traffic\"",
	}
	if reason, skip := notJudged(c); skip {
		return skipped(inv, reason)
	}
	ca, an := c.Rollout.Canary, c.Rollout.Analysis
	switch {
	case ca.Hosts == 0:
		return skipped(inv, "rollout.canary.hosts is 0: no canary")
	case an.ExpectedRate == 0:
		return skipped(inv, "rollout.analysis.expected_rate is 0 (unknown): the canary's traffic cannot be estimated")
	}
	rate, weight, duration, minimum := an.ExpectedRate, ca.Weight, ca.Duration, an.MinRequests
	// The product first, the percent last: weight / 100 alone would round a small share to 0.
	expected := rate * float64(weight) * duration.Seconds() / 100
	nums := []Number{
		amount("rollout.analysis.expected_rate", rate), count("rollout.canary.weight", weight),
		dur("rollout.canary.duration", duration),
		amount("rollout.analysis.expected_rate × rollout.canary.weight % × rollout.canary.duration", expected),
		count("rollout.analysis.min_requests", minimum),
	}
	arith := fmt.Sprintf("%s/s × %d %% × %s = %s ≥ %d", decimal(rate), weight, duration, decimal(expected), minimum)
	if relationI12(expected, float64(minimum)) {
		return holds(inv, nums, arith, fmt.Sprintf(
			"at rollout.analysis.expected_rate %s/s the canary (rollout.canary.weight %d %%) gets about %s requests in "+
				"rollout.canary.duration %s, at least rollout.analysis.min_requests %d",
			decimal(rate), weight, decimal(expected), duration, minimum))
	}
	fix := fmt.Sprintf("raise rollout.canary.duration to at least %s", ceilMillis(float64(minimum)*100/(rate*float64(weight))))
	if w := math.Ceil(float64(minimum)*100/(rate*duration.Seconds()) - 1e-9); w <= 100 {
		fix += fmt.Sprintf(" or rollout.canary.weight to at least %d %%", int(w))
	}
	fix += fmt.Sprintf(", or lower rollout.analysis.min_requests to at most %d", int(math.Floor(expected+1e-9)))
	return warned(inv, nums, arith, fmt.Sprintf(
		"the canary would get about %s requests: rollout.analysis.expected_rate %s/s × rollout.canary.weight %d %% × "+
			"rollout.canary.duration %s = %s is below rollout.analysis.min_requests %d, so its verdict would be \"not "+
			"enough traffic\" (rollout.analysis.on_no_traffic %s) instead of a judgement; %s",
		decimal(expected), decimal(rate), weight, duration, decimal(expected), minimum, an.OnNoTraffic, fix))
}

// relationI12 is I12: the canary's expected requests must reach min_requests.
func relationI12(expected, minRequests float64) bool {
	return expected >= minRequests
}
