package lb

import (
	"context"
	"sync"
	"time"
)

// The initial state of a configured backend. A backend in the configuration is not in rotation
// until a health check answers 200, as with HAProxy's `init-state down`: with start-first
// deploys the configuration names both ports of a service and only one runs, so an LB that
// began with every backend healthy sent requests to the idle port until its checks failed (a
// POST there got 502: it is never replayed). When the LB starts (Run), it checks every
// configured backend once, all at the same time, before it accepts a connection, so the first
// round costs at most one health timeout; connections that arrive meanwhile wait in the
// listener's backlog. The first verdict places each one:
//
//   - a 200 puts it in rotation at once (one good check, not healthy_threshold: a configured
//     backend is expected to be there, unlike one the admin API adds, which joins only after
//     healthy_threshold checks);
//   - a 503 makes it draining (it asked to leave: the drain handshake);
//   - anything else (refused, timeout, another status) makes it unhealthy.
//
// A configured backend that has not been in rotation yet enters at its first good check (so a
// first check that timed out on a busy host costs one interval, not healthy_threshold of them);
// once it has been in rotation, the health state machine's thresholds apply (record).

// reasonNotChecked is a configured backend's last error until its first check.
const reasonNotChecked = "not checked yet: the first health check runs when the LB starts"

// Where a configured backend stands with respect to its first good check.
const (
	firstAwaited = iota + 1 // no verdict yet
	firstFailed             // checked, never in rotation yet: the next 200 puts it in
	firstDone               // in rotation once (or added by the admin API): record decides
)

// firstChecks runs the first health check of every backend still waiting for it, in parallel,
// each within the health timeout, and places each by its verdict (see above).
func (s *Server) firstChecks(ctx context.Context) {
	var wg sync.WaitGroup
	for _, b := range s.members.all() {
		wg.Add(1)
		go func() {
			defer wg.Done()
			if t, ok := b.apply(s.check.probe(ctx, b), s.clock.Now(), s.check.th); ok {
				s.changed(b, t)
			}
		}()
	}
	wg.Wait()
}

// apply records one health verdict: placeFirst while b has not been in rotation yet, record
// from then on.
func (b *Backend) apply(v Verdict, now time.Time, th thresholds) (Transition, bool) {
	if t, ok, placed := b.placeFirst(v, now); placed {
		return t, ok
	}
	return b.record(v, now, th)
}

// placeFirst applies v to a configured backend that has not been in rotation yet (see above);
// placed is false when the verdict is record's to apply.
func (b *Backend) placeFirst(v Verdict, now time.Time) (t Transition, changed, placed bool) {
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.first == 0 || b.first == firstDone || b.removed || b.adminDrained {
		return Transition{}, false, false
	}
	if b.first == firstFailed && !v.OK() {
		return Transition{}, false, false // record counts it
	}
	reason := "first health check: " + firstReason(v)
	if b.first == firstFailed {
		reason = "first good health check: health 200"
	}
	b.lastCheck, b.lastErr = now, ""
	to := Unhealthy
	switch {
	case v.OK():
		to, b.successes, b.failures, b.first = Healthy, 1, 0, firstDone
	case v.Err == nil && v.Status == 503:
		to, b.failures, b.lastErr, b.first = Draining, 1, v.reason(), firstFailed
	default:
		b.failures, b.lastErr, b.first = 1, v.reason(), firstFailed
	}
	t = Transition{At: now.UTC(), From: b.state, To: to, Reason: reason}
	b.state, b.since = to, now
	b.healthy.Store(to == Healthy)
	b.transitions = append(b.transitions, t)
	return t, true, true
}
func firstReason(v Verdict) string {
	if v.OK() {
		return "health 200"
	}
	return v.reason()
}
