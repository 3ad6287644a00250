package lb

import (
	"net"
	"sync"
	"syscall"
	"time"
)

// upstream is one connection from the LB to a backend, with its own read buffer.
type upstream struct {
	conn      *net.TCPConn
	raw       syscall.RawConn
	in        reader
	backend   *Backend
	idleSince time.Time
	// reused is true when the connection came from the pool (it may have been closed by the
	// backend while it sat idle).
	reused bool
}

func (u *upstream) close() {
	_ = u.conn.Close()
	u.in.buf = nil
}

// pool keeps idle keep-alive connections to one backend, most recently used first.
//
// The reuse race and how the LB avoids losing a request to it: a backend may close an idle
// connection at the moment the LB sends a request on it. The LB never keeps a connection longer
// than balancer.idle_timeout, which invariant I7 keeps below the app's own keep-alive timeout,
// so a backend does not close a connection for idleness first. For what remains (a backend that
// restarted or crashed), the two kinds of request are handled differently:
//   - a request without a body (GET, HEAD) that fails on a pooled connection before any byte of
//     the response came back is sent again on a fresh connection to the same backend;
//   - a request with a body is sent on a pooled connection only after a non-blocking MSG_PEEK
//     probe shows the connection still open with nothing unexpected waiting on it (a closed
//     connection reads EOF at once, since the backend's FIN has already arrived), and otherwise
//     on a fresh connection. What is left is the window between that probe and the backend's
//     close, microseconds long; a request with a body that fails there, or anywhere, is never
//     replayed: the client gets 502, so a POST is never executed twice.
type pool struct {
	backend *Backend
	mu      sync.Mutex
	idle    []*upstream
	max     int
}

// get returns an idle connection younger than maxAge, or nil. With probe it checks the
// connection is still open first (see the type comment).
func (p *pool) get(now time.Time, maxAge time.Duration, probe bool) *upstream {
	for {
		p.mu.Lock()
		n := len(p.idle)
		if n == 0 {
			p.mu.Unlock()
			return nil
		}
		u := p.idle[n-1]
		p.idle[n-1] = nil
		p.idle = p.idle[:n-1]
		p.mu.Unlock()
		if now.Sub(u.idleSince) >= maxAge || (probe && !alive(u)) {
			u.close()
			continue
		}
		u.reused = true
		return u
	}
}

// put parks u for reuse, unless the backend left rotation or the pool is full.
func (p *pool) put(u *upstream, now time.Time) {
	if !p.backend.InRotation() {
		u.close()
		return
	}
	u.idleSince = now
	u.reused = false
	p.mu.Lock()
	if len(p.idle) >= p.max {
		p.mu.Unlock()
		u.close()
		return
	}
	p.idle = append(p.idle, u)
	p.mu.Unlock()
}

// closeIdle closes the idle connections older than maxAge (all when maxAge is 0).
func (p *pool) closeIdle(now time.Time, maxAge time.Duration) {
	p.mu.Lock()
	keep := p.idle[:0]
	var drop []*upstream
	for _, u := range p.idle {
		if maxAge == 0 || now.Sub(u.idleSince) >= maxAge {
			drop = append(drop, u)
		} else {
			keep = append(keep, u)
		}
	}
	for i := len(keep); i < len(p.idle); i++ {
		p.idle[i] = nil
	}
	p.idle = keep
	p.mu.Unlock()
	for _, u := range drop {
		u.close()
	}
}

// idleCount is how many connections wait in the pool.
func (p *pool) idleCount() int {
	p.mu.Lock()
	defer p.mu.Unlock()
	return len(p.idle)
}
