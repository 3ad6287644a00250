package invariants

import (
	"fmt"
	"time"

	"github.com/zero502/zero502/infra/config"
)

// evaluateI6: an edge keeps forwarding until the DNS health checker has removed it from the A set
// and every resolver's cached answer has expired.
func evaluateI6(c *config.Config) Verdict {
	inv := Invariant{
		ID:       "I6",
		Relation: "edge.drain > edge.dns_ttl + edge.check_interval × edge.unhealthy_threshold",
		Why:      "an edge leaves the A set before it stops forwarding",
	}
	e := c.Edge
	if !e.Configured() {
		return skipped(inv, "no edge configured (edge.drain is 0)")
	}
	gone := config.AddDurations(e.DNSTTL, config.MulDuration(e.CheckInterval, e.UnhealthyThreshold))
	nums := []Number{
		dur("edge.drain", e.Drain), dur("edge.dns_ttl", e.DNSTTL), dur("edge.check_interval", e.CheckInterval),
		count("edge.unhealthy_threshold", e.UnhealthyThreshold),
		dur("edge.dns_ttl + edge.check_interval × edge.unhealthy_threshold", gone),
	}
	arith := fmt.Sprintf("%s > %s + %s × %d = %s", e.Drain, e.DNSTTL, e.CheckInterval, e.UnhealthyThreshold, gone)
	if relationI6(e.Drain, gone) {
		return holds(inv, nums, arith, fmt.Sprintf(
			"edge.drain %s exceeds edge.dns_ttl %s + edge.check_interval %s × edge.unhealthy_threshold %d = %s by %s",
			e.Drain, e.DNSTTL, e.CheckInterval, e.UnhealthyThreshold, gone, e.Drain-gone))
	}
	return violated(inv, nums, arith, fmt.Sprintf(
		"edge.drain %s must exceed edge.dns_ttl %s + edge.check_interval %s × edge.unhealthy_threshold %d = %s: "+
			"agents may still resolve and connect to the edge after it stops forwarding; "+
			"raise edge.drain to at least %s or lower edge.dns_ttl, edge.check_interval or edge.unhealthy_threshold",
		e.Drain, e.DNSTTL, e.CheckInterval, e.UnhealthyThreshold, gone, above(gone)))
}

// relationI6 is I6: the edge's drain must exceed the time until no agent resolves it any more.
func relationI6(edgeDrain, gone time.Duration) bool {
	return edgeDrain > gone
}
