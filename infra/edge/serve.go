package edge

import (
	"context"
	"errors"
	"log/slog"
	"net"
	"sync"
	"sync/atomic"
	"time"

	"github.com/zero502/zero502/infra/clock"
	"github.com/zero502/zero502/infra/drain"
)

// serveDrained runs the drain handshake (infra/drain.ServeTCP, the contract every zero502 server
// follows) over ln, calling relay for each accepted connection as a *pairedConn. When ctx ends,
// onDraining runs, ln keeps accepting for the drain window (none when handedOff, not nil, says
// ctx ended for a hand-off to an upgraded process), then it is closed and open connections get
// the shutdown budget. A linger before the budget ends (at most 2 s, at most half the budget)
// each still open gets a FIN toward its server: the server finishes what it was
// answering and closes, and its FIN reaches the client after the answer, so the connection ends
// cleanly within the budget (an HTTP server behind closes after its response; a chat's
// WebSocket reconnects; nobody reads a reset). What is still open when the budget runs out is
// closed, both sides of it. Every connection accepted is counted in accepted (nil: the listener
// counts them, as the Relay's origin.Listener does), one beyond max open at once too, before it
// is closed at once and counted in overCap.
// Each phase gets a log line of its own (who names the server in it): drain's own lines speak
// of an HTTP health path a TCP server does not have.
func serveDrained(ctx context.Context, ln net.Listener, relay func(*pairedConn), max int64, accepted, overCap *atomic.Uint64,
	window, shutdown time.Duration, handedOff func() bool, clk clock.Clock, log *slog.Logger, who string, onDraining func()) error {
	var open atomic.Int64
	conns := &openConns{set: map[*pairedConn]struct{}{}}
	phases := &drainPhases{addr: ln.Addr().String(), drain: window, handedOff: handedOff, shutdown: shutdown, clk: clk, log: log,
		who: who, onDraining: onDraining, open: open.Load, finish: conns.finish, done: make(chan struct{})}
	defer close(phases.done)
	// The window is known only once ctx ended (none after a hand-off): ServeTCP runs without one,
	// under a context that ends when the window here is over.
	serving, stopServing := context.WithCancel(context.WithoutCancel(ctx))
	defer stopServing()
	go func() {
		select {
		case <-ctx.Done():
		case <-phases.done:
			return
		}
		phases.enter(drain.PhaseDraining, clk.Now())
		select {
		case <-clk.After(phases.window):
		case <-phases.done:
		}
		stopServing()
	}()
	return drain.ServeTCP(serving, pairingListener{Listener: ln, log: log, who: who}, func(c net.Conn) {
		defer open.Add(-1)
		if accepted != nil {
			accepted.Add(1)
		}
		if open.Add(1) > max {
			overCap.Add(1)
			_ = c.Close()
			return
		}
		pc := c.(*pairedConn)
		conns.add(pc)
		defer conns.remove(pc)
		relay(pc)
	}, drain.Handshake{Shutdown: shutdown, Clock: clk, OnPhase: func(p drain.Phase, at time.Time) {
		if p != drain.PhaseDraining { // entered above, as ctx ended
			phases.enter(p, at)
		}
	}})
}

// drainPhases is what a forwarder does at each phase of the drain handshake, whichever engine
// forwards (the goroutines of serveDrained, or the event loops): the onDraining hook, a log line
// per phase, and the FINs toward the servers a linger before the shutdown budget ends.
type drainPhases struct {
	addr            string
	drain, shutdown time.Duration // the drain window (edge.drain) and the shutdown budget
	// handedOff, when not nil, says the drain follows a hand-off to an upgraded process: no window
	handedOff  func() bool
	clk        clock.Clock
	log        *slog.Logger
	who        string
	onDraining func()
	open       func() int64  // connections open now
	finish     func() int    // half-closes every open connection toward its server; how many
	done       chan struct{} // closed when the server returns: the linger's FINs are moot

	began  time.Time
	window time.Duration // the drain window, decided as the drain begins: drain, or none after a hand-off
	handed bool          // the drain follows a hand-off
}

// begin decides the drain window as the drain begins: none after a hand-off, whose successor
// already serves the same sockets, else drain (long enough to leave the DNS A set).
func (d *drainPhases) begin() {
	d.handed = d.handedOff != nil && d.handedOff()
	d.window = d.drain
	if d.handed {
		d.window = 0
	}
}

// enter is the handshake's OnPhase (PhaseDraining sets the window: begin).
func (d *drainPhases) enter(p drain.Phase, at time.Time) {
	switch p {
	case drain.PhaseDraining:
		d.began = at
		d.begin()
		d.onDraining()
		if d.handed {
			d.log.Info(d.who+" handed its listeners to the upgraded process: stops accepting now, without a drain window; open connections get the shutdown budget",
				"phase", string(p), "addr", d.addr, "shutdown", d.shutdown.String(), "open", d.open())
			return
		}
		d.log.Info(d.who+" drain started: reporting draining, still forwarding and accepting",
			"phase", string(p), "addr", d.addr, "window", d.window.String(), "open", d.open())
	case drain.PhaseStoppedAccepting:
		linger := min(finLinger, d.shutdown/2)
		go func() {
			select {
			case <-d.clk.After(d.shutdown - linger):
				if n := d.finish(); n > 0 {
					d.log.Info(d.who+" ends open connections cleanly: a FIN to each server", "open", n, "linger", linger.String())
				}
			case <-d.done:
			}
		}()
		d.log.Info(d.who+" drain window over: stopped accepting, open connections get the shutdown budget",
			"phase", string(p), "addr", d.addr, "after", at.Sub(d.began).String(),
			"shutdown", d.shutdown.String(), "open", d.open())
	case drain.PhaseDone:
		d.log.Info(d.who+" drain done", "phase", string(p), "addr", d.addr,
			"took", at.Sub(d.began).String(), "closed_by_budget", d.open())
	}
}

// finLinger is how long before the shutdown budget ends the drain half-closes what is still
// open, for the peers to close their side.
const finLinger = 2 * time.Second

// openConns are the connections being relayed, for the drain's FINs.
type openConns struct {
	mu  sync.Mutex
	set map[*pairedConn]struct{}
}

func (o *openConns) add(c *pairedConn) {
	o.mu.Lock()
	o.set[c] = struct{}{}
	o.mu.Unlock()
}

func (o *openConns) remove(c *pairedConn) {
	o.mu.Lock()
	delete(o.set, c)
	o.mu.Unlock()
}

// finish half-closes every open connection toward its server (the client's side stays open for
// the server's last answer and its FIN) and says how many there were.
func (o *openConns) finish() int {
	o.mu.Lock()
	defer o.mu.Unlock()
	for c := range o.set {
		c.mu.Lock()
		other := c.other
		c.mu.Unlock()
		if cw, ok := other.(closeWriter); ok {
			_ = cw.CloseWrite()
		}
	}
	return len(o.set)
}

// pairingListener hands out accepted connections as *pairedConn, and says at warn level when an
// accept fails (ServeTCP pauses and retries, but its own line is not wired here: see
// serveDrained), as the event loops do.
type pairingListener struct {
	net.Listener
	log *slog.Logger
	who string
}

func (l pairingListener) Accept() (net.Conn, error) {
	c, err := l.Listener.Accept()
	if err != nil {
		if !errors.Is(err, net.ErrClosed) {
			l.log.Warn(l.who+": accept failed, pausing accepts: if out of descriptors (too many open files), "+
				"raise the descriptor limit (LimitNOFILE, ulimit -n) above twice --max-conns, or lower --max-conns",
				"addr", l.Addr().String(), "error", err.Error())
		}
		return nil, err
	}
	return &pairedConn{Conn: c}, nil
}

// pairedConn is an accepted connection that knows the connection it is relayed to (the origin,
// or the backend), so closing it closes both: when the shutdown budget runs out the drain closes
// the accepted side, and the relay's other side must not wait for its idle timeout.
type pairedConn struct {
	net.Conn

	mu     sync.Mutex
	closed bool
	other  net.Conn
}

// pair links other to c; false when c is already closed (other is then closed too).
func (c *pairedConn) pair(other net.Conn) bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.closed {
		_ = other.Close()
		return false
	}
	c.other = other
	return true
}

// Close closes c and the connection paired with it.
func (c *pairedConn) Close() error {
	c.mu.Lock()
	c.closed = true
	other := c.other
	c.mu.Unlock()
	if other != nil {
		_ = other.Close()
	}
	return c.Conn.Close()
}

// CloseWrite half-closes the accepted side.
func (c *pairedConn) CloseWrite() error {
	if cw, ok := c.Conn.(closeWriter); ok {
		return cw.CloseWrite()
	}
	return nil
}

// logger is l, or a logger that discards.
func logger(l *slog.Logger) *slog.Logger {
	if l != nil {
		return l
	}
	return slog.New(slog.DiscardHandler)
}

// clockOr is c, or the wall clock.
func clockOr(c clock.Clock) clock.Clock {
	if c != nil {
		return c
	}
	return clock.Real{}
}
