// Package invariants owns the relations between zero502's timing numbers (docs/ARCHITECTURE.md,
// "The numbers and their invariants"): drain against detection (I1), drain plus shutdown against
// the stop grace (I2), recovery (I3), health-check timeout (I4), the watchdog's patience (I5),
// the edge's drain (I6), keep-alive idle timeouts (I7), the rollout batch (I8), the
// balancer-side drain against the wait for a response (I9), and the analysis of each batch: the
// canary judged longer than a batch (I10), the window longer than the wait for a response (I11),
// two warnings, the canary's (I12) and the smallest batch's (I13) expected traffic against
// rollout.analysis.min_requests, a third, the fleet lock's lease against a batch's worst
// case (I14), a fourth, a batch given as a share of the fleet coming to a whole host (I15), and
// the progress deadline against a service's whole step (I16). Evaluate gives every invariant's verdict (holds, violated,
// warned or skipped) with its numbers; Check returns only the violations, each with a sentence a
// person can act on; Warnings returns the warnings, which refuse nothing; Summary counts the
// violations (and the live settings that drifted) and says them in one error.
//
// Each invariant lives in its own file (i1_…go to i16_…go) and keeps its relation in one small
// function named relationIn, so the mutation harness (invariants/mutate) can find and mutate
// every relational operator; its test is named TestIn… so the harness knows which test must
// kill which mutant. IDs are stable: a new invariant takes the next number.
package invariants

import (
	"github.com/zero502/zero502/infra/config"
)

// Status is an invariant's verdict on one config.
type Status string

// The four verdicts. Skipped means the relation does not apply (no edge configured, no balancer,
// no hosts); it is not a pass. Warned is the verdict of a warning-level invariant (I12–I15)
// whose relation does not hold: it rests on an estimate (rollout.analysis.expected_rate; a
// batch's worst case), so it is said, never refused: Check leaves it out, Warnings returns it, and Summary.Err ignores it.
const (
	Holds    Status = "holds"
	Violated Status = "violated"
	Warned   Status = "warned"
	Skipped  Status = "skipped"
)

// Number is one number an invariant relates: a config key (drain.window) or a derived quantity
// (balancer.interval × balancer.unhealthy_threshold) and its value as the config writes it.
type Number struct {
	Name  string `json:"name"`
	Value string `json:"value"`
}

// Invariant is one relation of docs/ARCHITECTURE.md, "The numbers and their invariants".
type Invariant struct {
	ID       string `json:"id"`       // I1…I16
	Relation string `json:"relation"` // in the config's key names
	Why      string `json:"why"`      // what goes wrong when it breaks
}

// Verdict is one invariant evaluated on one config.
type Verdict struct {
	Invariant
	Status Status `json:"status"`
	// Numbers are the values involved, in the order the relation names them.
	Numbers []Number `json:"numbers,omitempty"`
	// Arithmetic is the relation with the numbers put in, e.g. "15s > 5s × 2 = 10s".
	Arithmetic string `json:"arithmetic,omitempty"`
	// Sentence says what holds with what margin, what is wrong and what to change, or why the
	// invariant was skipped.
	Sentence string `json:"sentence"`
}

// Violation is a violated invariant (or, from Warnings, a warning): its ID, the numbers involved
// and what to change.
type Violation struct {
	ID       string   `json:"id"`
	Numbers  []Number `json:"numbers"`
	Sentence string   `json:"sentence"`
}

func (v Violation) Error() string { return v.ID + ": " + v.Sentence }

// Value returns the value of the number named name, if the violation involves it.
func (v Violation) Value(name string) (string, bool) {
	for _, n := range v.Numbers {
		if n.Name == name {
			return n.Value, true
		}
	}
	return "", false
}

// evaluators lists every invariant's evaluation in ID order.
func evaluators() []func(*config.Config) Verdict {
	return []func(*config.Config) Verdict{
		evaluateI1, evaluateI2, evaluateI3, evaluateI4,
		evaluateI5, evaluateI6, evaluateI7, evaluateI8, evaluateI9,
		evaluateI10, evaluateI11, evaluateI12, evaluateI13, evaluateI14, evaluateI15, evaluateI16,
	}
}

// Evaluate returns the verdict of every invariant I1…I16 on cfg, in ID order.
func Evaluate(cfg *config.Config) []Verdict {
	fns := evaluators()
	out := make([]Verdict, 0, len(fns))
	for _, fn := range fns {
		out = append(out, fn(cfg))
	}
	return out
}

// Check returns every violated invariant of cfg, in ID order; none means every applicable
// relation holds (warnings aside: see Warnings).
func Check(cfg *config.Config) []Violation {
	return with(cfg, Violated)
}

// Warnings returns every warning of cfg (a warning-level invariant whose relation does not
// hold), in ID order. A warning refuses nothing: a caller says it and goes on.
func Warnings(cfg *config.Config) []Violation {
	return with(cfg, Warned)
}

// with returns cfg's verdicts of status st as violations.
func with(cfg *config.Config, st Status) []Violation {
	var out []Violation
	for _, v := range Evaluate(cfg) {
		if v.Status == st {
			out = append(out, Violation{ID: v.ID, Numbers: v.Numbers, Sentence: v.Sentence})
		}
	}
	return out
}

// All lists the invariants themselves (ID, relation, why), for documentation and help texts.
func All() []Invariant {
	var out []Invariant
	for _, v := range Evaluate(config.Defaults()) {
		out = append(out, v.Invariant)
	}
	return out
}
