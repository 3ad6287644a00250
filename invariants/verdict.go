package invariants

import (
	"fmt"
	"math"
	"strconv"
	"strings"
	"time"

	"github.com/zero502/zero502/infra/config"
)

// The constructors below keep each invariant's file about its relation and its words.

func holds(inv Invariant, nums []Number, arith, sentence string) Verdict {
	return Verdict{Invariant: inv, Status: Holds, Numbers: nums, Arithmetic: arith, Sentence: sentence}
}

// violated builds a violated verdict; arith is written with the relation that should hold, and
// is shown with its negation so that it reads true ("10s ≤ 5s × 2 = 10s").
func violated(inv Invariant, nums []Number, arith, sentence string) Verdict {
	return Verdict{Invariant: inv, Status: Violated, Numbers: nums, Arithmetic: negate(arith), Sentence: sentence}
}

// warned builds the verdict of a warning-level invariant whose relation does not hold; arith is
// negated as for violated ("12 < 20").
func warned(inv Invariant, nums []Number, arith, sentence string) Verdict {
	return Verdict{Invariant: inv, Status: Warned, Numbers: nums, Arithmetic: negate(arith), Sentence: sentence}
}

// negate turns a relation's arithmetic into its negation.
func negate(arith string) string {
	return strings.NewReplacer(" > ", " ≤ ", " < ", " ≥ ", " ≤ ", " > ", " ≥ ", " < ").Replace(arith)
}

func skipped(inv Invariant, reason string) Verdict {
	return Verdict{Invariant: inv, Status: Skipped, Sentence: reason}
}

// noBalancer is the reason balancer relations are skipped when balancer.kind is none.
func noBalancer(c *config.Config) (string, bool) {
	if c.Balancer.Kind == config.BalancerNone {
		return "balancer.kind is none: no balancer checks health or pools connections", true
	}
	return "", false
}

// notJudged is the reason the analysis relations (I10–I13) are skipped: the deployer judges a
// batch only with rollout.analysis.enabled, behind a balancer that publishes what users got (the
// in-house LB; an ALB, the edges and a DNS set do not), and only a balanced service has targets
// to judge.
func notJudged(c *config.Config) (string, bool) {
	switch {
	case !c.Rollout.Analysis.Enabled:
		return "rollout.analysis.enabled is false: no batch is judged", true
	case c.Balancer.Kind != config.BalancerInHouse:
		return fmt.Sprintf("balancer.kind %s publishes no outcomes (only the in-house LB does): no batch is judged", c.Balancer.Kind), true
	}
	if _, ok := c.BalancedService(); !ok {
		return "no service has a port: the balancer has no target of the new version to judge", true
	}
	return "", false
}

// dur is a duration number.
func dur(name string, d time.Duration) Number { return Number{Name: name, Value: d.String()} }

// count is a whole-number number.
func count(name string, n int) Number { return Number{Name: name, Value: fmt.Sprint(n)} }

// amount is a number that need not be whole: a rate, an expected count of requests.
func amount(name string, x float64) Number { return Number{Name: name, Value: decimal(x)} }

// decimal writes x with at most two decimals and no trailing zeros: 400, 22.5, 133.33.
func decimal(x float64) string {
	return strconv.FormatFloat(math.Round(x*100)/100, 'f', -1, 64)
}

// ceilMillis is the smallest whole number of milliseconds at least s seconds: the least duration
// a "must reach" suggestion can name in a config file.
func ceilMillis(s float64) time.Duration {
	return time.Duration(math.Ceil(s*1000-1e-6)) * time.Millisecond
}

// above is the smallest whole number of milliseconds strictly greater than d: the least value a
// "must exceed d" suggestion can name in a config file (the largest duration, for a d that
// is already saturated: config.MulDuration).
func above(d time.Duration) time.Duration {
	return config.AddDurations(d.Truncate(time.Millisecond), time.Millisecond)
}

// below is the largest whole number of milliseconds strictly less than d.
func below(d time.Duration) time.Duration {
	if t := d.Truncate(time.Millisecond); t < d {
		return t
	}
	return d - time.Millisecond
}
