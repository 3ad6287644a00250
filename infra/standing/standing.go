// Package standing owns a target's health standing with whoever sends it traffic: an in-house
// LB's backend or an edge's upstream (an LB instance). One state machine for both: the states
// (healthy, draining, unhealthy, joining), the thresholds that move a target between them, the
// passive ejection after a failed connection, the admin API's drain and remove holds, the last
// transitions, and the loop that runs the active checks on a clock. It also owns the checks
// themselves (Probe: a TCP connect, or an HTTP GET, optionally behind a preamble such as a PROXY
// header), so the LB and the edge judge targets by the same rules: the one pass rule of package
// healthcheck, with the lab's status for them, healthcheck.LBStatus.
//
// The wire types (State, Transition, BackendStatus) are the admin APIs' (the LB's and the edge's), package
// infra/adminapi: a client reads an LB's backends and an edge's upstreams with one decoder.
package standing

import (
	"errors"
	"fmt"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"github.com/zero502/zero502/infra/adminapi"
	"github.com/zero502/zero502/infra/healthcheck"
)

// The states and transitions are the admin API's wire types.
type (
	State      = adminapi.State
	Transition = adminapi.Transition
)

// States (docs/lb.md: Admin API).
const (
	Healthy   = adminapi.Healthy
	Draining  = adminapi.Draining
	Unhealthy = adminapi.Unhealthy
	Joining   = adminapi.Joining
)

// ReasonAdmin is the reason of every transition the admin API makes.
const ReasonAdmin = "admin"

// keptTransitions is how many of the last transitions a Standing keeps for the admin view.
const keptTransitions = 20

// ErrInRotation refuses to remove a target that still takes traffic: drain it first.
var ErrInRotation = errors.New("still in rotation")

// Verdict is the result of one active check: Status is the HTTP status (0 when there was none,
// which a TCP check never has) and Err says why it failed.
type Verdict struct {
	Status int
	Err    error
}

// OK reports whether the check counts as healthy: an answer that passes the lab's rule of the
// LB and the edge (healthcheck.LBStatus: 200 only, by healthcheck.Passes), or a TCP check that
// connected (no status, no error).
func (v Verdict) OK() bool {
	return v.Err == nil && (v.Status == 0 || healthcheck.Passes(v.Status, healthcheck.LBStatus))
}

// Reason says why a failed verdict failed, for logs and the admin view.
func (v Verdict) Reason() string {
	switch {
	case v.Err != nil:
		return v.Err.Error()
	case v.Status != 0:
		return "health " + strconv.Itoa(v.Status)
	}
	return "no answer"
}

// silent reports whether the check got no answer at all (standing.silent): no status, and an
// error that says nothing came within the timeout.
func (v Verdict) silent() bool { return v.Status == 0 && v.Err != nil && silent(v.Err) }

// good names a good verdict's kind in a transition's reason.
func (v Verdict) good() string {
	if v.Status == 0 {
		return "connects"
	}
	return "health " + strconv.Itoa(v.Status)
}

// Thresholds are the numbers the state machine needs: consecutive failed checks that take a
// target out, consecutive good ones that bring it back.
type Thresholds struct {
	Unhealthy, Healthy int
}

// Standing is one target's place in rotation. The zero value is not ready: start it with
// StartInRotation or StartJoining. It is safe for concurrent use; InRotation is a lock-free read
// for the forwarding path.
type Standing struct {
	mu        sync.Mutex
	state     State
	since     time.Time
	failures  int
	successes int
	lastCheck time.Time
	lastErr   string
	// silentRun counts the consecutive failed checks that got no answer at all (Verdict.silent),
	// since the last check that got one (good, a 503, a refusal, a bad status).
	silentRun   int
	transitions []Transition
	// adminDrained: the admin API drained it; checks keep it out of rotation until the admin
	// API undrains it. drainedBy names who drained it last (adminapi.DrainedBy).
	adminDrained bool
	drainedBy    string
	// removed: the admin API took it out of the set; nothing changes its state any more.
	removed bool
	// first: a configured target's way to its first good check (StartAwaitingFirstCheck); 0 for
	// a target started otherwise.
	first int

	// served: it has been in rotation at least once (a fail-open candidate when it leaves by
	// failed checks).
	served bool

	inRotation atomic.Bool
	failsOpen  atomic.Bool
}

// Where a configured target stands with respect to its first good check.
const (
	firstAwaited = iota + 1 // no verdict yet
	firstFailed             // checked, never in rotation yet: the next good verdict puts it in
	firstDone               // in rotation once: Record's thresholds decide
)

// reasonNotChecked is a configured target's last error until its first check.
const reasonNotChecked = "not checked yet: the first check runs when the balancer starts"

// StartInRotation sets s healthy as of now, without a transition: a configured target, in
// rotation from the start.
func (s *Standing) StartInRotation(now time.Time) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.state, s.since, s.served = Healthy, now, true
	s.inRotation.Store(true)
}

// StartAwaitingFirstCheck sets s unhealthy as of now, until its first check: a configured
// target, as with HAProxy's init-state down. Its first verdict places it (a good one in
// rotation at once, not after the healthy threshold: a configured target is expected to be
// there; a 503 draining; anything else unhealthy), and until it has been in rotation once, its
// first good verdict puts it in. From then on Record's thresholds apply. With start-first
// deploys a balancer's configuration names both ports of a service and only one runs: a
// balancer that began with every target in rotation sent requests to the idle one until its
// checks failed.
func (s *Standing) StartAwaitingFirstCheck(now time.Time) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.state, s.since, s.first, s.lastErr = Unhealthy, now, firstAwaited, reasonNotChecked
}

// StartJoining sets s joining as of now: a target the admin API added, out of rotation until its
// checks pass the healthy threshold.
func (s *Standing) StartJoining(now time.Time) Transition {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.state, s.since = Joining, now
	t := Transition{At: now.UTC(), To: Joining, Reason: ReasonAdmin}
	s.transitions = []Transition{t}
	return t
}

// InRotation reports whether the target takes new traffic (state healthy).
func (s *Standing) InRotation() bool { return s.inRotation.Load() }

// FailsOpen reports whether the target takes traffic while no target of its set is in rotation:
// it was in rotation once and left by failed checks or a passive ejection (state unhealthy). When
// every target fails its checks at once, the likelier cause is the checker's side (a stalled
// host, a congested network) rather than every target at once, so the balancer sends to these
// rather than answer 503 to every request, as an AWS ALB fails open. A target that asked to leave
// (a 503 from its health: the drain handshake), one the admin API drained or removed, and one
// that never passed a check never take traffic this way. A lock-free read for the forwarding
// path.
func (s *Standing) FailsOpen() bool { return s.failsOpen.Load() }

// State is the target's current state.
func (s *Standing) State() State {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.state
}

// Record applies one check verdict taken at now and returns the transition it caused, if any.
// The rules:
//   - a good verdict counts toward the healthy threshold; reaching it puts a draining, unhealthy
//     or joining target back in rotation;
//   - a 503 from a target that is not already draining takes it to draining at once (it asked
//     to leave: the drain handshake);
//   - any other failure (another status, refused, timeout) counts toward the unhealthy
//     threshold; reaching it takes a healthy or draining target to unhealthy (a joining one
//     stays joining);
//   - a target the admin API drained or removed keeps its state: the verdicts are only recorded.
func (s *Standing) Record(v Verdict, now time.Time, th Thresholds) (Transition, bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.lastCheck = now
	held := s.adminDrained || s.removed
	if t, changed, placed := s.placeFirstLocked(v, now, held); placed {
		return t, changed
	}
	if v.OK() {
		s.lastErr, s.silentRun = "", 0
		s.successes++
		s.failures = 0
		if !held && s.state != Healthy && s.successes >= th.Healthy {
			return s.moveLocked(Healthy, now, fmt.Sprintf("%d consecutive %s", s.successes, v.good())), true
		}
		return Transition{}, false
	}
	s.lastErr = v.Reason()
	if v.silent() {
		s.silentRun++
	} else {
		s.silentRun = 0
	}
	s.failures++
	s.successes = 0
	switch {
	case held:
	case v.Err == nil && v.Status == 503 && s.state != Draining:
		return s.moveLocked(Draining, now, "health 503"), true
	case s.state == Draining && v.silent() && s.silentRun < th.Unhealthy:
		// A draining target's 503s count as failed checks, so one slow check would take it out
		// at once; silence takes as many checks as the unhealthy threshold, like any failing.
	case v.Status != 503 && s.state != Unhealthy && s.state != Joining && s.failures >= th.Unhealthy:
		t := s.moveLocked(Unhealthy, now, fmt.Sprintf("%d consecutive failed checks, last: %s", s.failures, v.Reason()))
		t.NoAnswer = s.silentRun >= th.Unhealthy
		s.transitions[len(s.transitions)-1].NoAnswer = t.NoAnswer
		return t, true
	}
	return Transition{}, false
}

// placeFirstLocked applies v to a configured target that has not been in rotation yet
// (StartAwaitingFirstCheck); placed is false when the verdict is Record's to apply.
func (s *Standing) placeFirstLocked(v Verdict, now time.Time, held bool) (t Transition, changed, placed bool) {
	if s.first == 0 || s.first == firstDone || held {
		return Transition{}, false, false
	}
	if s.first == firstFailed && !v.OK() {
		return Transition{}, false, false // Record counts it
	}
	reason := "first health check: " + v.Reason()
	switch {
	case s.first == firstFailed:
		reason = "first good health check: " + v.good()
	case v.OK():
		reason = "first health check: " + v.good()
	}
	s.lastErr = ""
	to := Unhealthy
	switch {
	case v.OK():
		to, s.successes, s.failures, s.first = Healthy, 1, 0, firstDone
	case v.Err == nil && v.Status == 503:
		to, s.failures, s.lastErr, s.first = Draining, 1, v.Reason(), firstFailed
	default:
		s.failures, s.lastErr, s.first = 1, v.Reason(), firstFailed
	}
	return s.moveLocked(to, now, reason), true, true
}

// Eject takes the target out of rotation at once after a connection to it was refused or broke
// (passive health): it comes back only through the healthy threshold of good checks.
func (s *Standing) Eject(reason string, now time.Time) (Transition, bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.successes = 0
	if s.state != Healthy {
		return Transition{}, false
	}
	return s.moveLocked(Unhealthy, now, "passive: "+reason), true
}

// AdminDrain holds the target drained for by (who asks: adminapi.DrainedBy): state draining,
// out of rotation, whatever its checks say. Draining one already held drained changes nothing
// but who holds it: the last to drain it, whose drain an undrain by an earlier one would undo.
func (s *Standing) AdminDrain(now time.Time, by string) (Transition, bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.drainedBy = by
	if s.adminDrained {
		return Transition{}, false
	}
	s.adminDrained = true
	return s.moveLocked(Draining, now, ReasonAdmin), true
}

// Undrain releases an admin drain: the target joins, out of rotation until the healthy
// threshold of checks pass from now on. Checks from before are not counted: behind an undrain
// there is usually a new process on the same address (a stop-first deploy drained at the
// balancer), and the old one's answers say nothing of it. A target not held drained is left as
// it is.
func (s *Standing) Undrain(now time.Time) (Transition, bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if !s.adminDrained {
		return Transition{}, false
	}
	s.adminDrained, s.drainedBy = false, ""
	s.successes = 0
	s.first = firstDone // a configured target's first good check no longer puts it in at once
	return s.moveLocked(Joining, now, ReasonAdmin), true
}

// Outage says whether t took a target out for failing while what was in flight there may be
// lost, so that the LB resends what it safely can and the edge connects elsewhere: a target in
// rotation that failed (failed checks, or a connection refused or broken: Eject), or a draining
// one whose checks then got no answer at all, as many in a row as the unhealthy threshold (a
// host lost or frozen mid-drain: what it still had will never come back; one slow check is not). A draining target whose checks are refused is no outage: it left
// rotation when it asked to (a 503), and a service that keeps the drain contract stops accepting
// at the end of its window while it finishes what it has, which must finish there. A first
// check's failure is none either: it was never in.
func Outage(t Transition) bool {
	return t.To == Unhealthy && (t.From == Healthy || t.From == Draining && t.NoAnswer)
}

// MarkRemoved takes the target out of the state machine for good, unless it is still in
// rotation (ErrInRotation: drain it first); from is its last state.
func (s *Standing) MarkRemoved() (from State, err error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.state == Healthy {
		return s.state, ErrInRotation
	}
	s.removed = true
	s.failsOpen.Store(false)
	return s.state, nil
}

func (s *Standing) moveLocked(to State, now time.Time, reason string) Transition {
	t := Transition{At: now.UTC(), From: s.state, To: to, Reason: reason}
	s.state, s.since = to, now
	s.served = s.served || to == Healthy
	s.inRotation.Store(to == Healthy)
	s.failsOpen.Store(to == Unhealthy && s.served && !s.adminDrained && !s.removed)
	if len(s.transitions) == keptTransitions {
		copy(s.transitions, s.transitions[1:])
		s.transitions = s.transitions[:keptTransitions-1]
	}
	s.transitions = append(s.transitions, t)
	return t
}

// Status is a consistent snapshot of the standing in the admin API's wire type, for the target
// at address with inFlight requests (LB) or open connections (edge). Requests is left to the
// caller.
func (s *Standing) Status(address string, inFlight int64) adminapi.BackendStatus {
	s.mu.Lock()
	defer s.mu.Unlock()
	return adminapi.BackendStatus{
		Address: address, State: s.state, InRotation: s.state == Healthy, Since: s.since.UTC(),
		ConsecutiveFailures: s.failures, ConsecutiveSuccesses: s.successes,
		LastCheck: s.lastCheck.UTC(), LastError: s.lastErr, InFlight: inFlight, AdminDrained: s.adminDrained, DrainedBy: s.drainedBy,
		Transitions: append([]Transition{}, s.transitions...),
	}
}
