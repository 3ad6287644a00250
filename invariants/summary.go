package invariants

import (
	"errors"
	"fmt"
	"strings"
)

// Summary is the conclusion drawn from one evaluation: which invariants are violated and, when
// the numbers were read back from the running balancer, which of its settings drifted from the
// config. `zero502 invariants` prints it and exits 1 on Err.
type Summary struct {
	// Verdicts are Evaluate's, on the config or on the live balancer's numbers.
	Verdicts []Verdict
	// Live is true when Verdicts were evaluated on the numbers the balancer really runs.
	Live bool
	// Drifted names every live setting that differs from the config (balancer.interval, …).
	Drifted []string
}

// Violated returns the IDs of the violated invariants, in ID order.
func (s Summary) Violated() []string {
	var ids []string
	for _, v := range s.Verdicts {
		if v.Status == Violated {
			ids = append(ids, v.ID)
		}
	}
	return ids
}

// Warned returns the IDs of the invariants that warn, in ID order. Warnings do not make Err.
func (s Summary) Warned() []string {
	var ids []string
	for _, v := range s.Verdicts {
		if v.Status == Warned {
			ids = append(ids, v.ID)
		}
	}
	return ids
}

// Err is nil when every applicable invariant holds (or only warns) and no live setting drifted. Otherwise it
// says, in one sentence per problem, how many settings drifted (and how to bring the balancer
// and the config together) and how many invariants are violated, naming each.
func (s Summary) Err() error {
	var problems []string
	if len(s.Drifted) > 0 {
		problems = append(problems, fmt.Sprintf("%d live setting(s) drifted from the config: %s (run zero502 provision, "+
			"restart the balancer from this config, or change the config to match)", len(s.Drifted), strings.Join(s.Drifted, ", ")))
	}
	if bad := s.Violated(); len(bad) > 0 {
		on := ""
		if s.Live {
			on = " on the live balancer's numbers"
		}
		problems = append(problems, fmt.Sprintf("%d invariant(s) violated%s: %s", len(bad), on, strings.Join(bad, ", ")))
	}
	if len(problems) == 0 {
		return nil
	}
	return errors.New(strings.Join(problems, "; "))
}
