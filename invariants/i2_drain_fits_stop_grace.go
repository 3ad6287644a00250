package invariants

import (
	"fmt"
	"strings"
	"time"

	"github.com/zero502/zero502/infra/config"
)

// evaluateI2: whatever a service still does after its stop signal ends before the runtime gives
// up waiting and SIGKILLs it (docker stop -t stop_grace). A service with drain: handshake keeps
// serving for drain.window after the signal, then finishes in-flight work for drain.shutdown; a
// service with drain: balancer was drained at the balancer before the signal, so only its
// shutdown follows it. The config needs the longer of the two whenever any service drains by
// handshake (every service does by default).
func evaluateI2(c *config.Config) Verdict {
	inv := Invariant{
		ID: "I2",
		Relation: "drain.window + drain.shutdown < drain.stop_grace " +
			"(every service drain: balancer: drain.shutdown < drain.stop_grace)",
		Why: "the runtime never SIGKILLs a process that is still draining or finishing requests",
	}
	window, shutdown, grace := c.Drain.Window, c.Drain.Shutdown, c.Drain.StopGrace
	if handshake, balancer := drainModes(c); len(handshake) == 0 && len(balancer) > 0 {
		return balancerDrainFitsGrace(inv, shutdown, grace, balancer)
	}
	drain := config.AddDurations(window, shutdown)
	nums := []Number{
		dur("drain.window", window), dur("drain.shutdown", shutdown),
		dur("drain.window + drain.shutdown", drain), dur("drain.stop_grace", grace),
	}
	arith := fmt.Sprintf("%s + %s = %s < %s", window, shutdown, drain, grace)
	if relationI2(drain, grace) {
		return holds(inv, nums, arith, fmt.Sprintf(
			"drain.window %s + drain.shutdown %s = %s after the stop signal ends %s before drain.stop_grace %s",
			window, shutdown, drain, grace-drain, grace))
	}
	return violated(inv, nums, arith, fmt.Sprintf(
		"drain.window %s + drain.shutdown %s = %s must be below drain.stop_grace %s: a service that drains "+
			"by handshake serves for the window after the stop signal, then finishes its requests, and the "+
			"runtime may SIGKILL it before it is done; raise drain.stop_grace to at least %s or lower "+
			"drain.window or drain.shutdown",
		window, shutdown, drain, grace, above(drain)))
}

// balancerDrainFitsGrace is I2 when every service drains at the balancer: the window is spent
// before the stop signal, so only the shutdown must fit the grace.
func balancerDrainFitsGrace(inv Invariant, shutdown, grace time.Duration, services []string) Verdict {
	nums := []Number{dur("drain.shutdown", shutdown), dur("drain.stop_grace", grace)}
	arith := fmt.Sprintf("%s < %s", shutdown, grace)
	names := strings.Join(services, ", ")
	if relationI2(shutdown, grace) {
		return holds(inv, nums, arith, fmt.Sprintf(
			"every service drains at the balancer before its stop signal (%s), and drain.shutdown %s after "+
				"the signal ends %s before drain.stop_grace %s", names, shutdown, grace-shutdown, grace))
	}
	return violated(inv, nums, arith, fmt.Sprintf(
		"drain.shutdown %s must be below drain.stop_grace %s: the services that drain at the balancer (%s) "+
			"get their stop signal with requests possibly still finishing, and the runtime may SIGKILL them "+
			"first; raise drain.stop_grace to at least %s or lower drain.shutdown",
		shutdown, grace, names, above(shutdown)))
}

// relationI2 is I2: what follows the stop signal (the drain and the shutdown, or the shutdown
// alone) must end before the stop grace.
func relationI2(afterSignal, stopGrace time.Duration) bool {
	return afterSignal < stopGrace
}
