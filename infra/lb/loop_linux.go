package lb

import (
	"context"
	"errors"
	"net"
	"os"
	"slices"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"golang.org/x/sys/unix"

	"github.com/zero502/zero502/internal/evloop"
	"github.com/zero502/zero502/internal/rawsys"
	"github.com/zero502/zero502/internal/uring"
)

// The event loops (the fast path, on Linux) forward the common case
// without a goroutine per connection: one event loop per CPU, each with its own epoll set,
// accepting from the shared listener (EPOLLEXCLUSIVE), reading and writing its client and
// backend sockets with non-blocking calls. Sockets are registered once, edge-triggered, and a
// short read or write counts as "drained". The receives and sends of a round are made together
// (loop_io_linux.go), so a request costs a share of two io_uring_enter calls and of one
// epoll_wait, and no scheduler work. An idle keep-alive client costs its socket and a small
// struct.
//
// The loop handles requests without a body or with a small one that has fully arrived
// (loopBodyLimit), and responses framed by Content-Length, chunked (to an HTTP/1.1 client) or
// without a body, with backpressure. Everything else is handed to the goroutine path of
// conn.go, proxy.go and relay.go, which implements the whole contract: a request refused by the
// parser, a large or slow request body, Expect: 100-continue, a close-delimited response, a
// chunked one decoded for an HTTP/1.0 client. After the
// hand-off the connection stays with the goroutine path while it is busy and comes back to a
// loop when it goes idle (park). Timeouts, retries, passive ejection, resends after an
// ejection and the drain follow the same rules on both paths; the tests run every case through
// both.

// EventLoopsAvailable reports whether this system has the event loops (Linux; see
// loop_other.go).
const EventLoopsAvailable = true

// loopBodyLimit is the largest request body the loop forwards itself (once all of it arrived).
const loopBodyLimit = 16 << 10

// loopSweep is how often a loop looks for expired deadlines and old pooled connections.
const loopSweep = 100 * time.Millisecond

// loopAcceptBatch bounds the connections one wake-up of a loop accepts.
const loopAcceptBatch = 128

// loops are the running event loops of one Server, on the skeleton of internal/evloop (the
// epoll sets, the wake-ups, the listener copies, the run cycle); this file is what the LB does
// with their news.
type loops struct {
	group    *evloop.Group
	all      []*loop
	clients  atomic.Int64  // client connections the loops hold
	handoffs atomic.Uint64 // connections handed to the goroutine path
}

// loop is one event loop. Everything but the adopt queue and the wake-up is touched only by
// the loop's own goroutine.
type loop struct {
	// the skeleton: its wake-up says another goroutine has news (adopted connections, drain,
	// health change); its Hold counts the client connections it holds or has queued (adopted)
	*evloop.Loop
	s     *Server
	ls    *loops
	slots []slot
	pools []idlePool[*lup] // idle upstream connections by backend index (see loop.pool)
	ready []*lclient
	buf   []byte    // scratch for relaying body bytes
	peers peerNames // the text of the client addresses the loop accepted from

	// the receives and sends of the round, made together at its end (loop_io_linux.go)
	io       *uring.Batch
	incoming []pending // receives due: sockets an edge said are readable
	outgoing []pending // sends due
	inflight []pending // the ones in the batch, by its token
	spare    [][]byte  // emptied client buffers (releasePend)

	handedTo     []*loop   // loops accept queued connections for, to wake (accepted)
	adoptedSpare []adoptee // the adopted list woken took last, for reuse
	outages      uint64    // the Server's outages at the loop's last look (resendEjected)
	cuts         []*lup    // scratch of resendEjected

	mu      sync.Mutex
	adopted []adoptee
	ended   bool // closeAll ran: no more adoptions
}

type slot struct {
	c *lclient
	u *lup
}

type adoptee struct {
	fd    int
	ip    []byte
	fresh bool // just accepted by another loop: its first request is probably there to read
	used  bool // parked by the goroutine path after a request (see lclient.used)
}

// newLoops creates Settings.Loops loops (one per P by default), each with its own epoll set
// and its own duplicate of the listener (evloop.NewGroup); start runs them. The zero502 lb
// command fixes Loops and leaves the runtime one P more than it has loops (its process
// settings, not the library's).
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
	ls.group, err = evloop.NewGroup(s.set.Loops, lfd, evloop.Options{Sweep: loopSweep, AcceptBatch: loopAcceptBatch, Log: s.log, ErrKey: "err"})
	if err != nil {
		return nil, err
	}
	for _, ev := range ls.group.Loops {
		io, err := uring.NewBatch(!s.set.noRing)
		if err != nil {
			s.log.Debug("no io_uring: the loop receives and sends one system call at a time", "err", err)
		}
		ls.all = append(ls.all, &loop{Loop: ev, s: s, ls: ls, buf: make([]byte, 32<<10), pools: make([]idlePool[*lup], len(s.members.all())), io: io})
	}
	if lfd >= 0 {
		n := unpollListener(lfd, ls.group.EpollFDs())
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

// loopsRing reports whether the loops batch their receives and sends through io_uring.
func (s *Server) loopsRing() bool { return s.loops != nil && s.loops.all[0].io.Ring() }

// start runs the loops until ctx ends; wait waits for them to close their connections.
func (ls *loops) start(ctx context.Context) {
	ls.group.Go(func(i int) {
		l := ls.all[i]
		defer l.closeAll()
		l.Run(ctx, evloop.Handler{Accept: l.accepted, MayAccept: l.mayAccept, Accepted: l.wakeHandedTo,
			Event: l.event, Woken: l.woken, Settle: l.settle, Sweep: l.sweep})
	})
}

// wait waits for the loops start ran to end and close their connections.
func (ls *loops) wait() { ls.group.Wait() }

// wakeAll makes every loop look at the Server's state (drain, health changes) now.
func (ls *loops) wakeAll() { ls.group.PokeAll() }

// adopt hands a client connection (its own descriptor) to the loop with the fewest; used says
// a request began on it (see lclient.used).
func (ls *loops) adopt(fd int, ip []byte, used bool) {
	if t := ls.all[ls.group.LeastLoaded()]; t.enqueue(adoptee{fd: fd, ip: ip, used: used}) {
		t.Poke()
	}
}

// count adds d to the loop's and the loops' client connections.
func (l *loop) count(d int64) {
	l.Hold(d)
	l.ls.clients.Add(d)
}

// enqueue queues a client connection for the loop without waking it (see Poke); false when
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

// event acts on the events ev of a client or upstream socket (its token is its descriptor).
func (l *loop) event(token uint64, ev uint32) {
	fd := int(token)
	if fd >= len(l.slots) {
		return
	}
	switch sl := l.slots[fd]; {
	case sl.c != nil:
		sl.c.Note(ev)
		if l.mayReadClient(sl.c) {
			l.receive(sl.c, nil) // with the round's other receives; clientReady then
			return
		}
		l.clientReady(sl.c)
	case sl.u != nil:
		sl.u.Note(ev)
		if c := sl.u.c; c != nil && l.mayReadHead(c, sl.u) {
			l.receive(c, sl.u) // with the round's other receives; upstreamReady then
			return
		}
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
	return l.Add(fd, evloop.EdgeTriggered, uint64(fd))
}

// mayAccept: once the LB stopped accepting, new connections stay in the listen queue (for the
// process an upgrade hands the socket to).
func (l *loop) mayAccept() bool { return !l.s.acceptStopped.Load() }

// wakeHandedTo wakes the loops an accept round queued connections for: once each, however many
// they got.
func (l *loop) wakeHandedTo() {
	for _, t := range l.handedTo {
		t.Poke()
	}
	clear(l.handedTo)
	l.handedTo = l.handedTo[:0]
}

// accepted keeps a new connection or queues it for a loop with fewer (handedTo lists those to
// wake after the round).
func (l *loop) accepted(fd int, rsa *unix.RawSockaddrAny) {
	if l.s.atConnCap() {
		rawsys.Close(fd) // max_conns: accept and close
		return
	}
	if !l.ls.group.NoDelayInherited { // (the goroutine path sets it on its own connections, as Go does)
		_ = unix.SetsockoptInt(fd, unix.IPPROTO_TCP, unix.TCP_NODELAY, 1)
	}
	ip := l.peers.name(rsa)
	// connections go to the loop with the fewest, so the loops share the work evenly
	// whichever of them the kernel woke for the accept (a slack of an eighth was tried:
	// it saved no CPU, hand-overs being batched per accept round, and it left long
	// keep-alive connections unevenly spread)
	if t := l.ls.all[l.ls.group.LeastLoaded()]; t != l && t.Held() < l.Held() {
		if t.enqueue(adoptee{fd: fd, ip: ip, fresh: true}) && !slices.Contains(l.handedTo, t) {
			l.handedTo = append(l.handedTo, t)
		}
		return
	}
	l.count(1)
	// the request usually arrived with the connection (a client writes it as soon as its
	// connect returns): read it now, and register the socket only when the loop has to
	// wait for it (see watch); a connection that carries one request and is closed after
	// its response never enters the epoll set
	c := l.addClient(fd, ip, false)
	c.CanRead = true
	l.receive(c, nil)
}

// addClient takes a new or adopted client connection, not registered yet (see watch); the
// loops' client count includes it. used: a request began on it (see lclient.used).
func (l *loop) addClient(fd int, ip []byte, used bool) *lclient {
	c := &lclient{Readiness: evloop.Readiness{CanWrite: true}, fd: fd, ip: ip, phase: phIdle, used: used,
		deadline: l.Now().Add(l.s.set.idleBudget(used))}
	if l.s.closing.Load() {
		// accepted before the listener closed (or adopted from another loop): its first
		// request is on its way; it gets freshGrace to arrive
		c.deadline = l.Now().Add(freshGrace)
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

// woken handles news from other goroutines: adopted connections, the drain, health changes
// (idle connections to a backend out of rotation close, requests waiting on one that failed are
// resent).
func (l *loop) woken() {
	l.mu.Lock()
	adopted := l.adopted
	l.adopted = l.adoptedSpare[:0]
	l.mu.Unlock()
	for _, a := range adopted {
		c := l.addClient(a.fd, a.ip, a.used)
		if a.fresh { // as in accepted: read its request now
			c.CanRead = true
			l.receive(c, nil)
			continue
		}
		l.watch(c)
	}
	clear(adopted)
	l.adoptedSpare = adopted[:0]
	l.evictIdle()
	l.resendEjected()
	if l.s.acceptStopped.Load() {
		l.StopAccepting()
	}
	if l.s.closing.Load() {
		for fd := range l.slots {
			c := l.slots[fd].c
			switch {
			case c == nil:
			case l.s.aborting.Load() || c.phase == phIdle && c.used:
				l.closeClient(c)
			case c.phase == phIdle && c.deadline.After(l.Now().Add(freshGrace)):
				c.deadline = l.Now().Add(freshGrace) // never used: its first request is on its way
			}
		}
	}
}

// sweep enforces the deadlines of the loop's clients and the age of its pooled connections.
func (l *loop) sweep() {
	for fd := range l.slots {
		c := l.slots[fd].c
		switch {
		case c == nil || c.closed:
		case !c.deadline.IsZero() && l.Now().After(c.deadline):
			l.expired(c)
		case c.phase == phBodyWait && l.Now().Sub(c.start) >= SlowBodyAfter:
			l.handOff(c) // a slow body: the goroutine path streams it and counts it per client IP
		}
	}
	l.evictIdle()
}

// evictIdle closes the pooled connections past idle_timeout or to backends out of rotation
// (drained, ejected, removed).
func (l *loop) evictIdle() {
	for i := range l.pools {
		l.pools[i].evict(l.Now(), l.s.set.IdleTimeout)
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
		l.pools[i].evict(l.Now(), 0)
	}
	for fd := range l.slots {
		if u := l.slots[fd].u; u != nil {
			l.closeUpstream(u)
		}
	}
	l.Close()
	l.io.Close()
	l.mu.Lock()
	l.ended = true
	for _, a := range l.adopted {
		_ = unix.Close(a.fd)
		l.count(-1)
	}
	l.adopted = nil
	l.mu.Unlock()
}

// netConn turns a descriptor the loop owned into a *net.TCPConn for the goroutine path; the
// loop forgets the descriptor (it is duplicated, then closed).
func (l *loop) netConn(fd int) (*net.TCPConn, error) {
	_ = l.Del(fd)
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
	if s.loops == nil || len(cc.in.buffered()) > 0 || cc.raw == nil { // (TLS stays on its goroutine)
		return false
	}
	raw := cc.raw
	var err error
	nfd := -1
	if cerr := raw.Control(func(fd uintptr) { nfd, err = unix.FcntlInt(fd, syscall.F_DUPFD_CLOEXEC, 0) }); cerr != nil || err != nil {
		return false
	}
	cc.in.release()
	_ = cc.conn.Close()
	s.forget(cc)
	s.loops.adopt(nfd, cc.ip, cc.used.Load())
	return true
}
