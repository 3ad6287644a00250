package lb

import (
	"errors"
	"time"

	"github.com/zero502/zero502/infra/http1"
	"github.com/zero502/zero502/internal/evloop"
	"github.com/zero502/zero502/internal/rawsys"

	"golang.org/x/sys/unix"
)

// lclient is a client connection held by a loop.
type lclient struct {
	evloop.Readiness
	fd     int
	ip     []byte
	in     reader // conn is nil: the loop reads with recvfrom(2) (rawsys.Recv)
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

	pend    []byte // bytes for the client not sent yet: queued for the round's sends, or waiting
	pendOff int    // for the socket to take more
	queued  bool   // its send is in the loop's outgoing
	reading bool   // its receive is in the loop's incoming

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

// clientReady acts on new readiness of c.
func (l *loop) clientReady(c *lclient) {
	if c.pendOff < len(c.pend) {
		l.queueClient(c) // the round's sends go on with them (clientSent)
		return
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
					l.enter(c, phIdle)
				}
			case c.phase == phIdle: // the start of a pipelined request: the head timeout runs
				l.enter(c, phHead)
			}
			l.watch(c) // the rest of the request (or the next one) comes with an event
			return
		}
		free, err := c.in.space(maxHead + loopBodyLimit)
		if err != nil {
			l.refuse(c, headTooLarge(maxHead))
			return
		}
		n, err = rawsys.Recv(c.fd, free)
		switch {
		case n > 0:
			l.clientGot(c, n, len(free))
		case errors.Is(err, unix.EAGAIN):
			c.CanRead = false
		case errors.Is(err, unix.EINTR):
		default: // EOF or a broken connection
			l.closeClient(c)
			return
		}
	}
}

// clientGot takes n bytes of a request received into c's buffer, whose free end held room.
func (l *loop) clientGot(c *lclient, n, room int) {
	c.in.w += n
	if n < room && !c.Hup {
		c.CanRead = false // a short read drained the socket (edge-triggered)
	}
	switch c.phase {
	case phIdle:
		l.enter(c, phHead)
		c.used = true
	case phBodyWait: // the body moves: only silence counts
		l.progress(c)
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
			c.start = l.Now()
			l.enter(c, phBodyWait)
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

// answer sends a response the LB makes itself (health, 502, 503, 504).
func (l *loop) answer(c *lclient, status int, b *Backend) {
	x := c.x
	out, closeClient := l.s.ownAnswer(x.out[:0], c.ip, &x.req, status, c.start, b)
	x.out = out[:0]
	c.status, c.keep, c.left = status, !closeClient, 0
	l.enter(c, phAnswer)
	l.writeClient(c, out) // finish once it went (clientSent)
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
	l.enter(c, phIdle)
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
		aerr, u = dialFailure(err), nil
	}
	if aerr == attemptConnect && b.named {
		// a backend given by name: no connection by its name reached it yet, or its address
		// moved. The goroutine path connects by name (the lookup, each address in turn), off
		// the loop: the request goes there whole (nothing of it was sent), and from there on
		// the goroutine path's rules decide, as on that engine.
		if u != nil {
			b.unreach(u.via)
			l.closeUpstream(u)
		}
		b.inFlight.Add(-1)
		c.b = nil
		l.handOff(c)
		return
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

// expired acts on a passed deadline: what running out of the phase's budget costs (expiry).
func (l *loop) expired(c *lclient) {
	switch cost := expiry(c.phase); {
	case cost.refuse != 0:
		l.refuse(c, &http1.ParseError{Status: cost.refuse, Reason: cost.reason})
	case cost.attempt != attemptOK:
		l.failed(c, c.u, cost.attempt)
	default:
		l.closeClient(c)
	}
}

// enter moves c to phase p, its deadline the phase's budget from now.
func (l *loop) enter(c *lclient, p phase) {
	c.phase, c.deadline = p, l.Now().Add(l.s.set.budget(p))
}

// progress restarts the budget of c's phase: bytes moved, and only silence counts.
func (l *loop) progress(c *lclient) { c.deadline = l.Now().Add(l.s.set.budget(c.phase)) }

// closeClient closes c and whatever exchange it had in progress.
func (l *loop) closeClient(c *lclient) {
	if c.closed {
		return
	}
	c.closed = true
	if u := c.u; u != nil {
		c.u, u.c = nil, nil
		l.closeUpstream(u)
		if c.phase == phBody { // a response cut short (either side) is logged too, as relay does
			l.s.logAccess(c.ip, &c.x.req, c.status, c.b, c.start)
		}
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
