package invariants

import (
	"fmt"
	"strings"
	"time"

	"github.com/zero502/zero502/infra"
)

// The constructors below keep each invariant's file about its relation and its words.

func holds(inv Invariant, nums []Number, arith, sentence string) Verdict {
	return Verdict{Invariant: inv, Status: Holds, Numbers: nums, Arithmetic: arith, Sentence: sentence}
}

// violated builds a violated verdict; arith is written with the relation that should hold, and
// is shown with its negation so that it reads true ("10s ≤ 5s × 2 = 10s").
func violated(inv Invariant, nums []Number, arith, sentence string) Verdict {
	arith = strings.NewReplacer(" > ", " ≤ ", " < ", " ≥ ", " ≤ ", " > ").Replace(arith)
	return Verdict{Invariant: inv, Status: Violated, Numbers: nums, Arithmetic: arith, Sentence: sentence}
}

func skipped(inv Invariant, reason string) Verdict {
	return Verdict{Invariant: inv, Status: Skipped, Sentence: reason}
}

// noBalancer is the reason balancer relations are skipped when balancer.kind is none.
func noBalancer(c *infra.Config) (string, bool) {
	if c.Balancer.Kind == infra.BalancerNone {
		return "balancer.kind is none: no balancer checks health or pools connections", true
	}
	return "", false
}

// dur is a duration number.
func dur(name string, d time.Duration) Number { return Number{Name: name, Value: d.String()} }

// count is a whole-number number.
func count(name string, n int) Number { return Number{Name: name, Value: fmt.Sprint(n)} }

// above is the smallest whole number of milliseconds strictly greater than d: the least value a
// "must exceed d" suggestion can name in a config file.
func above(d time.Duration) time.Duration {
	return d.Truncate(time.Millisecond) + time.Millisecond
}

// below is the largest whole number of milliseconds strictly less than d.
func below(d time.Duration) time.Duration {
	if t := d.Truncate(time.Millisecond); t < d {
		return t
	}
	return d - time.Millisecond
}
