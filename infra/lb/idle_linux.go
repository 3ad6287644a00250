package lb

import (
	"context"
	"errors"
	"sync"
	"syscall"
	"time"
)

// parking holds idle keep-alive client connections without a goroutine each. A connection that
// stayed quiet for hotWindow after its last response is registered, one-shot, in the LB's own
// epoll set and its goroutine ends; when the client sends its next request (or closes), one
// loop starts a new goroutine for it. An idle connection then costs its socket and a few
// hundred bytes, not a goroutine stack (Go keeps at least 2 KiB, in practice 4–8 KiB, per
// parked goroutine); the same loop closes connections idle past the client idle timeout.
type parking struct {
	epfd  int
	mu    sync.Mutex
	conns map[int]*clientConn // by file descriptor
}

func newParking() (*parking, error) {
	epfd, err := syscall.EpollCreate1(syscall.EPOLL_CLOEXEC)
	if err != nil {
		return nil, err
	}
	return &parking{epfd: epfd, conns: map[int]*clientConn{}}, nil
}

// park hands cc to the parking loop; false means it could not (the caller keeps the
// connection, or closes it when the LB is stopping).
func (s *Server) park(cc *clientConn) bool {
	if s.loops != nil {
		return s.parkInLoop(cc)
	}
	p := s.parking
	if p == nil || cc.fd < 0 {
		return false
	}
	cc.in.release()
	cc.parkedAt = time.Now()
	cc.armed = false
	p.mu.Lock()
	p.conns[cc.fd] = cc
	p.mu.Unlock()
	op := syscall.EPOLL_CTL_MOD
	if !cc.registered {
		op = syscall.EPOLL_CTL_ADD
	}
	ev := syscall.EpollEvent{Events: syscall.EPOLLIN | syscall.EPOLLRDHUP | epollOneShot, Fd: int32(cc.fd)}
	err := syscall.EpollCtl(p.epfd, op, cc.fd, &ev)
	p.mu.Lock()
	defer p.mu.Unlock()
	if err == nil {
		cc.registered = true
		if s.closing.Load() {
			// the drain may have swept the parking already: take it back, the caller closes it
			if p.conns[cc.fd] == cc {
				delete(p.conns, cc.fd)
				return false
			}
			return true // the drain (or a wake-up) owns it now
		}
		cc.armed = true
		return true
	}
	if p.conns[cc.fd] == cc {
		delete(p.conns, cc.fd)
	}
	return false
}

const epollOneShot = 1 << 30 // EPOLLONESHOT (syscall has no constant for it)

// runParking wakes parked connections that became readable and closes those idle too long.
func (s *Server) runParking(ctx context.Context) {
	p := s.parking
	defer syscall.Close(p.epfd)
	events := make([]syscall.EpollEvent, 256)
	lastSweep := time.Now()
	for ctx.Err() == nil {
		n, err := syscall.EpollWait(p.epfd, events, 100)
		if err != nil && !errors.Is(err, syscall.EINTR) {
			s.log.Error("parking epoll_wait failed", "err", err)
			time.Sleep(100 * time.Millisecond)
			continue
		}
		for i := 0; i < n; i++ {
			fd := int(events[i].Fd)
			p.mu.Lock()
			cc := p.conns[fd]
			delete(p.conns, fd)
			p.mu.Unlock()
			if cc != nil {
				go s.serveConn(cc, true)
			}
		}
		if now := time.Now(); now.Sub(lastSweep) >= 100*time.Millisecond {
			lastSweep = now
			s.closeParked(func(cc *clientConn) bool { return now.Sub(cc.parkedAt) >= s.set.ClientIdleTimeout })
		}
	}
}

// closeParked closes the parked connections for which expired says so.
func (s *Server) closeParked(expired func(*clientConn) bool) {
	p := s.parking
	if p == nil {
		return
	}
	var done []*clientConn
	p.mu.Lock()
	for fd, cc := range p.conns {
		if cc.armed && expired(cc) {
			delete(p.conns, fd)
			done = append(done, cc)
		}
	}
	p.mu.Unlock()
	for _, cc := range done {
		_ = cc.conn.Close()
		s.forget(cc)
	}
}

func (p *parking) count() int {
	p.mu.Lock()
	defer p.mu.Unlock()
	return len(p.conns)
}
