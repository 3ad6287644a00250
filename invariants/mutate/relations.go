package main

import (
	"maps"
	"math"
	"slices"
	"time"

	"github.com/zero502/zero502/infra/config"
)

// relation is the harness's own statement of one invariant, independent of the code under test:
// lhs op rhs, each side a sum of products of config keys and of the quantities and constants
// named with # (numbers: "#hosts", "#minus-one", …), in whole units: milliseconds, counts,
// requests per second, percent. Config mutants are computed from it, so a wrong relation in
// package invariants cannot hide its own mutants. An invariant whose relation depends on the
// config (the drain mode, the rollout strategy, the balancer kind) has one relation per case,
// each with the condition under which it is the one that applies. A warning-level invariant
// (I12–I15) is stated the same way: its mutants must make its test fail too, since a shipped
// config carries no warning.
type relation struct {
	id       string
	lhs, rhs [][]string // sums of products of keys ("#hosts" is the number of hosts)
	op       string     // ">", "<", "<=" or ">="
	// applies says whether the relation is the invariant's on config c; nil: always.
	applies func(c *config.Config) bool
}

func relations() []relation {
	return []relation{
		{"I1", [][]string{{"drain.window"}}, [][]string{{"balancer.interval", "balancer.unhealthy_threshold"}}, ">", withBalancer},
		{"I2", [][]string{{"drain.window"}, {"drain.shutdown"}}, [][]string{{"drain.stop_grace"}}, "<", not(onlyBalancerDrains)},
		{"I2", [][]string{{"drain.shutdown"}}, [][]string{{"drain.stop_grace"}}, "<", onlyBalancerDrains},
		{"I3", [][]string{{"balancer.healthy_threshold", "balancer.interval"}}, [][]string{{"drain.max_recovery"}}, "<=", withBalancer},
		{"I4", [][]string{{"balancer.timeout"}}, [][]string{{"balancer.interval"}}, "<", withBalancer},
		{"I5", [][]string{{"watchdog.heal_after", "watchdog.interval"}, {"#minus-one", "watchdog.interval"}}, [][]string{{"drain.window"}, {"drain.shutdown"}}, ">", nil},
		{"I6", [][]string{{"edge.drain"}}, [][]string{{"edge.dns_ttl"}, {"edge.check_interval", "edge.unhealthy_threshold"}}, ">", withEdge},
		{"I7", [][]string{{"app.keepalive_idle_timeout"}}, [][]string{{"balancer.idle_timeout"}}, ">", withBalancer},
		{"I8", [][]string{{"rollout.batch"}}, [][]string{{"#hosts"}}, "<", not(startFirst)},
		{"I8", [][]string{{"rollout.batch"}}, [][]string{{"#hosts"}}, "<=", startFirst},
		{"I8", [][]string{{"rollout.max_unavailable"}}, [][]string{{"#hosts"}}, "<", startFirst},
		{"I9", [][]string{{"drain.window"}}, [][]string{{"balancer.header_timeout"}}, ">", balancerDrainsAt(config.BalancerInHouse, config.BalancerEdges)},
		{"I9", [][]string{{"balancer.deregistration_delay"}}, [][]string{{"balancer.header_timeout"}}, ">", balancerDrainsAt(config.BalancerALB)},
		{"I10", [][]string{{"rollout.canary.duration"}}, [][]string{{"rollout.analysis.window"}}, ">", both(judged, withCanary)},
		{"I11", [][]string{{"rollout.analysis.window"}}, [][]string{{"balancer.header_timeout"}}, ">", judged},
		// rate [1/s] × weight [%] × duration [ms] ≥ min_requests × 100 % × 1000 ms/s
		{"I12", [][]string{{"rollout.analysis.expected_rate", "rollout.canary.weight", "rollout.canary.duration"}},
			[][]string{{"rollout.analysis.min_requests", "#percent", "#ms-per-s"}}, ">=", both(judged, withCanary, withRate)},
		// rate [1/s] × smallest batch × window [ms] ≥ min_requests × hosts × 1000 ms/s
		{"I13", [][]string{{"rollout.analysis.expected_rate", "#smallest-batch", "rollout.analysis.window"}},
			[][]string{{"rollout.analysis.min_requests", "#hosts", "#ms-per-s"}}, ">=", both(judged, withBatchAfterCanary, withRate)},
		// lease > 2 × services × (window + deregistration delay + stop grace + healthy deadline)
		//         + bake + healthy_threshold × interval + analysis window + canary + renewal
		{"I14", [][]string{{"rollout.lock_lease"}}, [][]string{
			{"#two", "#services", "drain.window"}, {"#two", "#services", "balancer.deregistration_delay"},
			{"#two", "#services", "drain.stop_grace"}, {"#two", "#services", "rollout.healthy_deadline"},
			{"rollout.bake"}, {"balancer.healthy_threshold", "balancer.interval"}, {"rollout.analysis.window"},
			{"rollout.canary.duration"}, {"#lock-renewal"}}, ">", lockOverSSH},
		// a batch written as a share [%] × hosts ≥ 100 %: it comes to at least one host
		{"I15", [][]string{{"rollout.batch%", "#hosts"}}, [][]string{{"#percent"}}, ">=", batchShare},
		// progress deadline > the drain at the balancer (window; alb: deregistration delay; dns:
		//   edge.drain) + stop grace + healthy deadline + bake + healthy_threshold × interval
		//   + the per-host hooks' timeouts (when set)
		{"I16", [][]string{{"rollout.progress_deadline"}}, i16Step("drain.window"), ">", not(either(kindIs(config.BalancerALB), kindIs(config.BalancerDNS)))},
		{"I16", [][]string{{"rollout.progress_deadline"}}, i16Step("balancer.deregistration_delay"), ">", kindIs(config.BalancerALB)},
		{"I16", [][]string{{"rollout.progress_deadline"}}, i16Step("edge.drain"), ">", kindIs(config.BalancerDNS)},
	}
}

// applicable are the relations that are their invariant's on c.
func applicable(c *config.Config) []relation {
	var out []relation
	for _, r := range relations() {
		if r.applies == nil || r.applies(c) {
			out = append(out, r)
		}
	}
	return out
}

// invariantIDs are the invariants the relations state, each once, in order.
func invariantIDs() []string {
	var out []string
	for _, r := range relations() {
		if len(out) == 0 || out[len(out)-1] != r.id {
			out = append(out, r.id)
		}
	}
	return out
}

// The conditions under which a relation applies.

func withBalancer(c *config.Config) bool { return c.Balancer.Kind != config.BalancerNone }

func withEdge(c *config.Config) bool { return c.Edge.Drain > 0 }

func startFirst(c *config.Config) bool { return c.Rollout.Strategy == config.StartFirst }

// onlyBalancerDrains: every service drains at the balancer, so nothing follows the stop signal
// but the shutdown.
func onlyBalancerDrains(c *config.Config) bool {
	for _, s := range c.Services {
		if s.Drain != config.DrainBalancer {
			return false
		}
	}
	return len(c.Services) > 0
}

// balancerDrainsAt: some service drains at a balancer of one of kinds (the in-house LB and the
// edges both drain a target for drain.window).
func balancerDrainsAt(kinds ...string) func(*config.Config) bool {
	return func(c *config.Config) bool {
		for _, s := range c.Services {
			if s.Drain == config.DrainBalancer {
				return slices.Contains(kinds, c.Balancer.Kind)
			}
		}
		return false
	}
}

func not(cond func(*config.Config) bool) func(*config.Config) bool {
	return func(c *config.Config) bool { return !cond(c) }
}

func both(conds ...func(*config.Config) bool) func(*config.Config) bool {
	return func(c *config.Config) bool {
		for _, cond := range conds {
			if !cond(c) {
				return false
			}
		}
		return true
	}
}

// judged: the deployer judges each batch: the analysis on, behind the in-house LB (the only
// balancer that publishes outcomes), with a balanced service whose targets it judges.
func judged(c *config.Config) bool {
	_, balanced := c.BalancedService()
	return c.Rollout.Analysis.Enabled && c.Balancer.Kind == config.BalancerInHouse && balanced
}

func withCanary(c *config.Config) bool { return c.Rollout.Canary.Hosts > 0 }

// lockOverSSH: the fleet lock is held on a lock host over ssh, a lease (rollout.lock_lease).
func lockOverSSH(c *config.Config) bool {
	h, ok := c.FleetLockHost()
	return ok && h.SSH != ""
}

func withRate(c *config.Config) bool { return c.Rollout.Analysis.ExpectedRate > 0 }

// batchShare: rollout.batch is written as a share of the fleet ("34%").
func batchShare(c *config.Config) bool { return c.Rollout.BatchShare > 0 }

func withBatchAfterCanary(c *config.Config) bool { return smallestBatch(c) > 0 }

// smallestBatch is the smallest batch after the canary (0: the canary is the whole fleet): the
// canary takes min(rollout.canary.hosts, hosts), the rest goes rollout.batch at a time.
func smallestBatch(c *config.Config) int {
	rest := len(c.Hosts) - min(c.Rollout.Canary.Hosts, len(c.Hosts))
	if rest <= 0 {
		return 0
	}
	return (rest-1)%max(c.Rollout.Batch, 1) + 1
}

// numbers are a config's values of the keys the relations use: durations in milliseconds,
// counts and percents as they are, rollout.analysis.expected_rate in whole requests per second
// (the shipped configs write whole rates; a fractional one is not mutated, and truncated here).
func numbers(c *config.Config) map[string]int64 {
	ms := func(d time.Duration) int64 { return d.Milliseconds() }
	return map[string]int64{
		"balancer.interval":              ms(c.Balancer.Interval),
		"balancer.timeout":               ms(c.Balancer.Timeout),
		"balancer.unhealthy_threshold":   int64(c.Balancer.UnhealthyThreshold),
		"balancer.healthy_threshold":     int64(c.Balancer.HealthyThreshold),
		"balancer.idle_timeout":          ms(c.Balancer.IdleTimeout),
		"balancer.header_timeout":        ms(c.Balancer.HeaderTimeout),
		"balancer.deregistration_delay":  ms(c.Balancer.DeregistrationDelay),
		"drain.window":                   ms(c.Drain.Window),
		"drain.shutdown":                 ms(c.Drain.Shutdown),
		"drain.stop_grace":               ms(c.Drain.StopGrace),
		"drain.max_recovery":             ms(c.Drain.MaxRecovery),
		"watchdog.interval":              ms(c.Watchdog.Interval),
		"watchdog.heal_after":            int64(c.Watchdog.HealAfter),
		"app.keepalive_idle_timeout":     ms(c.App.KeepAliveIdleTimeout),
		"edge.drain":                     ms(c.Edge.Drain),
		"edge.dns_ttl":                   ms(c.Edge.DNSTTL),
		"edge.check_interval":            ms(c.Edge.CheckInterval),
		"edge.unhealthy_threshold":       int64(c.Edge.UnhealthyThreshold),
		"rollout.batch":                  int64(c.Rollout.Batch),
		"rollout.batch%":                 int64(c.Rollout.BatchShare), // the share it was written as (I15)
		"rollout.max_unavailable":        int64(c.Rollout.MaxUnavailable),
		"rollout.analysis.window":        ms(c.Rollout.Analysis.Window),
		"rollout.analysis.min_requests":  int64(c.Rollout.Analysis.MinRequests),
		"rollout.analysis.expected_rate": int64(c.Rollout.Analysis.ExpectedRate),
		"rollout.canary.duration":        ms(c.Rollout.Canary.Duration),
		"rollout.canary.weight":          int64(c.Rollout.Canary.Weight),
		"rollout.lock_lease":             ms(c.Rollout.LockLease),
		"rollout.healthy_deadline":       ms(c.Rollout.HealthyDeadline),
		"rollout.bake":                   ms(c.Rollout.Bake),
		"rollout.progress_deadline":      ms(c.Rollout.ProgressDeadline),
		"#pre-traffic-hook":              ms(hookTimeout(c.Hooks.PreTraffic)),  // its timeout when set, else 0
		"#post-traffic-hook":             ms(hookTimeout(c.Hooks.PostTraffic)), // the same
		"#services":                      int64(len(c.Services)),
		"#two":                           2,                         // a constant: a batch's step and its rollback
		"#lock-renewal":                  ms(config.MaxLockRenewal), // the longest interval between renewals
		"#hosts":                         int64(len(c.Hosts)),
		"#smallest-batch":                int64(smallestBatch(c)),
		"#minus-one":                     -1,   // a constant: (heal_after − 1) × interval
		"#percent":                       100,  // a constant: canary.weight is in percent
		"#ms-per-s":                      1000, // a constant: durations are in ms, rates per second
	}
}

func (r relation) uses(key string) bool {
	for _, side := range [][][]string{r.lhs, r.rhs} {
		for _, term := range side {
			for _, k := range term {
				if k == key {
					return true
				}
			}
		}
	}
	return false
}

func sum(side [][]string, vals map[string]int64) int64 {
	var s int64
	for _, term := range side {
		p := int64(1)
		for _, k := range term {
			p *= vals[k]
		}
		s += p
	}
	return s
}

// holds evaluates the relation on vals.
func (r relation) holds(vals map[string]int64) bool {
	l, rr := sum(r.lhs, vals), sum(r.rhs, vals)
	switch r.op {
	case ">":
		return l > rr
	case ">=":
		return l >= rr
	case "<":
		return l < rr
	default:
		return l <= rr
	}
}

// maxMillis is the largest duration in whole milliseconds (2562047h47m16.854s): a config mutant
// that sets a duration to it makes every sum or product it is in overflow time.Duration.
const maxMillis = int64(math.MaxInt64 / int64(time.Millisecond))

// overflows says whether key, a duration, is in a product or a sum (other numbers with it on
// its side of the relation) that a larger value of key breaks: set to maxMillis, that side
// overflows time.Duration, and an invariant that wrapped around instead of saturating
// (config.MulDuration, config.AddDurations) would see a short, even negative, time and say it
// holds (2 × 2562047h47m16.854s wraps to -1.551616ms).
func (r relation) overflows(key string, vals map[string]int64) bool {
	for _, side := range [][][]string{r.lhs, r.rhs} {
		for _, term := range side {
			if slices.Contains(term, key) && (len(term) > 1 || len(side) > 1) {
				return r.breaksAbove(key, vals)
			}
		}
	}
	return false
}

// breaksAbove says whether the relation breaks as key grows (every other number as in vals).
func (r relation) breaksAbove(key string, vals map[string]int64) bool {
	at := func(v int64) map[string]int64 {
		m := maps.Clone(vals)
		m[key] = v
		return m
	}
	a := sum(r.lhs, at(1)) - sum(r.rhs, at(1)) - (sum(r.lhs, at(0)) - sum(r.rhs, at(0)))
	if r.op == ">" || r.op == ">=" {
		return a < 0
	}
	return a > 0
}

// boundary is the value of key nearest to where the relation turns (every other number as in
// vals) that violates it: the equality point for a strict relation, one unit past it otherwise.
// wrong is a typical wrong value twice as far on the violating side (for drain.window in the
// production config: 5s against 5s × 2, the source's original bug).
func (r relation) boundary(key string, vals map[string]int64) (boundary, wrong int64) {
	at := func(v int64) map[string]int64 {
		m := make(map[string]int64, len(vals))
		for k, x := range vals {
			m[k] = x
		}
		m[key] = v
		return m
	}
	// Each key appears once, so lhs − rhs is affine in it: a·v + b.
	f := func(v int64) int64 { m := at(v); return sum(r.lhs, m) - sum(r.rhs, m) }
	b := f(0)
	a := f(1) - b
	dir := int64(1) // the direction in which the relation breaks
	if a < 0 {
		dir = -1
	}
	if r.op == ">" || r.op == ">=" {
		dir = -dir
	}
	v := ceilDiv(-b, a)
	if dir < 0 {
		v = floorDiv(-b, a)
	}
	for range 3 {
		if !r.holds(at(v)) {
			break
		}
		v += dir
	}
	if dir < 0 {
		return v, v / 2
	}
	return v, v * 2
}

func floorDiv(n, d int64) int64 {
	if d < 0 {
		n, d = -n, -d
	}
	q := n / d
	if n%d != 0 && n < 0 {
		q--
	}
	return q
}

func ceilDiv(n, d int64) int64 { return -floorDiv(-n, d) }

// i16Step is a service's whole step, I16's right side, with drain as the drain at the balancer.
func i16Step(drain string) [][]string {
	return [][]string{{drain}, {"drain.stop_grace"}, {"rollout.healthy_deadline"}, {"rollout.bake"},
		{"balancer.healthy_threshold", "balancer.interval"}, {"#pre-traffic-hook"}, {"#post-traffic-hook"}}
}

// kindIs: the balancer is of kind kind.
func kindIs(kind string) func(*config.Config) bool {
	return func(c *config.Config) bool { return c.Balancer.Kind == kind }
}

func either(conds ...func(*config.Config) bool) func(*config.Config) bool {
	return func(c *config.Config) bool {
		for _, cond := range conds {
			if cond(c) {
				return true
			}
		}
		return false
	}
}

// hookTimeout is how long a per-host hook may run: its timeout when it is set, 0 when not.
func hookTimeout(h config.Hook) time.Duration {
	if !h.Set() {
		return 0
	}
	return h.Timeout
}
