package lb

import (
	"net"
	"sync"
	"time"
)

// Resending after an ejection. A host that drops off the network answers nothing: its
// requests in flight would wait out header_timeout and get 504, although the checks take it
// out of rotation well before. So when a backend leaves rotation for failing (its checks, or a
// passive ejection: outage), each request waiting on it that the policy allows (resendAfterEject:
// GET or HEAD without a body, no response byte yet) is given up there and sent at once to
// another healthy backend (resendNow), on both paths:
//   - the event loops compare, once woken by the transition, the backend's outage count with
//     the one each of their requests saw when it was sent (loop.resendEjected), and a request
//     still connecting then compares once it waits for the response head (loop.resendDue);
//   - the goroutine path's requests wait in a blocking read: each registers with its backend
//     (headWaits) while it waits for the response head, and the outage cuts the read short;
//     the request's own goroutine then decides, with its tried set and its bytes.
// The request is concluded at the ejected backend as attemptEjected (policy.go's failure sends
// it on) and counted once per resend.

// outage counts b's leaving rotation for failing, before the rotation is rebuilt and the event
// loops are woken (Server.changed): the loops see the count move and look at their requests.
func (s *Server) outage(b *Backend) {
	b.outages.Add(1)
	s.outages.Add(1)
}

// headWaits are the goroutine path's requests waiting on one backend for a response head, each
// one a request resendAfterEject allows so far: the only ones an outage concerns.
type headWaits struct {
	mu  sync.Mutex
	set map[*headWait]struct{}
}

// headWait is one waiting request: its connection to the backend, and whether an outage cut
// its wait short (the read deadline set in the past) and its goroutine has not seen it yet.
type headWait struct {
	conn *net.TCPConn
	cut  bool // under headWaits.mu
}

// wait registers hw for b, on conn, as picked when b's outage count was seen; an outage since
// then (before the registration) cuts it at once.
func (b *Backend) wait(hw *headWait, conn *net.TCPConn, seen uint64) {
	w := &b.waits
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.set == nil {
		w.set = map[*headWait]struct{}{}
	}
	hw.conn, hw.cut = conn, false
	w.set[hw] = struct{}{}
	if b.outageSince(seen) {
		hw.cutLocked()
	}
}

// outageSince says b left rotation for failing since its outage count was seen (when a request
// was sent to it): both paths' test, once their request waits for the response head, of
// whether an outage concerns it (wait; the loops' resendDue).
func (b *Backend) outageSince(seen uint64) bool { return b.outages.Load() != seen }

// unwait ends hw's registration; a cut its goroutine did not take leaves the connection's read
// deadline as it was before (none: what follows sets its own).
func (b *Backend) unwait(hw *headWait) {
	w := &b.waits
	w.mu.Lock()
	defer w.mu.Unlock()
	delete(w.set, hw)
	if hw.cut {
		_ = hw.conn.SetReadDeadline(time.Time{})
		hw.cut = false
	}
	hw.conn = nil
}

// cutWaits cuts short every wait registered for b (after an outage).
func (b *Backend) cutWaits() {
	w := &b.waits
	w.mu.Lock()
	defer w.mu.Unlock()
	for hw := range w.set {
		hw.cutLocked()
	}
}

// cutLocked makes hw's blocked read return at once.
func (hw *headWait) cutLocked() {
	hw.cut = true
	_ = hw.conn.SetReadDeadline(time.Unix(1, 0))
}

// takeCut reports whether an outage cut hw's wait short since the last call, for the
// goroutine whose read returned a deadline error.
func (b *Backend) takeCut(hw *headWait) bool {
	w := &b.waits
	w.mu.Lock()
	defer w.mu.Unlock()
	cut := hw.cut
	hw.cut = false
	return cut
}

// resumeWait puts hw's header deadline back at at, after a cut its request did not follow;
// unless another cut came meanwhile, which its next read returns.
func (b *Backend) resumeWait(hw *headWait, at time.Time) {
	w := &b.waits
	w.mu.Lock()
	defer w.mu.Unlock()
	if !hw.cut {
		_ = hw.conn.SetReadDeadline(at)
	}
}
