package lb

import (
	"errors"
	"net/netip"
	"time"

	"github.com/zero502/zero502/infra/http1"
	"github.com/zero502/zero502/internal/evloop"
	"github.com/zero502/zero502/internal/rawsys"
	"golang.org/x/sys/unix"
)

// lup is an upstream (backend) connection held by a loop.
type lup struct {
	evloop.Readiness
	l         *loop
	fd        int
	b         *Backend
	in        reader
	c         *lclient // the client it serves; nil while pooled
	connected bool
	reused    bool // came from the pool: the backend may have closed it meanwhile
	got       bool // a byte of the response arrived
	cut       bool // a write of the request body failed: its answer is read on (writeFailed)
	dialed    time.Time
	via       *netip.AddrPort // the address of a backend given by name it connected to (Backend.reached)
	sent      time.Time
	out       []byte // the request, from x.out
	outOff    int
	queued    bool // its send is in the loop's outgoing
	reading   bool // its receive is in the loop's incoming
}

// pick sends the request to the next healthy backend not tried yet, or answers 503.
func (l *loop) pick(c *lclient) {
	s := l.s
	b := s.rot.pick(&c.t)
	if b == nil {
		l.answer(c, 503, nil)
		return
	}
	c.seen = b.outages.Load()
	c.t.add(b)
	s.countAgain(c.again)
	b.inFlight.Add(1)
	c.b = b
	u := l.poolGet(b, probeBeforeReuse(&c.x.req))
	if u == nil {
		var err error
		if u, err = l.dial(b); err != nil {
			l.failed(c, nil, dialFailure(err))
			return
		}
	}
	l.bind(c, u)
}

// bind makes u carry c's request and starts sending it.
func (l *loop) bind(c *lclient, u *lup) {
	req := &c.x.req
	u.c, c.u = c, u
	out := http1.AppendUpstreamHead(c.x.out[:0], req, c.ip, l.s.trustsForwarded(c.ip), false, u.b.Address) // (TLS is on the goroutine path)
	out = append(out, c.in.buffered()[c.reqLen-int(req.ContentLength):c.reqLen]...)
	c.x.out = out
	u.out, u.outOff, u.got, u.cut = out, 0, false, false
	if !u.connected {
		c.phase, c.deadline = phConnect, u.dialed.Add(l.s.set.budget(phConnect))
		return
	}
	l.enter(c, phSend)
	l.send(c, u)
}

// upstreamReady acts on new readiness of u.
func (l *loop) upstreamReady(u *lup) {
	c := u.c
	if c == nil { // pooled: the backend closed it or sent something unasked
		if u.CanRead {
			l.dropPooled(u)
		}
		return
	}
	switch c.phase {
	case phConnect:
		if !u.CanWrite {
			return
		}
		if errno, err := unix.GetsockoptInt(u.fd, unix.SOL_SOCKET, unix.SO_ERROR); err != nil || errno != 0 {
			l.failed(c, u, attemptConnect)
			return
		}
		u.connected = true
		u.b.connectSeconds.Observe(l.Now().Sub(u.dialed).Seconds())
		l.enter(c, phSend)
		l.send(c, u)
	case phSend:
		l.send(c, u)
	case phAwait:
		l.readHead(c, u)
	case phBody:
		l.relayBody(c, u)
	}
}

// send queues the rest of the request for u, for the round's sends (upstreamSent goes on);
// when the socket takes no more now, its writable edge calls send again.
func (l *loop) send(c *lclient, u *lup) {
	if u.queued {
		return
	}
	if !u.CanWrite {
		l.progress(c) // only silence counts
		return
	}
	u.queued = true
	l.outgoing = append(l.outgoing, pending{c: c, u: u})
}

// upstreamSent takes the result of a send of c's request to u: the rest waits for the socket's
// writable edge; once all went, the response head is awaited.
func (l *loop) upstreamSent(c *lclient, u *lup, n int, err error) {
	switch {
	case err == nil:
		u.outOff += n
		if u.outOff < len(u.out) {
			u.CanWrite = false // a short write: the socket buffer is full
			l.progress(c)      // only silence counts
			return             // the rest when u is writable again
		}
	case errors.Is(err, unix.EAGAIN):
		u.CanWrite = false
		l.progress(c)
		return
	default:
		headOut := u.outOff >= len(u.out)-int(c.x.req.ContentLength)
		if aerr := writeFailed(headOut); aerr != attemptCut {
			l.failed(c, u, aerr)
			return
		}
		u.cut, u.CanRead = true, true // a reset connection reads at once: its answer, then the error
		u.sent = l.Now()
		l.enter(c, phAwait)
		l.readHead(c, u)
		return
	}
	u.sent = l.Now()
	l.enter(c, phAwait)
	if l.resendDue(c, u) { // its backend left rotation while it connected (or was sent)
		l.failed(c, u, attemptEjected)
		return
	}
	l.readHead(c, u)
}

// readHead reads the response head; interim responses (1xx) are passed on, each before the
// next head is looked at.
func (l *loop) readHead(c *lclient, u *lup) {
	x := c.x
	for {
		if c.pendOff < len(c.pend) {
			// an interim head the client has not taken: it first, then clientSent reads on (a
			// final head looked at now could go to the goroutine path without it)
			return
		}
		switch n, step := responseHead(u.in.buffered(), &x.req, &x.resp); step {
		case headBad: // (the loops never carry an upgrade: a 101 is unasked)
			l.failed(c, u, attemptBad)
			return
		case headInterim:
			// rewritten as a final head is: its hop-by-hop headers stay with the backend
			if x.req.Minor == 1 {
				l.writeClient(c, http1.AppendClientHead(nil, &x.resp, false, false))
				u.in.consume(n)
				return // read on once it went (clientSent): the final head may go to the goroutine path
			}
			u.in.consume(n)
			continue
		case headFinal:
			l.s.answered(u.b, &x.req, x.resp.Status, l.Now().Sub(u.sent))
			if u.cut {
				x.resp.KeepAlive = false // the connection broke under the body
			}
			l.startRelay(c, u)
			return
		}
		if !u.CanRead {
			return
		}
		free, err := u.in.space(maxResponseHead)
		if err != nil {
			l.failed(c, u, attemptBad)
			return
		}
		k, err := rawsys.Recv(u.fd, free)
		switch {
		case k > 0:
			u.upstreamGot(k, len(free))
		case errors.Is(err, unix.EAGAIN):
			u.CanRead = false
		case errors.Is(err, unix.EINTR):
		case u.got:
			l.failed(c, u, attemptBad)
			return
		default: // cut under the body or not: the connection broke with no answer (writeFailed)
			l.failed(c, u, attemptNoAnswer)
			return
		}
	}
}

// upstreamGot takes n bytes of the response head received into u's buffer, whose free end
// held room.
func (u *lup) upstreamGot(n, room int) {
	u.in.w += n
	u.got = true
	if n < room && !u.Hup {
		u.CanRead = false // a short read drained the socket (edge-triggered)
	}
}

// errNotReached: a backend given by name has no address for the loops yet (Backend.reached).
var errNotReached = errors.New("no connection by name has reached it yet")

// dial starts a non-blocking connection to b.
func (l *loop) dial(b *Backend) (*lup, error) {
	sa, family, via := b.sockaddr()
	if sa == nil {
		return nil, errNotReached
	}
	fd, err := unix.Socket(family, unix.SOCK_STREAM|unix.SOCK_NONBLOCK|unix.SOCK_CLOEXEC, 0)
	if err != nil {
		return nil, err
	}
	_ = unix.SetsockoptInt(fd, unix.IPPROTO_TCP, unix.TCP_NODELAY, 1)
	u := &lup{l: l, fd: fd, b: b, dialed: l.Now(), via: via, in: reader{buf: make([]byte, 8<<10)}}
	err = unix.Connect(fd, sa)
	switch {
	case err == nil:
		u.connected, u.CanWrite = true, true
		b.connectSeconds.Observe(time.Since(l.Now()).Seconds())
	case errors.Is(err, unix.EINPROGRESS):
	default:
		rawsys.Close(fd)
		b.unreach(via)
		return nil, err
	}
	if err := l.register(fd); err != nil {
		rawsys.Close(fd)
		return nil, err
	}
	l.setSlot(fd, slot{u: u})
	return u, nil
}

func (l *loop) closeUpstream(u *lup) {
	if u.fd < 0 {
		return
	}
	l.slots[u.fd] = slot{}
	rawsys.Close(u.fd)
	u.fd = -1
	u.in.buf = nil
}

// poolGet returns an idle connection to b, or nil (see idlePool.get).
func (l *loop) poolGet(b *Backend, probe bool) *lup {
	u, ok := l.pool(b).get(b, l.Now(), l.s.set.IdleTimeout, probe)
	if !ok {
		return nil
	}
	u.reused = true
	return u
}

// dropPooled closes a pooled connection the backend closed (or wrote to unasked).
func (l *loop) dropPooled(u *lup) {
	if u.b.index < len(l.pools) {
		l.pools[u.b.index].remove(u)
	}
	l.closeUpstream(u)
}

// lup is a pooled connection of the loop's pools (the pooled interface, pool.go).
func (u *lup) target() *Backend { return u.b }
func (u *lup) peerClosed() bool { return u.Hup }
func (u *lup) unread() bool     { return u.in.r != u.in.w }
func (u *lup) alive() bool      { return peekAlive(u.fd) }
func (u *lup) close()           { u.l.closeUpstream(u) }

// mayHoldMore: no short read or EAGAIN showed the socket empty. (Bytes that arrive once it is
// parked are an edge the loop sees: upstreamReady drops the connection.)
func (u *lup) mayHoldMore() bool { return u.CanRead }

// sockaddr is b's address for connect(2) and its address family: a backend given by IP
// address has it from the start; one given by name is not looked up here (a loop never blocks
// on DNS), it gets the address the last connection by its name reached (Backend.reached, via),
// or nil before any. Each call returns a new Sockaddr: connect(2) writes into it.
func (b *Backend) sockaddr() (sa unix.Sockaddr, family int, via *netip.AddrPort) {
	ap := b.ip
	if b.named {
		if via = b.reached.Load(); via == nil {
			return nil, 0, nil
		}
		ap = *via
	}
	ip := ap.Addr()
	if ip.Is4() {
		return &unix.SockaddrInet4{Port: int(ap.Port()), Addr: ip.As4()}, unix.AF_INET, via
	}
	return &unix.SockaddrInet6{Port: int(ap.Port()), Addr: ip.As16(), ZoneId: rawsys.ZoneID(ip.Zone())}, unix.AF_INET6, via
}

// resendEjected gives up, once a backend left rotation for failing (an outage, resend.go), the
// loop's requests sent to it before that which resendNow resends: being sent or waiting for
// the response head, no byte of it arrived. Each goes to the next backend through failed, as
// attemptEjected; the others stay, and are not looked at again for this outage. The loop looks
// only when some backend's outage count moved since its last look (woken, after the transition
// rebuilt the rotation). A request still connecting is left for send: it looks on entering
// phAwait (resendDue), as the goroutine path's wait does once the request is written.
func (l *loop) resendEjected() {
	n := l.s.outages.Load()
	if n == l.outages {
		return
	}
	l.outages = n
	cut := l.cuts[:0]
	for fd := range l.slots {
		u := l.slots[fd].u
		if u == nil || u.c == nil {
			continue
		}
		c := u.c
		if c.phase != phSend && c.phase != phAwait || c.b == nil {
			continue
		}
		if l.resendDue(c, u) {
			cut = append(cut, u)
		}
	}
	for _, u := range cut {
		if c := u.c; c != nil { // (still its request: nothing ran between)
			l.failed(c, u, attemptEjected)
		}
	}
	clear(cut)
	l.cuts = cut[:0]
}

// resendDue says c's request on u goes at once to another backend: c's backend left rotation
// for failing since c last looked (c.seen, its outage count when picked: Backend.outageSince)
// and resendNow allows it. It looks once per outage: c.seen moves on either way.
func (l *loop) resendDue(c *lclient, u *lup) bool {
	if !c.b.outageSince(c.seen) {
		return false
	}
	c.seen = c.b.outages.Load()
	return l.s.resendNow(&c.x.req, u.got, &c.t)
}
