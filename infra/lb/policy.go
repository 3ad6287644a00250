package lb

import (
	"time"

	"github.com/zero502/zero502/infra/http1"
)

// ownHealthPath is the LB's own health on its proxy listener (its drain handshake's health).
const ownHealthPath = "/_lb/health"

// isOwnHealth says whether req asks for the LB's own health.
func (s *Server) isOwnHealth(req *http1.Request) bool {
	return string(req.Target()) == ownHealthPath && string(req.Method()) == "GET" && !req.HasBody()
}

// answersItself says whether the LB answers req without asking a backend, and with which
// status: its own health (200, or 503 from the start of the drain on: drainingHealth), or any other request
// while maintenance is on (503 and the maintenance page: maintenanceFor). Both paths ask it
// first, and write the answer with ownAnswer.
func (s *Server) answersItself(req *http1.Request) (int, bool) {
	if s.isOwnHealth(req) {
		if s.drainingHealth() {
			return 503, true
		}
		return 200, true
	}
	if s.maint.page.Load() != nil {
		return 503, true
	}
	return 0, false
}

// The exchange policy after a failed attempt at a backend, one for both paths (proxy.go and the
// event loops' failed, through attemptFailed, which also records the failure): whether to try the same backend again on a fresh connection, whether
// the backend leaves rotation at once, and whether the request goes to the next backend or the
// client gets the LB's own answer. A request with a body is never replayed: it gets 502. An
// attempt the LB gives up itself, because its backend left rotation for failing while the
// request waited (resendNow), is one more such failure: attemptEjected.

// staleRetry says a request that got nothing back on a pooled connection goes to the same
// backend again on a fresh one: the pooled connection was most likely closed by the backend
// while it sat idle (see pool). Only a request without a body is sent twice.
func staleRetry(req *http1.Request, aerr attemptError, reused bool) bool {
	return aerr == attemptNoAnswer && reused && req.Idempotent()
}

// probeBeforeReuse says a pooled connection must pass the MSG_PEEK probe before req goes on
// it: req would not be sent again if the connection turned out closed (see idlePool).
// (The event loops' rule: a parked connection the backend writes to is an edge they see and
// drop. The goroutine path hears nothing of a parked connection, so it probes every reuse:
// reuseProbe.)
func probeBeforeReuse(req *http1.Request) bool { return !req.Idempotent() }

// reuseProbe is the goroutine path's probe rule: every reuse (see probeBeforeReuse).
const reuseProbe = true

// writeFailed is how a failed write of the request to a backend ends the attempt (one that took
// no byte for body_timeout is priced by expiry(phSend) instead). Before the whole head went out
// (headOut false) it is attemptNoAnswer. After it, the backend may have answered from the head
// alone and closed with the body unread (413 for a body over its limit, 401 for a missing
// token): its kernel resets the connection, the LB's next write fails, and the answer is still
// in the socket's receive buffer, readable before the reset's error (Linux). So the attempt is
// attemptCut: it reads on for the response head (within header_timeout; a reset connection
// answers at once) and relays one that came, without blaming the backend (the connection to it
// then closes, and the client's closes too when the rest of its body was not read). With none,
// the attempt is attemptNoAnswer: a connection that broke with no answer, as a crashed backend's
// does (ejected at once when fresh); a request with a body is never sent again (502).
func writeFailed(headOut bool) attemptError {
	if headOut {
		return attemptCut
	}
	return attemptNoAnswer
}

// failure is what follows a failed attempt that was not a stale-pool retry (nor the client's
// fault, which the caller handles): eject takes the backend out of rotation at once (passive
// ejection: a refused connect, or a fresh connection that broke before the response); next
// sends the request to another backend; otherwise the client gets status (502, or 504 for a
// backend that took too long). inRotation is whether the backend was in rotation when the
// attempt failed: a refused connect to one that was not (the rotation failing open) says what
// the checks said, no backend is healthy, so a request that cannot go on gets 503. (A backend
// that refused a body with an answer, 413 or 401, is not here: its answer is relayed and it is
// not blamed, writeFailed; else any client could eject healthy backends with uploads.)
func failure(req *http1.Request, aerr attemptError, reused, inRotation bool) (eject, next bool, status int) {
	switch aerr {
	case attemptConnect, attemptNoAnswer:
		eject = aerr == attemptConnect || !reused
		if req.Idempotent() {
			return eject, true, 0
		}
		if aerr == attemptConnect && !inRotation {
			return eject, false, 503
		}
		return eject, false, 502
	case attemptTimeout:
		return false, false, 504
	case attemptLocal: // the LB's own shortage: another backend would fail the same way
		return false, false, 503
	case attemptEjected: // (only ever for a request resendAfterEject allowed)
		if req.Idempotent() {
			return false, true, 0 // out of rotation already
		}
	}
	return false, false, 502
}

// resendAfterEject says a request in flight on a backend that has just left rotation for
// failing (its health checks, or a passive ejection: see Server.changed) is given up there and
// sent at once to another healthy backend, rather than wait out header_timeout for a host that
// may be gone from the network: a request that may be replayed (GET or HEAD without a body,
// Request.Idempotent) and that has not had one byte of the response yet (answered). Any other
// request keeps today's rule: it waits for its answer or its timeout. It is both paths' one
// rule, asked through resendNow.
func resendAfterEject(req *http1.Request, answered bool) bool {
	return req.Idempotent() && !answered
}

// resendNow says whether a request waiting on a backend that left rotation for failing goes at
// once to another backend: resendAfterEject allows it and a healthy backend it has not tried
// (t) is left. Without one it waits on where it is, as before: a fail-open backend is no better
// than the one it waits on. The request is then concluded there as attemptEjected (failure
// sends it on) and counted once per resend (zero502_lb_resent_after_eject_total); having tried
// each backend at most once, it is resent at most once per backend.
func (s *Server) resendNow(req *http1.Request, answered bool, t *tried) bool {
	if !resendAfterEject(req, answered) || !s.rot.healthyLeft(t) {
		return false
	}
	if !s.budget.withdraw(s.clock.Now()) { // budget.go
		s.overBudget.Add(1)
		return false
	}
	return true
}

// countAgain counts a request that goes to another backend after an attempt that failed with
// why (attemptOK: its first attempt, not counted): a resend after an ejection
// (zero502_lb_resent_after_eject_total), or a retry (zero502_lb_retries_total). Both paths call
// it once a backend is picked for the new attempt.
func (s *Server) countAgain(why attemptError) {
	switch why {
	case attemptOK:
		s.budget.deposit(s.clock.Now())
	case attemptEjected:
		s.resent.Add(1)
	default:
		s.retries.Add(1)
	}
}

// phase is where a client connection's exchange stands, on either engine: the event loops keep
// it on each connection (lclient.phase), the goroutine path passes through the same phases in
// order. It decides which timeout bounds the wait (Settings.budget) and what running out of it
// costs (expiry): one rule for what a slow client or a slow backend costs on both engines.
type phase uint8

const (
	phIdle     phase = iota // between requests, nothing buffered: client idle timeout
	phHead                  // part of a request buffered: client header timeout
	phBodyWait              // a whole head, part of its body: client header timeout on silence
	phConnect               // connecting to the backend: connect timeout
	phSend                  // writing the request to the backend: body timeout on silence
	phAwait                 // waiting for the response head: header timeout (then 504)
	phBody                  // relaying the response body: body timeout on silence
	phAnswer                // writing the LB's own answer: body timeout
)

// budget is how long phase p may wait: in total for phIdle, phHead, phConnect and phAwait, on
// silence (restarted by each byte that moves) for the others.
func (set *Settings) budget(p phase) time.Duration {
	switch p {
	case phIdle:
		return set.ClientIdleTimeout
	case phHead, phBodyWait:
		return set.ClientHeaderTimeout
	case phConnect:
		return set.ConnectTimeout
	case phAwait:
		return set.HeaderTimeout
	default: // phSend, phBody, phAnswer
		return set.BodyTimeout
	}
}

// idleBudget is how long a client connection waits for its next request's first byte: the
// client idle timeout between the requests of a connection that carried one (used), the client
// header timeout for the first request of a fresh one, as nginx's client_header_timeout and
// HAProxy's timeout http-request bound it: a connection opened to send nothing holds a
// descriptor (and a place under max_conns) no longer than a slow head would.
func (set *Settings) idleBudget(used bool) time.Duration {
	if used {
		return set.budget(phIdle)
	}
	return min(set.budget(phIdle), set.budget(phHead))
}

// cost is what a phase's budget running out costs: the client gets refuse from the LB (408,
// for reason) and the connection closes; or the attempt at the backend fails as attempt and
// the failure policy decides (failure: a connect is retried elsewhere, a slow backend is a
// 504); or, with neither, the connection just closes (an idle client, a stalled relay).
type cost struct {
	refuse  int
	reason  string
	attempt attemptError
}

// expiry is the cost of running out of phase p's budget.
func expiry(p phase) cost {
	switch p {
	case phHead:
		return cost{refuse: 408, reason: "request head not complete in time"}
	case phBodyWait:
		return cost{refuse: 408, reason: "request body stalled"}
	case phConnect:
		return cost{attempt: attemptConnect}
	case phSend, phAwait: // a backend that takes no byte of the request is slow, not broken
		return cost{attempt: attemptTimeout}
	}
	return cost{}
}
