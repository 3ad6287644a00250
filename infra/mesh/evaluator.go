package mesh

import (
	"errors"
	"fmt"
	"slices"
	"sync"
	"time"

	"github.com/zero502/zero502/infra/clock"
)

// errUnknownServer is returned for an observation naming a server outside the mesh.
var errUnknownServer = errors.New("not a member of the mesh")

// errOutOfOrder is returned for an observation older than one already recorded for the same
// server or pair; it is not applied.
var errOutOfOrder = errors.New("older than what is already recorded")

// Evaluator holds the latest report of every server and every witness's streak against every
// neighbour, and derives Verdicts from them afresh on each call. It is safe for concurrent use.
// It holds no verdict state of its own: that is why every verdict heals by itself.
type Evaluator struct {
	th    Thresholds
	clock clock.Clock

	mu      sync.Mutex
	servers []string // sorted
	// checker is the operator's list of checker servers as configured on this server
	// (--checkers): fixed at construction, never taken from a report.
	checker map[string]bool
	reports map[string]Report
	pairs   map[pair]*streak
}

type pair struct{ prober, target string }

// newEvaluator returns an Evaluator for the mesh of servers (names, at least two) judged with th
// and time from clk, in which the servers named in checkers (each a member) are the checkers.
// The role comes from this configuration only: what a report claims (Report.Checker) is never
// believed.
func newEvaluator(th Thresholds, clk clock.Clock, checkers []string, servers ...string) (*Evaluator, error) {
	if err := th.Validate(); err != nil {
		return nil, err
	}
	if clk == nil {
		return nil, errors.New("mesh: no clock (pass clock.Real{} or a clock.Fake in tests)")
	}
	if len(servers) < 2 {
		return nil, fmt.Errorf("mesh: servers %q: a mesh needs 2 or more servers to probe each other", servers)
	}
	sorted := slices.Clone(servers)
	slices.Sort(sorted)
	for i, s := range sorted {
		if s == "" {
			return nil, errors.New("mesh: a server has an empty name; name every server")
		}
		if i > 0 && sorted[i-1] == s {
			return nil, fmt.Errorf("mesh: server %q is listed twice; names must be unique", s)
		}
	}
	checker := map[string]bool{}
	for _, c := range checkers {
		if _, ok := slices.BinarySearch(sorted, c); !ok {
			return nil, fmt.Errorf("mesh: checker %q: %w (members: %v); list only servers of the mesh as checkers", c, errUnknownServer, sorted)
		}
		checker[c] = true
	}
	return &Evaluator{
		th: th, clock: clk, servers: sorted,
		checker: checker, reports: map[string]Report{}, pairs: map[pair]*streak{},
	}, nil
}

// isChecker reports whether s is a checker server in this Evaluator's configuration (fixed at
// construction: safe without the lock).
func (e *Evaluator) isChecker(s string) bool { return e.checker[s] }

// Servers are the members of the mesh, sorted.
func (e *Evaluator) Servers() []string { return slices.Clone(e.servers) }

// Thresholds are the numbers e judges with.
func (e *Evaluator) Thresholds() Thresholds { return e.th }

func (e *Evaluator) member(s string) bool {
	_, ok := slices.BinarySearch(e.servers, s)
	return ok
}

// Report records a server's report about itself. A zero At is stamped with the clock's now. The
// role the report claims (Checker) is replaced by the configured one: a server cannot make
// itself a checker by saying so.
func (e *Evaluator) Report(r Report) error {
	if !e.member(r.Server) {
		return fmt.Errorf("report from %q: %w (members: %v); add it to the peers of every server", r.Server, errUnknownServer, e.servers)
	}
	e.mu.Lock()
	defer e.mu.Unlock()
	if r.At.IsZero() {
		r.At = e.clock.Now()
	}
	if old, ok := e.reports[r.Server]; ok && r.At.Before(old.At) {
		return fmt.Errorf("report from %s at %s: %w (%s)", r.Server, r.At.Format(time.RFC3339Nano), errOutOfOrder, old.At.Format(time.RFC3339Nano))
	}
	r.Checker = e.checker[r.Server]
	e.reports[r.Server] = r
	return nil
}

// Probe records one probe result. A zero At is stamped with the clock's now.
func (e *Evaluator) Probe(p Probe) error {
	for _, s := range []string{p.Prober, p.Target} {
		if !e.member(s) {
			return fmt.Errorf("probe %s→%s: %q is %w (members: %v)", p.Prober, p.Target, s, errUnknownServer, e.servers)
		}
	}
	if p.Prober == p.Target {
		return fmt.Errorf("probe %s→%s: a server does not probe itself; its report says how it is", p.Prober, p.Target)
	}
	e.mu.Lock()
	defer e.mu.Unlock()
	if p.At.IsZero() {
		p.At = e.clock.Now()
	}
	k := pair{p.Prober, p.Target}
	s := e.pairs[k]
	if s == nil {
		s = &streak{}
		e.pairs[k] = s
	}
	if p.At.Before(s.last) {
		return fmt.Errorf("probe %s→%s at %s: %w (%s)", p.Prober, p.Target, p.At.Format(time.RFC3339Nano), errOutOfOrder, s.last.Format(time.RFC3339Nano))
	}
	s.apply(p, e.th)
	return nil
}

// errProbedTwice is Record's error for a bulletin with more than one probe of the same pair.
var errProbedTwice = errors.New("probed more than once in one bulletin")

// Record applies a Bulletin: its report, then its probes. Every observation is tried; the
// errors of those refused are joined. A bulletin is one round: one with two probes of the same
// pair (which would count as two rounds, so one bulletin could make a failure streak) is
// refused whole and applies nothing.
func (e *Evaluator) Record(b Bulletin) error {
	seen := make(map[pair]bool, len(b.Probes))
	for _, p := range b.Probes {
		k := pair{p.Prober, p.Target}
		if seen[k] {
			return fmt.Errorf("bulletin of %s: probe %s→%s: %w; a bulletin holds one probe per target", b.Report.Server, p.Prober, p.Target, errProbedTwice)
		}
		seen[k] = true
	}
	errs := []error{e.Report(b.Report)}
	for _, p := range b.Probes {
		errs = append(errs, e.Probe(p))
	}
	return errors.Join(errs...)
}

// Verdicts judges every server at the clock's now, sorted by name.
func (e *Evaluator) Verdicts() []Verdict {
	e.mu.Lock()
	defer e.mu.Unlock()
	now := e.clock.Now()
	out := make([]Verdict, 0, len(e.servers))
	for _, s := range e.servers {
		out = append(out, e.judge(s, now))
	}
	return out
}

// freshReport is s's report if it is recent enough to count at now.
func (e *Evaluator) freshReport(s string, now time.Time) (Report, bool) {
	r, ok := e.reports[s]
	return r, ok && now.Sub(r.At) <= e.th.ReportStaleAfter
}

// freshStreak is w's streak against t if its last probe counts at now.
func (e *Evaluator) freshStreak(w, t string, now time.Time) (*streak, bool) {
	s := e.pairs[pair{w, t}]
	return s, s != nil && s.fresh(now, e.th)
}

// LastService is the service URL of server s's last report ("" when none): for a peer, the one
// the receiving Node configured for it, not the peer's claim.
func (e *Evaluator) LastService(s string) string {
	e.mu.Lock()
	defer e.mu.Unlock()
	return e.reports[s].Service
}
