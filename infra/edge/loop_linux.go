package edge

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net/netip"
	"os"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"golang.org/x/sys/unix"

	"github.com/zero502/zero502/infra/drain"
	"github.com/zero502/zero502/infra/origin"
	"github.com/zero502/zero502/internal/evloop"
	"github.com/zero502/zero502/internal/rawsys"
)

// The event loops are the Forwarder's fast path on Linux, on the skeleton the in-house LB's
// share (internal/evloop): one loop per P, each with its own epoll set and its own duplicate of
// the listening socket (EPOLLEXCLUSIVE, so one loop wakes per burst of connections). A loop
// accepts, connects to the upstream with a non-blocking connect (EPOLLOUT, then SO_ERROR),
// writes the PROXY v2 header with the client's first bytes and then copies bytes both ways with
// plain non-blocking read and write calls on sockets registered once, edge-triggered. A read
// shorter than the buffer counts as "drained" (the next byte, or the FIN, raises a new edge), so
// an exchange costs a read and a write per direction, with no goroutine, no wake-up and no
// timer per connection.
//
// The policy is the goroutine path's, through the same functions: nextUpstream (least
// connections, failover), dialFailed (passive ejection), reconnectAfterEject and reconnecting
// (a connect abandoned after its upstream's ejection), headerRefused, relayed (open counts,
// Counts, the connection's log line), drainPhases (the drain's phases and FINs). The loop owns
// only the byte moving: half-close passed on each way (the last direction to end skips it, as in
// splice), IdleTimeout as silence in both directions (a sweep every idle/idleChecks at most),
// ConnectTimeout on the connect. Tests run the package through the goroutine path too
// (ZERO502_TEST_EDGE_ENGINE=goroutines).

// EventLoopsAvailable reports whether this system has the Forwarder's event loops (Linux; see
// loop_other.go).
const EventLoopsAvailable = true

// loopSweep is the longest time between two looks at the loops' deadlines (connect, idle).
const loopSweep = 100 * time.Millisecond

// loopAcceptBatch bounds the connections one wake-up accepts, so that the loop's connections
// are served between bursts.
const loopAcceptBatch = 64

// errShutdown ends a connection the forwarder closed: the drain's budget ran out, or Serve
// returned.
var errShutdown = errors.New("closed by the shutdown")

// loops are the running event loops of one Forwarder; they are the drain.Server that
// drain.Drive steers through the handshake.
type loops struct {
	f     *Forwarder
	log   *slog.Logger
	group *evloop.Group
	all   []*loop
	local netip.AddrPort // the listener's address, when it is not a wildcard: every client's destination

	open     atomic.Int64 // client connections accepted and not closed yet
	stopping atomic.Bool  // StopAccepting ran: the last close signals idle
	idleOnce sync.Once
	idle     chan struct{}
}

// serveLoops forwards on event loops until ctx ends, then drives the drain handshake over
// them. served is false, with nothing started, when the loops cannot run here (a listener
// that is not a TCP socket, epoll refused): the caller serves on the goroutine path.
func (f *Forwarder) serveLoops(ctx context.Context, phases *drainPhases) (served bool, err error) {
	ls, err := f.newLoops(phases.log)
	if err != nil {
		phases.log.Warn("edge: event loops unavailable; forwarding with a goroutine per connection", "error", err.Error())
		return false, nil
	}
	phases.open = ls.open.Load
	phases.finish = ls.finish
	// The loops accept on their own duplicates of the listening socket; Go's copy is closed so
	// that the runtime's poller, which also watches it, does not wake up for every connection
	// (an upgrade's hand-off keeps a duplicate of its own: infra/handoff).
	_ = f.ln.Close()
	f.loops.Store(ls)
	defer f.loops.Store(nil)
	loopCtx, stop := context.WithCancel(context.Background())
	ls.group.Go(func(i int) {
		l := ls.all[i]
		l.Run(loopCtx, evloop.Handler{Accept: l.accept, Event: l.event, Woken: l.runPosted, Sweep: l.sweep})
		l.closeAll(errShutdown)
	})
	<-ctx.Done()
	phases.begin() // the window: none after a hand-off
	err = drain.Drive(phases.addr, ls, drain.Handshake{Window: phases.window, Shutdown: phases.shutdown,
		Clock: phases.clk, OnPhase: phases.enter})
	close(phases.done)
	stop()
	ls.group.PokeAll()
	ls.group.Wait()
	return true, err
}

// newLoops creates f.Loops loops (one per P by default), each with its own epoll set and
// duplicate of f's listener (evloop.NewGroup).
func (f *Forwarder) newLoops(log *slog.Logger) (*loops, error) {
	tl, ok := f.ln.(syscall.Conn) // a *net.TCPListener, also as an upgrade hands it over
	if !ok || f.ln.Addr().Network() != "tcp" {
		return nil, fmt.Errorf("listener %T is not a TCP socket", f.ln)
	}
	raw, err := tl.SyscallConn()
	if err != nil {
		return nil, fmt.Errorf("listener: %w", err)
	}
	lfd := -1
	if err := raw.Control(func(fd uintptr) { lfd = int(fd) }); err != nil {
		return nil, fmt.Errorf("listener: %w", err)
	}
	ls := &loops{f: f, log: log, idle: make(chan struct{}), local: origin.AddrPort(f.ln.Addr())}
	if ls.local.Addr().IsUnspecified() {
		ls.local = netip.AddrPort{} // each connection asks its socket
	}
	// the sweep looks at the deadlines often enough for the idle and connect timeouts
	every := min(loopSweep, max(f.idleTimeout()/idleChecks, time.Millisecond), max(f.connectTimeout()/idleChecks, time.Millisecond))
	ls.group, err = evloop.NewGroup(f.Loops, lfd, evloop.Options{Sweep: every, AcceptBatch: loopAcceptBatch, Log: log, LogPrefix: "edge: ", ErrKey: "error"})
	if err != nil {
		return nil, err
	}
	for _, ev := range ls.group.Loops {
		ls.all = append(ls.all, &loop{Loop: ev, ls: ls, f: f, buf: make([]byte, copyBufferSize)})
	}
	return ls, nil
}

// loop is one event loop. Everything but the posted work and the wake-up is touched only by the
// loop's own goroutine.
type loop struct {
	// the skeleton: its wake-up says another goroutine posted work; its Hold counts the client
	// connections it holds or was handed
	*evloop.Loop
	ls    *loops
	f     *Forwarder
	slots []*lconn
	buf   []byte // scratch: bytes read are written on at once, and kept only when the write is short

	mu     sync.Mutex
	posted []func()
	ended  bool // closeAll ran: no more work
}

// post runs fn on the loop's goroutine; false when the loop has ended (fn never runs).
func (l *loop) post(fn func()) bool {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.ended {
		return false
	}
	l.posted = append(l.posted, fn)
	l.Poke()
	return true
}

// call runs fn on the loop's goroutine and waits for it (not when the loop has ended).
func (l *loop) call(fn func()) {
	done := make(chan struct{})
	if l.post(func() { fn(); close(done) }) {
		<-done
	}
}

// event acts on the events ev of a client or server socket (its token is its descriptor).
func (l *loop) event(token uint64, ev uint32) {
	if fd := int(token); fd < len(l.slots) && l.slots[fd] != nil {
		l.ready(l.slots[fd], fd, ev)
	}
}

// runPosted runs the work other goroutines posted (see post).
func (l *loop) runPosted() {
	l.mu.Lock()
	posted := l.posted
	l.posted = nil
	l.mu.Unlock()
	for _, fn := range posted {
		fn()
	}
}

func (l *loop) setSlot(fd int, c *lconn) {
	if fd >= len(l.slots) {
		ns := make([]*lconn, max(2*len(l.slots), fd+1, 1024))
		copy(ns, l.slots)
		l.slots = ns
	}
	l.slots[fd] = c
}

// register adds fd to the loop's epoll set, edge-triggered for reading and writing, for c.
func (l *loop) register(fd int, c *lconn) error {
	if err := l.Add(fd, evloop.EdgeTriggered, uint64(fd)); err != nil {
		return fmt.Errorf("epoll_ctl: %w", err)
	}
	l.setSlot(fd, c)
	return nil
}

// accept keeps a connection the loop accepted, or hands it to the loop holding the fewest when
// this one holds clearly more (a quarter more, and one), so the loops share the work whichever
// of them the kernel woke, without a hand-off (a wake-up of the other loop) for every short
// connection.
func (l *loop) accept(fd int, rsa *unix.RawSockaddrAny) {
	peer := rawsys.AddrPort(rsa)
	l.f.counts.accepted.Add(1)
	if l.ls.open.Add(1) > maxConns(l.f.MaxConns) {
		l.ls.open.Add(-1)
		l.f.counts.overCap.Add(1)
		_ = unix.Close(fd)
		return
	}
	if t := l.ls.all[l.ls.group.LeastLoaded()]; t != l && t.Held()*5/4+1 < l.Held() {
		t.Hold(1)
		if t.post(func() { t.addClient(fd, peer) }) {
			return
		}
		t.Hold(-1)
	}
	l.Hold(1)
	l.addClient(fd, peer)
}

// sweep enforces the connect and idle deadlines.
func (l *loop) sweep() {
	idle := l.f.idleTimeout()
	for fd, c := range l.slots {
		if c == nil || c.client.fd != fd {
			continue // each connection once, by its client descriptor
		}
		switch c.state {
		case stConnecting:
			if l.Now().After(c.deadline) {
				l.connectFailed(c, os.ErrDeadlineExceeded)
			}
		case stRelaying:
			if l.Now().Sub(c.moved) >= idle {
				l.end(c, errIdle)
			}
		}
	}
}

// closeAll ends the loop: every connection it holds is closed with cause.
func (l *loop) closeAll(cause error) {
	for fd, c := range l.slots {
		if c != nil && c.client.fd == fd {
			l.end(c, cause)
		}
	}
	l.Close()
	l.mu.Lock()
	l.ended = true
	posted := l.posted
	l.posted = nil
	l.mu.Unlock()
	for _, fn := range posted {
		fn() // connections handed over close at once; callers waiting are released
	}
	for fd, c := range l.slots {
		if c != nil && c.client.fd == fd {
			l.end(c, cause)
		}
	}
}

// Draining is the drain.Server's: the drainPhases' onDraining does the work.
func (ls *loops) Draining() {}

// StopAccepting closes every loop's listener and the Forwarder's; open connections go on.
func (ls *loops) StopAccepting() {
	for _, l := range ls.all {
		l.call(l.StopAccepting)
	}
	ls.stopping.Store(true)
	if ls.open.Load() == 0 {
		ls.idleOnce.Do(func() { close(ls.idle) })
	}
}

// Idle is closed once StopAccepting ran and no connection is open.
func (ls *loops) Idle() <-chan struct{} { return ls.idle }

// Cut closes every open connection, both sides, and says how many there were.
func (ls *loops) Cut() int {
	n := int(ls.open.Load())
	for _, l := range ls.all {
		l.call(func() {
			for fd, c := range l.slots {
				if c != nil && c.client.fd == fd {
					l.end(c, errShutdown)
				}
			}
		})
	}
	return n
}

// finish half-closes every relayed connection toward its server (the client's side stays open
// for the server's last answer and its FIN) and says how many connections were open.
func (ls *loops) finish() int {
	n := int(ls.open.Load())
	for _, l := range ls.all {
		l.call(func() {
			for fd, c := range l.slots {
				if c != nil && c.client.fd == fd && c.state == stRelaying {
					rawsys.ShutdownWrite(c.server.fd)
				}
			}
		})
	}
	return n
}

// closed counts a client connection of l as closed.
func (l *loop) closed() {
	l.Hold(-1)
	if l.ls.open.Add(-1) == 0 && l.ls.stopping.Load() {
		l.ls.idleOnce.Do(func() { close(l.ls.idle) })
	}
}
