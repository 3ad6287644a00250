package edge

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net/netip"
	"os"
	"runtime"
	"sync"
	"sync/atomic"
	"syscall"
	"time"
	"unsafe"

	"golang.org/x/sys/unix"

	"github.com/zero502/zero502/infra/drain"
	"github.com/zero502/zero502/internal/rawsys"
)

// The event loops are the Forwarder's fast path on Linux, built like the in-house LB's
// (infra/lb/loop_linux.go): one loop per P, each with its own epoll set and its own duplicate of
// the listening socket (EPOLLEXCLUSIVE, so one loop wakes per burst of connections). A loop
// accepts, connects to the upstream with a non-blocking connect (EPOLLOUT, then SO_ERROR),
// writes the PROXY v2 header with the client's first bytes and then copies bytes both ways with
// plain non-blocking read and write calls on sockets registered once, edge-triggered. A read
// shorter than the buffer counts as "drained" (the next byte, or the FIN, raises a new edge), so
// an exchange costs a read and a write per direction, with no goroutine, no wake-up and no
// timer per connection.
//
// The policy is the goroutine path's, through the same functions: nextUpstream (least
// connections, failover), dialFailed (passive ejection), headerRefused, relayed (open counts,
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

// loopYieldEvery is how often a busy loop passes through the Go scheduler: a goroutine that
// does not for 10 ms gets preempted by the runtime's monitor, which then wakes up often.
const loopYieldEvery = 5 * time.Millisecond

// loopAcceptBatch bounds the connections one wake-up accepts, so that the loop's connections
// are served between bursts.
const loopAcceptBatch = 64

const connEvents = unix.EPOLLIN | unix.EPOLLOUT | unix.EPOLLRDHUP | unix.EPOLLET

// errShutdown ends a connection the forwarder closed: the drain's budget ran out, or Serve
// returned.
var errShutdown = errors.New("closed by the shutdown")

// loops are the running event loops of one Forwarder; they are the drain.Server that
// drain.Drive steers through the handshake.
type loops struct {
	f     *Forwarder
	log   *slog.Logger
	all   []*loop
	every time.Duration  // the sweep's period
	local netip.AddrPort // the listener's address, when it is not a wildcard: every client's destination

	open     atomic.Int64 // client connections accepted and not closed yet
	stopping atomic.Bool  // StopAccepting ran: the last close signals idle
	idleOnce sync.Once
	idle     chan struct{}
	wg       sync.WaitGroup
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
	loopCtx, stop := context.WithCancel(context.Background())
	for _, l := range ls.all {
		ls.wg.Add(1)
		go func() {
			defer ls.wg.Done()
			l.run(loopCtx)
		}()
	}
	<-ctx.Done()
	err = drain.Drive(phases.addr, ls, drain.Handshake{Window: phases.window, Shutdown: phases.shutdown,
		Clock: phases.clk, OnPhase: phases.enter})
	close(phases.done)
	stop()
	for _, l := range ls.all {
		l.poke()
	}
	ls.wg.Wait()
	return true, err
}

// newLoops creates one loop per P, each with its own epoll set and duplicate of f's listener.
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
	ls := &loops{f: f, log: log, idle: make(chan struct{}), local: addrPort(f.ln.Addr()),
		every: min(loopSweep, max(f.idleTimeout()/idleChecks, time.Millisecond), max(f.connectTimeout()/idleChecks, time.Millisecond))}
	if ls.local.Addr().IsUnspecified() {
		ls.local = netip.AddrPort{} // each connection asks its socket
	}
	n := f.Loops
	if n == 0 {
		n = runtime.GOMAXPROCS(0)
	}
	for range n {
		l, err := ls.newLoop(lfd)
		if err != nil {
			for _, l := range ls.all {
				l.closeAll(errShutdown)
			}
			return nil, err
		}
		ls.all = append(ls.all, l)
	}
	return ls, nil
}

// loop is one event loop. Everything but the posted work and the wake-up is touched only by the
// loop's own goroutine.
type loop struct {
	ls    *loops
	f     *Forwarder
	epfd  int
	wake  int // eventfd: another goroutine posted work
	lfd   int // the loop's duplicate of the listener; -1 once it stopped accepting
	slots []*lconn
	buf   []byte // scratch: bytes read are written on at once, and kept only when the write is short
	now   time.Time

	acceptPaused time.Time // accept failed for lack of descriptors: retry after this

	n atomic.Int64 // client connections this loop holds or was handed

	mu     sync.Mutex
	posted []func()
	ended  bool // closeAll ran: no more work or wake-ups
}

func (ls *loops) newLoop(listenFD int) (*loop, error) {
	epfd, err := unix.EpollCreate1(unix.EPOLL_CLOEXEC)
	if err != nil {
		return nil, fmt.Errorf("epoll_create1: %w", err)
	}
	l := &loop{ls: ls, f: ls.f, epfd: epfd, wake: -1, lfd: -1, buf: make([]byte, copyBufferSize), now: time.Now()}
	l.wake, err = unix.Eventfd(0, unix.EFD_NONBLOCK|unix.EFD_CLOEXEC)
	if err == nil {
		err = unix.EpollCtl(epfd, unix.EPOLL_CTL_ADD, l.wake, &unix.EpollEvent{Events: unix.EPOLLIN, Fd: int32(l.wake)})
	}
	if err == nil {
		l.lfd, err = unix.FcntlInt(uintptr(listenFD), unix.F_DUPFD_CLOEXEC, 0)
		if err == nil {
			err = l.listen()
		}
	}
	if err != nil {
		l.closeAll(errShutdown)
		return nil, fmt.Errorf("event loop: %w", err)
	}
	return l, nil
}

// listen adds the loop's listener to its epoll set.
func (l *loop) listen() error {
	return rawsys.WatchListener(l.epfd, l.lfd)
}

// post runs fn on the loop's goroutine; false when the loop has ended (fn never runs).
func (l *loop) post(fn func()) bool {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.ended {
		return false
	}
	l.posted = append(l.posted, fn)
	one := [8]byte{1}
	_, _ = unix.Write(l.wake, one[:])
	return true
}

// call runs fn on the loop's goroutine and waits for it (not when the loop has ended).
func (l *loop) call(fn func()) {
	done := make(chan struct{})
	if l.post(func() { fn(); close(done) }) {
		<-done
	}
}

// poke wakes the loop (to see its context ended).
func (l *loop) poke() { l.post(func() {}) }

func (l *loop) run(ctx context.Context) {
	events := make([]unix.EpollEvent, 256)
	lastSweep := time.Now()
	lastYield := lastSweep
	for ctx.Err() == nil {
		// Look first without blocking and without telling the scheduler (a busy loop nearly
		// always finds events); only an empty look blocks, as a system call the scheduler
		// knows about, so its P serves other goroutines meanwhile.
		n, err := pollNow(l.epfd, events)
		if n == 0 && err == nil {
			n, err = unix.EpollWait(l.epfd, events, int(l.ls.every/time.Millisecond))
		}
		if err != nil && !errors.Is(err, unix.EINTR) {
			l.ls.log.Error("edge: epoll_wait failed", "error", err.Error())
			time.Sleep(10 * time.Millisecond)
			continue
		}
		l.now = time.Now()
		if l.now.Sub(lastYield) >= loopYieldEvery {
			lastYield = l.now
			runtime.Gosched()
		}
		for i := range n {
			l.event(int(events[i].Fd), events[i].Events)
		}
		if l.now.Sub(lastSweep) >= l.ls.every {
			lastSweep = l.now
			l.sweep()
		}
	}
	l.closeAll(errShutdown)
}

func (l *loop) event(fd int, ev uint32) {
	switch {
	case fd == l.wake:
		var b [8]byte
		_, _ = unix.Read(l.wake, b[:])
		l.mu.Lock()
		posted := l.posted
		l.posted = nil
		l.mu.Unlock()
		for _, fn := range posted {
			fn()
		}
	case fd == l.lfd:
		l.accept()
	case fd < len(l.slots) && l.slots[fd] != nil:
		l.ready(l.slots[fd], fd, ev)
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
	if err := unix.EpollCtl(l.epfd, unix.EPOLL_CTL_ADD, fd, &unix.EpollEvent{Events: connEvents, Fd: int32(fd)}); err != nil {
		return fmt.Errorf("epoll_ctl: %w", err)
	}
	l.setSlot(fd, c)
	return nil
}

// accept takes the connections waiting on the listener; one goes to the loop holding the
// fewest when this one holds clearly more (a quarter more, and one), so the loops share the work
// whichever of them the kernel woke, without a hand-off (a wake-up of the other loop) for every
// short connection.
func (l *loop) accept() {
	if l.lfd < 0 {
		return
	}
	for range loopAcceptBatch {
		var rsa unix.RawSockaddrAny
		fd, err := rawsys.Accept(l.lfd, &rsa)
		peer := rawsys.AddrPort(&rsa)
		switch {
		case err == nil:
		case errors.Is(err, unix.EAGAIN):
			return
		case errors.Is(err, unix.EINTR), errors.Is(err, unix.ECONNABORTED):
			continue
		case errors.Is(err, unix.EMFILE), errors.Is(err, unix.ENFILE), errors.Is(err, unix.ENOBUFS), errors.Is(err, unix.ENOMEM):
			// out of descriptors: stop listening for a moment (it would wake the loop in vain)
			l.ls.log.Warn("edge: accept failed, pausing accepts", "error", err.Error(), "for", loopSweep.String())
			_ = unix.EpollCtl(l.epfd, unix.EPOLL_CTL_DEL, l.lfd, nil)
			l.acceptPaused = l.now.Add(loopSweep)
			return
		default:
			l.ls.log.Error("edge: accept failed", "error", err.Error())
			return
		}
		l.ls.open.Add(1)
		l.f.counts.accepted.Add(1)
		if t := l.ls.leastLoaded(); t != l && t.n.Load()*5/4+1 < l.n.Load() {
			t.n.Add(1)
			if t.post(func() { t.addClient(fd, peer) }) {
				continue
			}
			t.n.Add(-1)
		}
		l.n.Add(1)
		l.addClient(fd, peer)
	}
	l.post(l.accept) // more may wait: after the connections that are ready
}

// leastLoaded is the loop holding the fewest client connections.
func (ls *loops) leastLoaded() *loop {
	best := ls.all[0]
	for _, l := range ls.all[1:] {
		if l.n.Load() < best.n.Load() {
			best = l
		}
	}
	return best
}

// stopAccepting closes the loop's listener.
func (l *loop) stopAccepting() {
	if l.lfd >= 0 {
		rawsys.CloseListener(l.epfd, l.lfd)
		l.lfd = -1
	}
}

// sweep resumes paused accepts and enforces the connect and idle deadlines.
func (l *loop) sweep() {
	if !l.acceptPaused.IsZero() && l.now.After(l.acceptPaused) && l.lfd >= 0 {
		l.acceptPaused = time.Time{}
		if err := l.listen(); err == nil {
			l.accept()
		}
	}
	idle := l.f.idleTimeout()
	for fd, c := range l.slots {
		if c == nil || c.client.fd != fd {
			continue // each connection once, by its client descriptor
		}
		switch c.state {
		case stConnecting:
			if l.now.After(c.deadline) {
				l.connectFailed(c, os.ErrDeadlineExceeded)
			}
		case stRelaying:
			if l.now.Sub(c.moved) >= idle {
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
	l.stopAccepting()
	l.mu.Lock()
	l.ended = true
	posted := l.posted
	l.posted = nil
	for _, fd := range []int{l.wake, l.epfd} {
		if fd >= 0 {
			_ = unix.Close(fd)
		}
	}
	l.wake, l.epfd = -1, -1
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
		l.call(l.stopAccepting)
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
	l.n.Add(-1)
	if l.ls.open.Add(-1) == 0 && l.ls.stopping.Load() {
		l.ls.idleOnce.Do(func() { close(l.ls.idle) })
	}
}

// pollNow is epoll_wait with a zero timeout as a raw system call: it cannot block, so it needs
// none of the scheduler's bookkeeping around a system call.
func pollNow(epfd int, events []unix.EpollEvent) (int, error) {
	n, _, errno := unix.RawSyscall6(unix.SYS_EPOLL_PWAIT, uintptr(epfd), uintptr(unsafe.Pointer(&events[0])), uintptr(len(events)), 0, 0, 0)
	if errno != 0 {
		return 0, errno
	}
	return int(n), nil
}
