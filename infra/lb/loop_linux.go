package lb

import (
	"context"
	"errors"
	"fmt"
	"net"
	"os"
	"runtime"
	"slices"
	"sync"
	"sync/atomic"
	"syscall"
	"time"
	"unsafe"

	"golang.org/x/sys/unix"

	"github.com/zero502/zero502/internal/rawsys"
)

// The event loops (the fast path, on Linux) forward the common case
// without a goroutine per connection: one event loop per CPU, each with its own epoll set,
// accepting from the shared listener (EPOLLEXCLUSIVE), reading and writing its client and
// backend sockets with plain non-blocking system calls. Sockets are registered once,
// edge-triggered, and a short read or write counts as "drained", so a request costs four system
// calls (read the client, write the backend, read the backend, write the client) plus a share
// of one epoll_wait, and no scheduler work. An idle keep-alive client costs its socket and a
// small struct.
//
// The loop handles requests without a body or with a small one that has fully arrived
// (loopBodyLimit), and responses framed by Content-Length, chunked (to an HTTP/1.1 client) or
// without a body, with backpressure. Everything else is handed to the goroutine path of
// conn.go, proxy.go and relay.go, which implements the whole contract: a request refused by the
// parser, a large or slow request body, Expect: 100-continue, a close-delimited response, a
// chunked one decoded for an HTTP/1.0 client. After the
// hand-off the connection stays with the goroutine path while it is busy and comes back to a
// loop when it goes idle (park). Timeouts, retries, passive ejection and the drain follow the
// same rules on both paths; the tests run every case through both.

// EventLoopsAvailable reports whether this system has the event loops (Linux; see
// loop_other.go).
const EventLoopsAvailable = true

// loopBodyLimit is the largest request body the loop forwards itself (once all of it arrived).
const loopBodyLimit = 16 << 10

// yieldEvery is how often a busy loop passes through the Go scheduler (see run): as seldom as
// the runtime allows without preempting it (its monitor does after 10 ms without a pass, counted
// from when it noticed the last one, so never sooner), with 2 ms for the events of one round. A
// pass is not cheap: runtime.Gosched queues the loop on the global run queue and wakes a thread
// for the spare P (lb_runtime.go in cmd/zero502), which often takes the loop over while this
// thread goes to sleep; profiled, the passes every 5 ms cost about 8% of a loop's CPU.
const yieldEvery = 8 * time.Millisecond

// loopSweep is how often a loop looks for expired deadlines and old pooled connections.
const loopSweep = 100 * time.Millisecond

const (
	epollET    = unix.EPOLLET
	connEvents = unix.EPOLLIN | unix.EPOLLOUT | unix.EPOLLRDHUP | epollET
)

// loops are the running event loops of one Server.
type loops struct {
	all      []*loop
	clients  atomic.Int64  // client connections the loops hold
	handoffs atomic.Uint64 // connections handed to the goroutine path
	wg       sync.WaitGroup
	// nodelayInherited: the listener has TCP_NODELAY, so the connections the loops accept
	// have it from birth (see newLoops)
	nodelayInherited bool
}

// loop is one event loop. Everything but the adopt queue and the wake-up is touched only by
// the loop's own goroutine.
type loop struct {
	s     *Server
	ls    *loops
	epfd  int
	wake  int // eventfd: another goroutine has news (adopted connections, drain, health change)
	lfd   int // the loop's own duplicate of the listener; -1 once it stopped accepting
	slots []slot
	pools []idlePool[*lup] // idle upstream connections by backend index (see loop.pool)
	ready []*lclient
	buf   []byte // scratch for relaying body bytes
	now   time.Time
	peers peerNames // the text of the client addresses the loop accepted from

	acceptPaused time.Time // accept failed for lack of descriptors: retry after this
	handedTo     []*loop   // loops acceptSome queued connections for, to wake (accept)
	adoptedSpare []adoptee // the adopted list woken took last, for reuse

	n atomic.Int64 // client connections this loop holds or has queued (adopted)

	mu      sync.Mutex
	adopted []adoptee
	ended   bool // closeAll ran: no more adoptions or wake-ups
}

type slot struct {
	c *lclient
	u *lup
}

type adoptee struct {
	fd    int
	ip    []byte
	fresh bool // just accepted by another loop: its first request is probably there to read
}

// newLoops creates Settings.Loops loops (one per P by default), each with its own epoll set
// and its own duplicate of the listener; start runs them. The zero502 lb command fixes Loops and
// leaves the runtime one P more than it has loops (its process settings, not the library's).
func (s *Server) newLoops() (*loops, error) {
	raw, err := s.ln.(*net.TCPListener).SyscallConn()
	if err != nil {
		return nil, err
	}
	lfd := -1
	if err := raw.Control(func(fd uintptr) { lfd = int(fd) }); err != nil {
		return nil, err
	}
	if s.proxyFrom != nil {
		lfd = -1 // new connections are sniffed on the goroutine path first (proxyheader.go)
	}
	ls := &loops{}
	if lfd >= 0 {
		// Linux copies a listener's TCP_NODELAY into every connection it accepts: set once
		// here, it saves the loops a setsockopt per connection (the goroutine path sets it on
		// its own connections, as Go does)
		ls.nodelayInherited = unix.SetsockoptInt(lfd, unix.IPPROTO_TCP, unix.TCP_NODELAY, 1) == nil
	}
	n := s.set.Loops
	if n == 0 {
		n = runtime.GOMAXPROCS(0)
	}
	for i := 0; i < n; i++ {
		l, err := s.newLoop(ls, lfd)
		if err != nil {
			for _, l := range ls.all {
				l.closeAll()
			}
			return nil, err
		}
		ls.all = append(ls.all, l)
	}
	if lfd >= 0 {
		own := map[int]bool{}
		for _, l := range ls.all {
			own[l.epfd] = true
		}
		n := unpollListener(lfd, own)
		s.log.Debug("the listener left the runtime's poller (the loops accept)", "registrations", n)
	}
	return ls, nil
}

// loopCount is how many event loops run (0: slow path only).
func (s *Server) loopCount() int {
	if s.loops == nil {
		return 0
	}
	return len(s.loops.all)
}

// start runs the loops until ctx ends; wg.Wait waits for them to close their connections.
func (ls *loops) start(ctx context.Context) {
	for _, l := range ls.all {
		ls.wg.Add(1)
		go func() {
			defer ls.wg.Done()
			l.run(ctx)
		}()
	}
}

func (s *Server) newLoop(ls *loops, listenFD int) (*loop, error) {
	epfd, err := unix.EpollCreate1(unix.EPOLL_CLOEXEC)
	if err != nil {
		return nil, fmt.Errorf("epoll_create1: %w", err)
	}
	l := &loop{s: s, ls: ls, epfd: epfd, wake: -1, lfd: -1, buf: make([]byte, 32<<10), pools: make([]idlePool[*lup], len(s.members.all()))}
	l.wake, err = unix.Eventfd(0, unix.EFD_NONBLOCK|unix.EFD_CLOEXEC)
	if err == nil {
		err = unix.EpollCtl(epfd, unix.EPOLL_CTL_ADD, l.wake, &unix.EpollEvent{Events: unix.EPOLLIN, Fd: int32(l.wake)})
	}
	if err == nil && listenFD >= 0 {
		l.lfd, err = unix.FcntlInt(uintptr(listenFD), unix.F_DUPFD_CLOEXEC, 0)
		if err == nil {
			err = rawsys.WatchListener(epfd, l.lfd)
		}
	}
	if err != nil {
		l.closeAll()
		return nil, fmt.Errorf("event loop: %w", err)
	}
	return l, nil
}

// wakeAll makes every loop look at the Server's state (drain, health changes) now.
func (ls *loops) wakeAll() {
	for _, l := range ls.all {
		l.poke()
	}
}

// poke wakes the loop. Under mu: once the loop has ended its descriptors are closed, and their
// numbers may already belong to other files.
func (l *loop) poke() {
	l.mu.Lock()
	defer l.mu.Unlock()
	if !l.ended {
		one := [8]byte{1}
		_, _ = unix.Write(l.wake, one[:])
	}
}

// adopt hands a client connection (its own descriptor) to the loop with the fewest.
func (ls *loops) adopt(fd int, ip []byte) {
	if t := ls.leastLoaded(); t.enqueue(adoptee{fd: fd, ip: ip}) {
		t.poke()
	}
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

// count adds d to the loop's and the loops' client connections.
func (l *loop) count(d int64) {
	l.n.Add(d)
	l.ls.clients.Add(d)
}

// enqueue queues a client connection for the loop without waking it (see poke); false when
// the loop has ended (the connection is closed).
func (l *loop) enqueue(a adoptee) bool {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.ended {
		rawsys.Close(a.fd) // the LB is stopping
		return false
	}
	l.count(1)
	l.adopted = append(l.adopted, a)
	return true
}

func (l *loop) run(ctx context.Context) {
	defer l.closeAll()
	events := make([]unix.EpollEvent, 256)
	lastSweep := time.Now()
	lastYield := lastSweep
	for ctx.Err() == nil {
		// Look first without blocking and without telling the scheduler (a busy loop nearly
		// always finds events); only an empty look blocks, as a system call the scheduler
		// knows about, so its P serves other goroutines meanwhile.
		n, err := pollNow(l.epfd, events)
		if n == 0 && err == nil {
			n, err = unix.EpollWait(l.epfd, events, int(loopSweep/time.Millisecond))
		}
		if err != nil && !errors.Is(err, unix.EINTR) {
			l.s.log.Error("epoll_wait failed", "err", err)
			time.Sleep(10 * time.Millisecond)
			continue
		}
		l.now = time.Now()
		if l.now.Sub(lastYield) >= yieldEvery {
			// A goroutine that has not passed through the scheduler for 10 ms gets preempted
			// by the runtime's monitor, which then keeps waking up every 20 µs for a while;
			// yielding now and then costs far less than that.
			lastYield = l.now
			runtime.Gosched()
		}
		for i := 0; i < n; i++ {
			l.event(int(events[i].Fd), events[i].Events)
		}
		l.runReady()
		if l.now.Sub(lastSweep) >= loopSweep {
			lastSweep = l.now
			l.sweep()
			l.runReady()
		}
	}
}

func (l *loop) event(fd int, ev uint32) {
	switch {
	case fd == l.wake:
		var b [8]byte
		_, _ = unix.Read(l.wake, b[:])
		l.woken()
		return
	case fd == l.lfd:
		l.accept()
		return
	case fd >= len(l.slots):
		return
	}
	switch sl := l.slots[fd]; {
	case sl.c != nil:
		sl.c.note(ev)
		l.clientReady(sl.c)
	case sl.u != nil:
		sl.u.note(ev)
		l.upstreamReady(sl.u)
	}
}

// runReady serves the clients that have another request buffered (pipelining) or came back
// from a finished exchange, without recursion.
func (l *loop) runReady() {
	for len(l.ready) > 0 {
		c := l.ready[len(l.ready)-1]
		l.ready = l.ready[:len(l.ready)-1]
		if !c.closed {
			l.readRequest(c)
		}
	}
}

func (l *loop) setSlot(fd int, sl slot) {
	if fd >= len(l.slots) {
		n := max(2*len(l.slots), fd+1, 1024)
		ns := make([]slot, n)
		copy(ns, l.slots)
		l.slots = ns
	}
	l.slots[fd] = sl
}

// register adds fd to the loop's epoll set, edge-triggered for reading and writing.
func (l *loop) register(fd int) error {
	return rawsys.EpollCtl(l.epfd, unix.EPOLL_CTL_ADD, fd, &unix.EpollEvent{Events: connEvents, Fd: int32(fd)})
}

// accept takes the connections waiting on the listener (see acceptSome), then wakes the loops
// it handed some to: once each, however many they got.
func (l *loop) accept() {
	l.acceptSome()
	for _, t := range l.handedTo {
		t.poke()
	}
	clear(l.handedTo)
	l.handedTo = l.handedTo[:0]
}

// acceptSome accepts up to 128 connections, keeping each or queueing it for a loop with fewer
// (handedTo lists those to wake).
func (l *loop) acceptSome() {
	if l.lfd < 0 || l.s.closing.Load() {
		return
	}
	var rsa unix.RawSockaddrAny
	for i := 0; i < 128; i++ {
		fd, err := rawsys.Accept(l.lfd, &rsa)
		switch {
		case err == nil:
		case errors.Is(err, unix.EAGAIN):
			return
		case errors.Is(err, unix.EINTR), errors.Is(err, unix.ECONNABORTED):
			continue
		case errors.Is(err, unix.EMFILE), errors.Is(err, unix.ENFILE), errors.Is(err, unix.ENOBUFS), errors.Is(err, unix.ENOMEM):
			// out of descriptors: stop listening for a moment (level-triggered, it would spin)
			l.s.log.Warn("accept failed, pausing accepts", "err", err, "for", loopSweep.String())
			_ = rawsys.EpollCtl(l.epfd, unix.EPOLL_CTL_DEL, l.lfd, nil)
			l.acceptPaused = l.now.Add(loopSweep)
			return
		default:
			l.s.log.Error("accept failed", "err", err)
			return
		}
		if l.s.atConnCap() {
			rawsys.Close(fd) // max_conns: accept and close
			continue
		}
		if !l.ls.nodelayInherited {
			_ = unix.SetsockoptInt(fd, unix.IPPROTO_TCP, unix.TCP_NODELAY, 1)
		}
		ip := l.peers.name(&rsa)
		// connections go to the loop with the fewest, so the loops share the work evenly
		// whichever of them the kernel woke for the accept (a slack of an eighth was tried:
		// it saved no CPU, hand-overs being batched per accept round, and it left long
		// keep-alive connections unevenly spread)
		if t := l.ls.leastLoaded(); t != l && t.n.Load() < l.n.Load() {
			if t.enqueue(adoptee{fd: fd, ip: ip, fresh: true}) && !slices.Contains(l.handedTo, t) {
				l.handedTo = append(l.handedTo, t)
			}
			continue
		}
		l.count(1)
		// the request usually arrived with the connection (a client writes it as soon as its
		// connect returns): read it now, and register the socket only when the loop has to
		// wait for it (see watch); a connection that carries one request and is closed after
		// its response never enters the epoll set
		c := l.addClient(fd, ip)
		c.canRead = true
		l.readRequest(c)
	}
}

// addClient takes a new or adopted client connection, not registered yet (see watch); the
// loops' client count includes it.
func (l *loop) addClient(fd int, ip []byte) *lclient {
	c := &lclient{readiness: readiness{canWrite: true}, fd: fd, ip: ip, phase: phIdle, deadline: l.now.Add(l.s.set.ClientIdleTimeout)}
	if l.s.closing.Load() {
		// accepted before the listener closed (or adopted from another loop): its first
		// request is on its way; it gets freshGrace to arrive
		c.deadline = l.now.Add(freshGrace)
	}
	l.setSlot(fd, slot{c: c})
	return c
}

// watch registers c in the loop's epoll set before the loop waits for it to become readable or
// writable; false when that failed (c is closed). The socket's readiness at that moment counts:
// epoll_ctl reports an edge that came before it, so none is missed. Until then the loop has no
// use for its events (it reads and writes c until EAGAIN, and times it out in sweep), and the
// kernel does no epoll work for it.
func (l *loop) watch(c *lclient) bool {
	if c.watched {
		return true
	}
	if err := l.register(c.fd); err != nil {
		l.s.log.Error("epoll_ctl add failed", "err", err)
		l.closeClient(c)
		return false
	}
	c.watched = true
	return true
}

// woken handles news from other goroutines: adopted connections, the drain, health changes.
func (l *loop) woken() {
	l.mu.Lock()
	adopted := l.adopted
	l.adopted = l.adoptedSpare[:0]
	l.mu.Unlock()
	for _, a := range adopted {
		c := l.addClient(a.fd, a.ip)
		if a.fresh { // as in acceptSome: read its request now
			c.canRead = true
			l.readRequest(c)
			continue
		}
		l.watch(c)
	}
	clear(adopted)
	l.adoptedSpare = adopted[:0]
	l.evictIdle()
	if l.s.closing.Load() {
		l.stopAccepting()
		for fd := range l.slots {
			c := l.slots[fd].c
			switch {
			case c == nil:
			case l.s.aborting.Load() || c.phase == phIdle && c.used:
				l.closeClient(c)
			case c.phase == phIdle && c.deadline.After(l.now.Add(freshGrace)):
				c.deadline = l.now.Add(freshGrace) // never used: its first request is on its way
			}
		}
	}
}

func (l *loop) stopAccepting() {
	if l.lfd >= 0 {
		rawsys.CloseListener(l.epfd, l.lfd)
		l.lfd = -1
	}
}

// sweep enforces the deadlines of the loop's clients and the age of its pooled connections.
func (l *loop) sweep() {
	if !l.acceptPaused.IsZero() && l.now.After(l.acceptPaused) && l.lfd >= 0 {
		l.acceptPaused = time.Time{}
		_ = rawsys.WatchListener(l.epfd, l.lfd)
		l.accept()
	}
	for fd := range l.slots {
		c := l.slots[fd].c
		switch {
		case c == nil || c.closed:
		case !c.deadline.IsZero() && l.now.After(c.deadline):
			l.expired(c)
		case c.phase == phBodyWait && l.now.Sub(c.start) >= SlowBodyAfter:
			l.handOff(c) // a slow body: the goroutine path streams it and counts it per client IP
		}
	}
	l.evictIdle()
}

// evictIdle closes the pooled connections past idle_timeout or to backends out of rotation
// (drained, ejected, removed).
func (l *loop) evictIdle() {
	for i := range l.pools {
		l.pools[i].evict(l.now, l.s.set.IdleTimeout)
	}
}

// closeAll ends the loop: every connection it holds is closed.
func (l *loop) closeAll() {
	for fd := range l.slots {
		if c := l.slots[fd].c; c != nil {
			l.closeClient(c)
		}
	}
	for i := range l.pools {
		l.pools[i].evict(l.now, 0)
	}
	for fd := range l.slots {
		if u := l.slots[fd].u; u != nil {
			l.closeUpstream(u)
		}
	}
	l.stopAccepting()
	l.mu.Lock()
	l.ended = true
	for _, a := range l.adopted {
		_ = unix.Close(a.fd)
		l.count(-1)
	}
	l.adopted = nil
	for _, fd := range []int{l.wake, l.epfd} {
		if fd >= 0 {
			_ = unix.Close(fd)
		}
	}
	l.wake, l.epfd = -1, -1
	l.mu.Unlock()
}

// netConn turns a descriptor the loop owned into a *net.TCPConn for the goroutine path; the
// loop forgets the descriptor (it is duplicated, then closed).
func (l *loop) netConn(fd int) (*net.TCPConn, error) {
	_ = rawsys.EpollCtl(l.epfd, unix.EPOLL_CTL_DEL, fd, nil)
	l.slots[fd] = slot{}
	f := os.NewFile(uintptr(fd), "tcp")
	c, err := net.FileConn(f)
	_ = f.Close()
	if err != nil {
		return nil, err
	}
	tc, ok := c.(*net.TCPConn)
	if !ok {
		_ = c.Close()
		return nil, errors.New("not a TCP connection")
	}
	return tc, nil
}

// park, with event loops, hands an idle client connection from the goroutine path back to
// a loop: its descriptor is duplicated for the loop and the goroutine's copy closed.
func (s *Server) parkInLoop(cc *clientConn) bool {
	if s.loops == nil || len(cc.in.buffered()) > 0 {
		return false
	}
	raw, err := cc.conn.SyscallConn()
	if err != nil {
		return false
	}
	nfd := -1
	if cerr := raw.Control(func(fd uintptr) { nfd, err = unix.FcntlInt(fd, syscall.F_DUPFD_CLOEXEC, 0) }); cerr != nil || err != nil {
		return false
	}
	cc.in.release()
	_ = cc.conn.Close()
	s.forget(cc)
	s.loops.adopt(nfd, cc.ip)
	return true
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
