package lb

import (
	"time"
)

// drain is the LB's own drain handshake, the same contract as every server zero502 rolls
// (docs/ARCHITECTURE.md, "The drain contract"): for the drain window its health (/_lb/health on
// the proxy listener, /admin/health on the admin one) answers 503 while it keeps proxying, every
// response carrying Connection: close; then it stops accepting, closes idle client connections,
// lets in-flight requests finish within the shutdown budget and closes whatever is left. Upgraded
// connections (WebSockets) get the budget too, then a FIN each way and tunnelLinger for their
// peers to close before they are cut.
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
	for cc := range s.conns {
		if cc.idle.Load() {
			_ = cc.conn.SetReadDeadline(time.Unix(1, 0))
		}
	}
	s.mu.Unlock()
	if s.loops != nil {
		s.loops.wakeAll() // they stop accepting and close their idle connections
	}
	s.closeParked(func(*clientConn) bool { return true })
	budget := s.clock.After(s.set.Shutdown)
	tick := time.NewTicker(5 * time.Millisecond)
	defer tick.Stop()
	for s.clients() > 0 {
		select {
		case <-tick.C:
			continue
		case <-budget:
		}
		if n := s.tunnels.count(); n > 0 {
			// upgraded connections had the budget: a FIN each way, a moment for the peers' own
			s.log.Info("lb ends upgraded connections", "phase", "shutdown", "upgraded", n)
			s.tunnels.shut(tunnelLinger)
			for end := time.Now().Add(tunnelLinger); s.clients() > 0 && time.Now().Before(end); {
				<-tick.C
			}
			if s.clients() == 0 {
				break
			}
		}
		s.aborting.Store(true)
		left := s.clients()
		if s.loops != nil {
			s.loops.wakeAll()
		}
		s.mu.Lock()
		for cc := range s.conns {
			_ = cc.conn.Close()
		}
		s.mu.Unlock()
		s.log.Warn("lb stopped with requests cut off by the shutdown budget", "phase", "stopped", "in_flight_left", left)
		return nil
	}
	s.log.Info("lb stopped", "phase", "stopped", "in_flight_left", 0)
	return nil
}

// clients is how many client connections are open, on either path.
func (s *Server) clients() int {
	s.mu.Lock()
	n := len(s.conns)
	s.mu.Unlock()
	if s.loops != nil {
		n += int(s.loops.clients.Load())
	}
	return n
}
