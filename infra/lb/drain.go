package lb

import (
	"sync"
	"time"

	"github.com/zero502/zero502/infra/drain"
)

// drain is the LB's drain handshake, infra/drain's (docs/ARCHITECTURE.md, "The drain
// contract"), with the same phases and log lines as every server zero502 runs: for the drain
// window its health (/_lb/health on the proxy listener, /admin/health on the admin one) answers
// 503 while it keeps proxying, every response carrying Connection: close; then it stops
// accepting, closes idle client connections, lets in-flight requests finish within the shutdown
// budget and closes whatever is left. Upgraded connections (WebSockets) get the budget too: a
// linger before it ends (tunnelLinger, at most half the budget) each gets a FIN each way, so its
// peers close it cleanly before the budget is over, and what is still open then is cut with the
// rest. Nothing outlasts the window plus the budget, which I2 keeps below the stop grace.
func (s *Server) drain() error {
	if s.handoff != nil && s.handoff() {
		s.handedOff.Store(true)
		s.stopAccepting()
		s.log.Info("lb handed its listeners to the upgraded process: it accepts no new connection, and its health stays 200 " +
			"while it drains the connections it has")
	}
	d := &lbDrain{s: s, stop: make(chan struct{})}
	defer d.stopWatching()
	return drain.Drive(s.Addr(), d, drain.Handshake{
		Window: s.set.Drain, Shutdown: s.set.Shutdown, HealthPath: ownHealthPath, Clock: s.clock, Logger: s.log,
	})
}

// lbDrain is the Server the handshake drives.
type lbDrain struct {
	s    *Server
	stop chan struct{}
	once sync.Once
}

func (d *lbDrain) Draining() { d.s.draining.Store(true) }

// drainingHealth says whether the LB's own health answers 503: from the start of its drain on,
// but for a drain after a hand-off (the address goes on being served by the successor).
func (s *Server) drainingHealth() bool {
	return (s.draining.Load() || s.closing.Load()) && !s.handedOff.Load()
}

// freshGrace is how long a client connection accepted just before the LB stopped accepting, and
// not used yet, gets for its first request once the drain closes idle connections: it was
// opened to send one (a listener handed to a new process, a balancer in front that had not
// seen the drain yet), and closing it under that request would reset it. As net/http's
// Shutdown does with new connections, it is closed only when nothing came.
const freshGrace = time.Second

func (d *lbDrain) StopAccepting() {
	s := d.s
	linger := min(tunnelLinger, s.set.Shutdown/2)
	go func() {
		select {
		case <-s.clock.After(s.set.Shutdown - linger):
		case <-d.stop:
			return
		}
		if n := s.tunnels.count(); n > 0 {
			s.log.Info("lb ends upgraded connections", "upgraded", n, "linger", linger.String())
			s.tunnels.shut(linger)
		}
	}()
	s.stopAccepting()
	s.mu.Lock()
	s.closing.Store(true)
	for cc := range s.conns {
		if cc.idle.Load() && cc.used.Load() {
			_ = cc.conn.SetReadDeadline(time.Unix(1, 0))
		}
	}
	s.mu.Unlock()
	if s.loops != nil {
		s.loops.wakeAll() // they stop accepting and close their idle connections
	}
}

// stopAccepting closes the LB's listeners to new connections (each event loop drops its copy
// when woken); the connections it has go on as before. The drain's StopAccepting calls it and,
// after a hand-off, the drain's start: the successor shares the sockets and accepts from then
// on, so what this process accepted has a whole drain window to be served and ended with
// Connection: close before idle connections are closed.
func (s *Server) stopAccepting() {
	if !s.acceptStopped.CompareAndSwap(false, true) {
		return
	}
	_ = s.ln.Close()
	s.stopTLS()
	if s.loops != nil {
		s.loops.wakeAll()
	}
}

// Idle watches the client connections of both paths (the loops count theirs in an atomic).
func (d *lbDrain) Idle() <-chan struct{} {
	idle := make(chan struct{})
	go func() {
		tick := time.NewTicker(5 * time.Millisecond)
		defer tick.Stop()
		for d.s.clients() > 0 {
			select {
			case <-tick.C:
			case <-d.stop:
				return
			}
		}
		close(idle)
	}()
	return idle
}

func (d *lbDrain) stopWatching() { d.once.Do(func() { close(d.stop) }) }

func (d *lbDrain) Cut() int {
	s := d.s
	left := s.clients()
	if left == 0 {
		return 0
	}
	s.aborting.Store(true)
	if s.loops != nil {
		s.loops.wakeAll()
	}
	s.mu.Lock()
	for cc := range s.conns {
		_ = cc.conn.Close()
	}
	s.mu.Unlock()
	return left
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
