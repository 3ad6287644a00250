package lb

import (
	"sync"
	"sync/atomic"
	"time"
)

// pooled is what the pool needs of a connection to a backend. Both paths' connections are
// pooled: the goroutine path's upstream and the event loops' lup.
type pooled interface {
	comparable
	// target is the backend the connection goes to.
	target() *Backend
	// peerClosed says the backend is known to have closed it (or written to it unasked),
	// without a syscall.
	peerClosed() bool
	// unread says bytes of the backend's are buffered that no response claimed.
	unread() bool
	// mayHoldMore says the socket may hold bytes no response claimed: the response's last read
	// filled what it asked for, so nothing showed the socket empty (put then probes).
	mayHoldMore() bool
	// alive is the non-blocking MSG_PEEK probe: open, with nothing waiting on it.
	alive() bool
	close()
}

// idlePool keeps idle keep-alive connections, most recently used last; it is the one pool of
// both paths (the goroutine path's per backend under a lock, see lockedPool; each event loop's
// per backend index without one, see loop.pool). Every parked connection counts in its
// backend's idle gauge.
//
// The reuse race and how the LB avoids losing a request to it: a backend may close an idle
// connection at the moment the LB sends a request on it. The LB never keeps a connection longer
// than balancer.idle_timeout, which invariant I7 keeps below the app's own keep-alive timeout,
// so a backend does not close a connection for idleness first. For what remains (a backend that
// restarted or crashed), the two kinds of request are handled differently:
//   - a request that may be replayed (GET, HEAD without a body) that fails on a pooled
//     connection before any byte of the response came back is sent again on a fresh connection
//     to the same backend (staleRetry);
//   - any other request (and, on the goroutine path, which hears nothing of a parked
//     connection until it reads, every request) is sent on a pooled connection only after a
//     non-blocking MSG_PEEK
//     probe shows the connection still open with nothing unexpected waiting on it (a closed
//     connection reads EOF at once, since the backend's FIN has already arrived), and otherwise
//     on a fresh connection (probeBeforeReuse). What is left is the window between that probe
//     and the backend's close, microseconds long; such a request that fails there, or
//     anywhere, is never replayed: the client gets 502, so a POST is never executed twice.
//
// A connection to a backend out of rotation (draining, ejected, removed) is never parked, and
// evict closes the parked ones.
type idlePool[C pooled] struct {
	idle []idleEntry[C]
}

type idleEntry[C pooled] struct {
	conn  C
	since time.Time
}

// get returns the most recently used idle connection to b younger than maxAge, closing the
// unfit ones it meets on the way. With probe it runs alive first (see the type comment).
func (p *idlePool[C]) get(b *Backend, now time.Time, maxAge time.Duration, probe bool) (C, bool) {
	for n := len(p.idle); n > 0; n = len(p.idle) {
		e := p.idle[n-1]
		p.idle[n-1] = idleEntry[C]{}
		p.idle = p.idle[:n-1]
		e.conn.target().idle.Add(-1)
		if e.conn.target() != b || now.Sub(e.since) >= maxAge || e.conn.peerClosed() || probe && !e.conn.alive() {
			e.conn.close()
			continue
		}
		return e.conn, true
	}
	var none C
	return none, false
}

// put parks c after a response that left it reusable, unless its backend left rotation,
// something unread or the backend's close arrived on it, or max connections to its backend
// wait already, in every pool of both paths (its idle gauge: max_idle_per_backend is per
// backend, not per event loop).
// Bytes the backend sent past its response (a body on a HEAD, 204 or 304, a Content-Length
// shorter than the body) would be the next request's response, another client's: a
// connection that may hold more is parked only when the probe finds it empty.
func (p *idlePool[C]) put(c C, now time.Time, max int) {
	b := c.target()
	if !b.InRotation() || c.peerClosed() || c.unread() || c.mayHoldMore() && !c.alive() || !takeIdleSlot(&b.idle, max) {
		c.close()
		return
	}
	p.idle = append(p.idle, idleEntry[C]{conn: c, since: now})
}

// takeIdleSlot counts one more idle connection in idle unless max are counted already.
func takeIdleSlot(idle *atomic.Int64, max int) bool {
	for {
		n := idle.Load()
		if n >= int64(max) {
			return false
		}
		if idle.CompareAndSwap(n, n+1) {
			return true
		}
	}
}

// evict closes the idle connections older than maxAge (all when maxAge is 0) and those to a
// backend out of rotation.
func (p *idlePool[C]) evict(now time.Time, maxAge time.Duration) {
	keep := p.idle[:0]
	for _, e := range p.idle {
		if (maxAge == 0 || now.Sub(e.since) >= maxAge) || !e.conn.target().InRotation() {
			e.conn.target().idle.Add(-1)
			e.conn.close()
			continue
		}
		keep = append(keep, e)
	}
	clear(p.idle[len(keep):])
	p.idle = keep
}

// remove takes c out of the pool (the backend closed it while it waited) without closing it;
// false when c was not parked.
func (p *idlePool[C]) remove(c C) bool {
	for i, e := range p.idle {
		if e.conn == c {
			copy(p.idle[i:], p.idle[i+1:])
			p.idle[len(p.idle)-1] = idleEntry[C]{}
			p.idle = p.idle[:len(p.idle)-1]
			c.target().idle.Add(-1)
			return true
		}
	}
	return false
}

// lockedPool is the goroutine path's pool of one backend, shared by its goroutines.
type lockedPool struct {
	backend *Backend
	mu      sync.Mutex
	idlePool[*upstream]
	max int
}

// get returns an idle connection to the backend younger than maxAge, or nil (see idlePool.get).
func (p *lockedPool) get(now time.Time, maxAge time.Duration, probe bool) *upstream {
	p.mu.Lock()
	u, ok := p.idlePool.get(p.backend, now, maxAge, probe)
	p.mu.Unlock()
	if !ok {
		return nil
	}
	u.reused = true
	return u
}

// put parks u for reuse (see idlePool.put).
func (p *lockedPool) put(u *upstream, now time.Time) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.idlePool.put(u, now, p.max)
}

// evict closes old idle connections (see idlePool.evict).
func (p *lockedPool) evict(now time.Time, maxAge time.Duration) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.idlePool.evict(now, maxAge)
}
