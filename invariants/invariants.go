// Package invariants owns the relations between zero502's timing numbers (docs/ARCHITECTURE.md,
// "The numbers and their invariants"): drain against detection, drain plus shutdown against the
// stop grace, recovery, health-check timeout, the watchdog's patience, the edge's drain,
// keep-alive idle timeouts, the rollout batch and the balancer-side drain against the wait for a
// response. Evaluate gives every invariant's verdict (holds, violated or skipped) with its
// numbers; Check returns only the violations, each with a sentence a person can act on; Summary
// counts the violations (and the live settings that drifted) and says them in one error.
//
// Each invariant lives in its own file (i1_…go to i9_…go) and keeps its relation in one small
// function named relationIn, so the mutation harness (invariants/mutate) can find and mutate
// every relational operator; its test is named TestIn… so the harness knows which test must
// kill which mutant.
package invariants

import (
	"github.com/zero502/zero502/infra"
)

// Status is an invariant's verdict on one config.
type Status string

// The three verdicts. Skipped means the relation does not apply (no edge configured, no balancer,
// no hosts); it is not a pass.
const (
	Holds    Status = "holds"
	Violated Status = "violated"
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
	ID       string `json:"id"`       // I1…I9
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

// Violation is a violated invariant: its ID, the numbers involved and what to change.
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
func evaluators() []func(*infra.Config) Verdict {
	return []func(*infra.Config) Verdict{
		evaluateI1, evaluateI2, evaluateI3, evaluateI4,
		evaluateI5, evaluateI6, evaluateI7, evaluateI8, evaluateI9,
	}
}

// Evaluate returns the verdict of every invariant I1…I9 on cfg, in ID order.
func Evaluate(cfg *infra.Config) []Verdict {
	fns := evaluators()
	out := make([]Verdict, 0, len(fns))
	for _, fn := range fns {
		out = append(out, fn(cfg))
	}
	return out
}

// Check returns every violated invariant of cfg, in ID order; none means every applicable
// relation holds.
func Check(cfg *infra.Config) []Violation {
	var out []Violation
	for _, v := range Evaluate(cfg) {
		if v.Status == Violated {
			out = append(out, Violation{ID: v.ID, Numbers: v.Numbers, Sentence: v.Sentence})
		}
	}
	return out
}

// All lists the invariants themselves (ID, relation, why), for documentation and help texts.
func All() []Invariant {
	var out []Invariant
	for _, v := range Evaluate(infra.Defaults()) {
		out = append(out, v.Invariant)
	}
	return out
}
