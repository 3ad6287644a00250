package lb

import (
	"errors"
	"net"
	"time"

	"github.com/zero502/zero502/infra/lb/http1"
	"github.com/zero502/zero502/internal/evloop"
	"github.com/zero502/zero502/internal/rawsys"

	"golang.org/x/sys/unix"
)

// phase is where a loop's client connection stands; it decides which deadline applies.
type phase uint8

const (
	phIdle     phase = iota // between requests, nothing buffered: client idle timeout
	phHead                  // part of a request buffered: client header timeout
	phBodyWait              // a whole head, part of its small body: client header timeout on silence
	phConnect               // connecting to the backend: connect timeout
	phSend                  // writing the request to the backend: body timeout on silence
	phAwait                 // waiting for the response head: header timeout (then 504)
	phBody                  // relaying the response body: body timeout on silence
	phAnswer                // writing the LB's own answer: body timeout
)

// lclient is a client connection held by a loop.
type lclient struct {
	evloop.Readiness
	fd     int
	ip     []byte
	in     reader // conn is nil: the loop reads with read(2)
	closed bool
	// used: a request began on it. A connection accepted before the LB stopped accepting and not
	// used yet carries a request on its way: the drain serves it (Connection: close) instead of
	// closing the connection under it (freshGrace).
	used bool
	// watched: the socket is in the loop's epoll set (see loop.watch)
	watched  bool
	phase    phase
	chunked  bool // the response body is chunked: x.chunk finds its end (requests here never are)
	keep     bool // the connection may carry another request after this response
	deadline time.Time

	pend    []byte // bytes for the client that a write could not take yet
	pendOff int

	// the exchange in progress
	x      *exchange
	reqLen int // head plus body bytes of the request in in
	start  time.Time
	b      *Backend // the backend counting this request in flight
	u      *lup
	t      tried
	again  attemptError // why this attempt is not the first (attemptOK: it is)
	seen   uint64       // the outages of b when it was picked (resendEjected)
	left   int64        // response body bytes still to relay (Content-Length framing)
	status int
}

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
	dialed    time.Time
	sent      time.Time
	out       []byte // the request, from x.out
	outOff    int
}

// clientReady acts on new readiness of c.
func (l *loop) clientReady(c *lclient) {
	if c.pendOff < len(c.pend) {
		if !l.flushClient(c) {
			return
		}
		if c.pendOff < len(c.pend) {
			return
		}
		switch c.phase {
		case phAnswer:
			l.finish(c)
			return
		case phBody:
			if c.u != nil {
				l.relayBody(c, c.u)
			}
			return
		}
	}
	if c.phase <= phBodyWait && c.CanRead {
		l.readRequest(c)
	}
}

// readRequest reads until a whole request (head and, when small, body) is buffered, then
// serves it.
func (l *loop) readRequest(c *lclient) {
	s := l.s
	maxHead := s.set.MaxHeaderBytes
	for {
		skip, n, err := requestHead(c.in.buffered(), maxHead)
		c.in.consume(skip)
		buf := c.in.buffered()
		if err != nil {
			l.refuse(c, err)
			return
		}
		if n > 0 && l.haveRequest(c, n) {
			return
		}
		if s.closing.Load() && len(buf) == 0 && c.used {
			l.closeClient(c)
			return
		}
		if !c.CanRead {
			switch {
			case len(buf) == 0:
				c.in.release()
				if c.phase != phIdle {
					c.phase, c.deadline = phIdle, l.Now().Add(s.set.ClientIdleTimeout)
				}
			case c.phase == phIdle: // the start of a pipelined request: the head timeout runs
				c.phase, c.deadline = phHead, l.Now().Add(s.set.ClientHeaderTimeout)
			}
			l.watch(c) // the rest of the request (or the next one) comes with an event
			return
		}
		free, err := c.in.space(maxHead + loopBodyLimit)
		if err != nil {
			l.refuse(c, headTooLarge(maxHead))
			return
		}
		n, err = rawsys.Read(c.fd, free)
		switch {
		case n > 0:
			c.in.w += n
			if n < len(free) && !c.Hup {
				c.CanRead = false
			}
			switch c.phase {
			case phIdle:
				c.phase, c.deadline, c.used = phHead, l.Now().Add(s.set.ClientHeaderTimeout), true
			case phBodyWait: // the body moves: only silence counts
				c.deadline = l.Now().Add(s.set.ClientHeaderTimeout)
			}
		case errors.Is(err, unix.EAGAIN):
			c.CanRead = false
		case errors.Is(err, unix.EINTR):
		default: // EOF or a broken connection
			l.closeClient(c)
			return
		}
	}
}

// haveRequest looks at a whole head of n bytes: it serves the request when all of it is here
// (true), waits for the rest of a small body (false), or hands the connection to the goroutine
// path (true).
func (l *loop) haveRequest(c *lclient, n int) bool {
	x := exchanges.Get().(*exchange)
	buf := c.in.buffered()
	if err := http1.ParseRequest(buf[:n], &x.req); err != nil {
		putExchange(x)
		l.refuse(c, err)
		return true
	}
	req := &x.req
	if req.ExpectContinue || req.Upgrade || req.Chunked || req.ContentLength > loopBodyLimit {
		putExchange(x)
		l.handOff(c)
		return true
	}
	if int64(len(buf)-n) < req.ContentLength {
		putExchange(x) // its spans would not survive the buffer growing
		if c.phase != phBodyWait {
			// from here the client's silence counts, not the time since its first byte; the
			// sweep hands a body still arriving after SlowBodyAfter to the goroutine path
			c.phase, c.start, c.deadline = phBodyWait, l.Now(), l.Now().Add(l.s.set.ClientHeaderTimeout)
		}
		return false
	}
	if c.phase != phBodyWait {
		c.start = l.Now()
	}
	c.x, c.reqLen = x, n+int(req.ContentLength)
	if status, ok := l.s.answersItself(req); ok {
		l.answer(c, status, nil)
		return true
	}
	c.t, c.again = tried{}, attemptOK
	l.pick(c)
	return true
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
			l.failed(c, nil, attemptConnect)
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
	u.out, u.outOff, u.got = out, 0, false
	if !u.connected {
		c.phase, c.deadline = phConnect, u.dialed.Add(l.s.set.ConnectTimeout)
		return
	}
	c.phase, c.deadline = phSend, l.Now().Add(l.s.set.BodyTimeout)
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
		c.phase, c.deadline = phSend, l.Now().Add(l.s.set.BodyTimeout)
		l.send(c, u)
	case phSend:
		l.send(c, u)
	case phAwait:
		l.readHead(c, u)
	case phBody:
		l.relayBody(c, u)
	}
}

// send writes the rest of the request to u, then waits for the response head.
func (l *loop) send(c *lclient, u *lup) {
	n, ok := writeSome(u.fd, u.out[u.outOff:], &u.Readiness)
	u.outOff += n
	switch {
	case !ok:
		l.failed(c, u, attemptNoAnswer)
		return
	case u.outOff < len(u.out):
		c.deadline = l.Now().Add(l.s.set.BodyTimeout) // progress: only silence counts
		return                                        // the rest when u is writable again
	}
	u.sent = l.Now()
	c.phase, c.deadline = phAwait, l.Now().Add(l.s.set.HeaderTimeout)
	l.readHead(c, u)
}

// writeSome writes p to fd until it is all written, the socket takes no more (canWrite is
// cleared: edge-triggered, the next EPOLLOUT sets it) or the write fails (false).
func writeSome(fd int, p []byte, r *evloop.Readiness) (int, bool) {
	n := 0
	for r.CanWrite && n < len(p) {
		k, err := rawsys.Write(fd, p[n:])
		switch {
		case k > 0:
			n += k
			if n < len(p) {
				r.CanWrite = false // a short write: the socket buffer is full
			}
		case errors.Is(err, unix.EAGAIN):
			r.CanWrite = false
		case errors.Is(err, unix.EINTR):
		default:
			return n, false
		}
	}
	return n, true
}

// readHead reads the response head; interim responses (1xx) are passed on.
func (l *loop) readHead(c *lclient, u *lup) {
	x := c.x
	for {
		switch n, step := responseHead(u.in.buffered(), &x.req, &x.resp); step {
		case headBad: // (the loops never carry an upgrade: a 101 is unasked)
			l.failed(c, u, attemptBad)
			return
		case headInterim:
			if x.req.Minor == 1 && !l.writeClient(c, u.in.buffered()[:n]) {
				l.closeClient(c)
				return
			}
			u.in.consume(n)
			continue
		case headFinal:
			l.s.answered(u.b, &x.req, x.resp.Status, l.Now().Sub(u.sent))
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
		k, err := rawsys.Read(u.fd, free)
		switch {
		case k > 0:
			u.in.w += k
			u.got = true
			if k < len(free) && !u.Hup {
				u.CanRead = false
			}
		case errors.Is(err, unix.EAGAIN):
			u.CanRead = false
		case errors.Is(err, unix.EINTR):
		case u.got:
			l.failed(c, u, attemptBad)
			return
		default:
			l.failed(c, u, attemptNoAnswer)
			return
		}
	}
}

// startRelay sends the response head and what is buffered of the body, then relays the rest.
// Chunked and close-delimited bodies go to the goroutine path.
func (l *loop) startRelay(c *lclient, u *lup) {
	s := l.s
	x := c.x
	resp := &x.resp
	if resp.Framing == http1.UntilClose || resp.Framing == http1.Chunked && x.req.Minor == 0 {
		l.handOffRelay(c, u) // rare: close-delimited, or chunked decoded for an HTTP/1.0 client
		return
	}
	closeClient := x.req.Close || s.draining.Load() || s.closing.Load()
	out := http1.AppendClientHead(x.out[:0], resp, closeClient, false)
	u.in.consume(len(resp.Head))
	c.status, c.keep = resp.Status, !closeClient
	c.left, c.chunked = 0, false
	switch resp.Framing {
	case http1.ContentLength:
		c.left = resp.ContentLength
	case http1.Chunked:
		c.chunked = true
		x.chunk.Reset()
	}
	if b := u.in.buffered(); len(b) > 0 && c.left > 0 {
		k := min(int64(len(b)), c.left)
		out = append(out, b[:k]...)
		u.in.consume(int(k))
		c.left -= k
	}
	x.out = out[:0]
	c.phase, c.deadline = phBody, l.Now().Add(s.set.BodyTimeout)
	if !l.writeClient(c, out) {
		l.closeClient(c)
		return
	}
	l.relayBody(c, u)
}

// relayBody copies body bytes from u to c while c takes them (backpressure: nothing is read
// from the backend while bytes for the client wait).
func (l *loop) relayBody(c *lclient, u *lup) {
	if c.chunked {
		l.relayChunked(c, u)
		return
	}
	for c.left > 0 {
		if c.pendOff < len(c.pend) || !u.CanRead {
			return
		}
		buf := l.buf
		if int64(len(buf)) > c.left {
			buf = buf[:c.left]
		}
		k, err := rawsys.Read(u.fd, buf)
		switch {
		case k > 0:
			c.left -= int64(k)
			c.deadline = l.Now().Add(l.s.set.BodyTimeout)
			if k < len(buf) && !u.Hup {
				u.CanRead = false
			}
			if !l.writeClient(c, buf[:k]) {
				l.closeClient(c)
				return
			}
		case errors.Is(err, unix.EAGAIN):
			u.CanRead = false
		case errors.Is(err, unix.EINTR):
		default: // the backend broke off the body: the client cannot get a whole response
			l.closeClient(c)
			return
		}
	}
	if c.pendOff < len(c.pend) {
		return
	}
	l.finish(c)
}

// relayChunked relays a chunked body byte for byte, its framing checked by the exchange's
// http1.ChunkFramer only to find where the message ends, as on the goroutine path;
// backpressure as in relayBody.
func (l *loop) relayChunked(c *lclient, u *lup) {
	for {
		if c.pendOff < len(c.pend) {
			return // the client first; the next writable event resumes here
		}
		if c.x.chunk.Done() {
			c.chunked = false
			l.finish(c)
			return
		}
		if b := u.in.buffered(); len(b) > 0 {
			k, err := c.x.chunk.Scan(b)
			if err != nil || !l.writeClient(c, b[:k]) {
				l.closeClient(c) // a broken framing or a gone client: no whole response possible
				return
			}
			u.in.consume(k)
			continue
		}
		if !u.CanRead {
			return
		}
		free, err := u.in.space(maxResponseHead)
		if err != nil {
			l.closeClient(c)
			return
		}
		k, err := rawsys.Read(u.fd, free)
		switch {
		case k > 0:
			u.in.w += k
			c.deadline = l.Now().Add(l.s.set.BodyTimeout)
			if k < len(free) && !u.Hup {
				u.CanRead = false
			}
		case errors.Is(err, unix.EAGAIN):
			u.CanRead = false
		case errors.Is(err, unix.EINTR):
		default: // the backend broke off the body
			l.closeClient(c)
			return
		}
	}
}

// writeClient writes p to the client, keeping what the socket does not take; false when the
// client is gone.
func (l *loop) writeClient(c *lclient, p []byte) bool {
	if c.pendOff < len(c.pend) {
		c.pend = append(c.pend, p...)
		return true
	}
	n, ok := writeSome(c.fd, p, &c.Readiness)
	if !ok {
		return false
	}
	if n < len(p) {
		c.pend = append(c.pend[:0], p[n:]...)
		c.pendOff = 0
		return l.watch(c) // the rest goes when the socket is writable again
	}
	return true
}

// flushClient writes pending bytes; false when the client is gone (it is closed).
func (l *loop) flushClient(c *lclient) bool {
	n, ok := writeSome(c.fd, c.pend[c.pendOff:], &c.Readiness)
	c.pendOff += n
	if n > 0 {
		c.deadline = l.Now().Add(l.s.set.BodyTimeout)
	}
	if !ok {
		l.closeClient(c)
		return false
	}
	if c.pendOff == len(c.pend) {
		c.pendOff = 0
		if cap(c.pend) > 64<<10 {
			c.pend = nil
		} else {
			c.pend = c.pend[:0]
		}
	}
	return true
}

// answer sends a response the LB makes itself (health, 502, 503, 504).
func (l *loop) answer(c *lclient, status int, b *Backend) {
	x := c.x
	out, closeClient := l.s.ownAnswer(x.out[:0], c.ip, &x.req, status, c.start, b)
	x.out = out[:0]
	c.status, c.keep, c.left = status, !closeClient, 0
	c.phase, c.deadline = phAnswer, l.Now().Add(l.s.set.BodyTimeout)
	if !l.writeClient(c, out) {
		l.closeClient(c)
		return
	}
	if c.pendOff < len(c.pend) {
		return
	}
	l.finish(c)
}

// finish ends the exchange after its last byte went to the client.
func (l *loop) finish(c *lclient) {
	if u := c.u; u != nil {
		c.u, u.c = nil, nil
		if c.x.resp.KeepAlive {
			l.pool(u.b).put(u, l.Now(), l.s.set.MaxIdlePerBackend)
		} else {
			l.closeUpstream(u)
		}
		l.s.logAccess(c.ip, &c.x.req, c.status, c.b, c.start)
	}
	if c.b != nil {
		c.b.inFlight.Add(-1)
		c.b = nil
	}
	putExchange(c.x)
	c.x = nil
	c.in.consume(c.reqLen)
	c.reqLen = 0
	if !c.keep {
		l.closeClient(c)
		return
	}
	c.phase, c.deadline = phIdle, l.Now().Add(l.s.set.ClientIdleTimeout)
	if len(c.in.buffered()) > 0 || c.CanRead {
		l.ready = append(l.ready, c)
	} else {
		c.in.release()
		if l.s.closing.Load() {
			l.closeClient(c)
			return
		}
		l.watch(c) // the next request comes with an event
	}
}

// failed handles an attempt that got no usable response, as proxy does on the goroutine path:
// a stale pooled connection is replaced by a fresh one for a request without a body; a
// connection failure ejects the backend and a GET or HEAD goes to the next one; a request with
// a body is never replayed (502); a silent backend gives 504; a GET or HEAD given up on a
// backend that left rotation (resendEjected) goes to the next one.
func (l *loop) failed(c *lclient, u *lup, aerr attemptError) {
	req := &c.x.req
	b := c.b
	if u != nil {
		c.u, u.c = nil, nil
	}
	if u != nil && staleRetry(req, aerr, u.reused) {
		l.closeUpstream(u)
		nu, err := l.dial(b)
		if err == nil {
			l.bind(c, nu)
			return
		}
		aerr, u = attemptConnect, nil
	}
	if u != nil {
		l.closeUpstream(u)
	}
	c.b = nil
	next, status := l.s.attemptFailed(req, b, aerr, u != nil && u.reused)
	if next {
		c.again = aerr
		l.pick(c)
		return
	}
	l.answer(c, status, b)
}

// expired acts on a passed deadline.
func (l *loop) expired(c *lclient) {
	switch c.phase {
	case phHead:
		l.refuse(c, &http1.ParseError{Status: 408, Reason: "request head not complete in time"})
	case phBodyWait:
		l.refuse(c, &http1.ParseError{Status: 408, Reason: "request body stalled"})
	case phConnect:
		l.failed(c, c.u, attemptConnect)
	case phSend: // the backend took no byte of the request for body_timeout: slow, not broken
		l.failed(c, c.u, attemptTimeout)
	case phAwait:
		l.failed(c, c.u, attemptTimeout)
	default: // idle too long, or the body or the answer stalled
		l.closeClient(c)
	}
}

// closeClient closes c and whatever exchange it had in progress.
func (l *loop) closeClient(c *lclient) {
	if c.closed {
		return
	}
	c.closed = true
	if u := c.u; u != nil {
		c.u, u.c = nil, nil
		l.closeUpstream(u)
	}
	if c.b != nil {
		c.b.inFlight.Add(-1)
		c.b = nil
	}
	if c.x != nil {
		putExchange(c.x)
		c.x = nil
	}
	c.in.r, c.in.w = 0, 0
	c.in.release()
	c.pend = nil
	l.slots[c.fd] = slot{}
	rawsys.Close(c.fd)
	l.count(-1)
}

// dial starts a non-blocking connection to b.
func (l *loop) dial(b *Backend) (*lup, error) {
	sa, family, err := b.sockaddr()
	if err != nil {
		return nil, err
	}
	fd, err := unix.Socket(family, unix.SOCK_STREAM|unix.SOCK_NONBLOCK|unix.SOCK_CLOEXEC, 0)
	if err != nil {
		return nil, err
	}
	_ = unix.SetsockoptInt(fd, unix.IPPROTO_TCP, unix.TCP_NODELAY, 1)
	u := &lup{l: l, fd: fd, b: b, dialed: l.Now(), in: reader{buf: make([]byte, 8<<10)}}
	err = unix.Connect(fd, sa)
	switch {
	case err == nil:
		u.connected, u.CanWrite = true, true
		b.connectSeconds.Observe(time.Since(l.Now()).Seconds())
	case errors.Is(err, unix.EINPROGRESS):
	default:
		rawsys.Close(fd)
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

func (u *lup) target() *Backend { return u.b }
func (u *lup) peerClosed() bool { return u.Hup }
func (u *lup) unread() bool     { return u.in.r != u.in.w }
func (u *lup) alive() bool      { return peekAlive(u.fd) }
func (u *lup) close()           { u.l.closeUpstream(u) }

// refuse hands a request the parser refused (or a head that timed out) to the goroutine path,
// which answers it and closes the connection gracefully.
func (l *loop) refuse(c *lclient, err error) {
	var pe *http1.ParseError
	if !errors.As(err, &pe) {
		l.closeClient(c)
		return
	}
	cc, ok := l.toClientConn(c)
	if !ok {
		return
	}
	go func() {
		l.s.refuse(cc, pe.Status)
		l.s.closeConn(cc)
	}()
}

// handOff gives c, its buffered request unread, to the goroutine path.
func (l *loop) handOff(c *lclient) {
	since := c.start
	if c.phase != phBodyWait {
		since = time.Time{}
	}
	cc, ok := l.toClientConn(c)
	if !ok {
		return
	}
	cc.since = since
	go l.s.serveConn(cc, true)
}

// handOffRelay gives an exchange whose response head arrived (chunked or close-delimited) to
// the goroutine path's relay; the connection stays there afterwards until it goes idle.
func (l *loop) handOffRelay(c *lclient, u *lup) {
	x, b, reqLen, start := c.x, c.b, c.reqLen, c.start
	buf := u.in
	c.u, u.c = nil, nil
	tc, err := l.netConn(u.fd)
	u.fd = -1
	c.x, c.b = nil, nil
	if err != nil { // the backend's answer is counted (readHead); the LB could not pass it on
		b.inFlight.Add(-1)
		putExchange(x)
		l.closeClient(c)
		return
	}
	raw, err := tc.SyscallConn()
	cc, ok := l.toClientConn(c)
	if !ok || err != nil {
		_ = tc.Close()
		b.inFlight.Add(-1)
		putExchange(x)
		if ok {
			l.s.closeConn(cc)
		}
		return
	}
	up := &upstream{conn: tc, raw: raw, backend: b, in: buf}
	up.in.conn = tc
	go func() {
		keep := l.s.relay(cc, x, b, up, start)
		b.inFlight.Add(-1)
		cc.in.consume(reqLen)
		putExchange(x)
		if !keep {
			l.s.closeConn(cc)
			return
		}
		l.s.serveConn(cc, false)
	}()
}

// toClientConn moves c to the goroutine path as a clientConn with c's buffer; false when that
// failed (c is closed).
func (l *loop) toClientConn(c *lclient) (*clientConn, bool) {
	if c.x != nil {
		putExchange(c.x)
		c.x = nil
	}
	tc, err := l.netConn(c.fd)
	c.closed = true
	l.count(-1)
	l.ls.handoffs.Add(1)
	if err != nil {
		l.s.log.Warn("hand-off to the goroutine path failed", "err", err)
		return nil, false
	}
	cc := newClientConn(tc)
	cc.ip = c.ip
	cc.in.buf, cc.in.pbuf, cc.in.r, cc.in.w = c.in.buf, c.in.pbuf, c.in.r, c.in.w
	c.in = reader{} // the buffer moved with the connection
	if !l.s.track(cc) {
		cc.in.release()
		_ = tc.Close()
		return nil, false
	}
	return cc, true
}

// sockaddr is b's address for connect(2), resolved once (a backend given by name is looked up
// at its first connection). Each call returns a new Sockaddr: connect(2) writes into it.
func (b *Backend) sockaddr() (unix.Sockaddr, int, error) {
	b.saOnce.Do(func() {
		a, err := net.ResolveTCPAddr("tcp", b.Address)
		if err != nil {
			b.saErr = err
			return
		}
		b.sa = a.AddrPort()
	})
	if b.saErr != nil {
		return nil, 0, b.saErr
	}
	ip := b.sa.Addr().Unmap()
	if ip.Is4() {
		return &unix.SockaddrInet4{Port: int(b.sa.Port()), Addr: ip.As4()}, unix.AF_INET, nil
	}
	return &unix.SockaddrInet6{Port: int(b.sa.Port()), Addr: ip.As16()}, unix.AF_INET6, nil
}

// resendEjected gives up, once a backend left rotation for failing (an outage, resend.go), the
// loop's requests sent to it before that which resendNow resends: being sent or waiting for
// the response head, no byte of it arrived. Each goes to the next backend through failed, as
// attemptEjected; the others stay, and are not looked at again for this outage. The loop looks
// only when some backend's outage count moved since its last look (woken, after the transition
// rebuilt the rotation).
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
		now := c.b.outages.Load()
		if now == c.seen {
			continue
		}
		c.seen = now
		if l.s.resendNow(&c.x.req, u.got, &c.t) {
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
