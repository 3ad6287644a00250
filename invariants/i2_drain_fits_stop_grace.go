package invariants

import (
	"fmt"
	"time"

	"github.com/zero502/zero502/infra"
)

// evaluateI2: the whole drain (window, then shutdown of in-flight work) ends before the runtime
// gives up waiting and SIGKILLs the process (docker stop -t stop_grace).
func evaluateI2(c *infra.Config) Verdict {
	inv := Invariant{
		ID:       "I2",
		Relation: "drain.window + drain.shutdown < drain.stop_grace",
		Why:      "the runtime never SIGKILLs a draining process",
	}
	window, shutdown, grace := c.Drain.Window, c.Drain.Shutdown, c.Drain.StopGrace
	drain := window + shutdown
	nums := []Number{
		dur("drain.window", window), dur("drain.shutdown", shutdown),
		dur("drain.window + drain.shutdown", drain), dur("drain.stop_grace", grace),
	}
	arith := fmt.Sprintf("%s + %s = %s < %s", window, shutdown, drain, grace)
	if relationI2(drain, grace) {
		return holds(inv, nums, arith, fmt.Sprintf(
			"drain.window %s + drain.shutdown %s = %s ends %s before drain.stop_grace %s",
			window, shutdown, drain, grace-drain, grace))
	}
	return violated(inv, nums, arith, fmt.Sprintf(
		"drain.window %s + drain.shutdown %s = %s must be below drain.stop_grace %s: "+
			"the runtime may SIGKILL the process while it still drains or finishes requests; "+
			"raise drain.stop_grace to at least %s or lower drain.window or drain.shutdown",
		window, shutdown, drain, grace, above(drain)))
}

// relationI2 is I2: the drain and the shutdown must end before the stop grace.
func relationI2(drain, stopGrace time.Duration) bool {
	return drain < stopGrace
}
