package invariants

import (
	"fmt"
	"time"

	"github.com/zero502/zero502/infra/config"
)

// evaluateI7: the app keeps an idle keep-alive connection open longer than the balancer does, so
// the balancer is always the side that closes it (the classic 502 without any deploy).
func evaluateI7(c *config.Config) Verdict {
	inv := Invariant{
		ID:       "I7",
		Relation: "app.keepalive_idle_timeout > balancer.idle_timeout",
		Why:      "the balancer never reuses a socket the app just closed",
	}
	if reason, skip := noBalancer(c); skip {
		return skipped(inv, reason)
	}
	app, lb := c.App.KeepAliveIdleTimeout, c.Balancer.IdleTimeout
	nums := []Number{dur("app.keepalive_idle_timeout", app), dur("balancer.idle_timeout", lb)}
	arith := fmt.Sprintf("%s > %s", app, lb)
	if relationI7(app, lb) {
		return holds(inv, nums, arith, fmt.Sprintf(
			"app.keepalive_idle_timeout %s outlasts balancer.idle_timeout %s by %s", app, lb, app-lb))
	}
	return violated(inv, nums, arith, fmt.Sprintf(
		"app.keepalive_idle_timeout %s must exceed balancer.idle_timeout %s: "+
			"the balancer may send a request on a keep-alive connection the app has just closed (a 502 without any deploy); "+
			"raise app.keepalive_idle_timeout to at least %s or lower balancer.idle_timeout",
		app, lb, above(lb)))
}

// relationI7 is I7: the app's keep-alive idle timeout must exceed the balancer's.
func relationI7(appIdle, balancerIdle time.Duration) bool {
	return appIdle > balancerIdle
}
