package lb

import (
	"time"
)

// drain is the LB's own drain handshake, the same contract as every server zero502 rolls
// (DESIGN.md section 1): for the drain window its health (/_lb/health on the proxy listener,
// /admin/health on the admin one) answers 503 while it keeps proxying, every response carrying
// Connection: close; then it stops accepting, closes idle client connections, lets in-flight
// requests finish within the shutdown budget and closes whatever is left.
func (s *Server) drain() error {
	s.draining.Store(true)
	s.log.Info("lb drain started", "phase", "draining", "drain", s.set.Drain.String())
	if s.set.Drain > 0 {
		<-s.clock.After(s.set.Drain)
	}
	s.log.Info("lb stops accepting", "phase", "shutdown", "shutdown", s.set.Shutdown.String())
	s.mu.Lock()
	s.closing.Store(true)
	_ = s.ln.Close()
	done := make(chan struct{})
	if len(s.conns) == 0 {
		close(done)
	} else {
		s.done = done
	}
	for cc := range s.conns {
		if cc.idle.Load() {
			_ = cc.conn.SetReadDeadline(time.Unix(1, 0))
		}
	}
	s.mu.Unlock()
	s.closeParked(func(*clientConn) bool { return true })
	select {
	case <-done:
		s.log.Info("lb stopped", "phase", "stopped", "in_flight_left", 0)
		return nil
	case <-s.clock.After(s.set.Shutdown):
	}
	s.mu.Lock()
	left := len(s.conns)
	for cc := range s.conns {
		_ = cc.conn.Close()
	}
	s.mu.Unlock()
	s.log.Warn("lb stopped with requests cut off by the shutdown budget", "phase", "stopped", "in_flight_left", left)
	return nil
}
