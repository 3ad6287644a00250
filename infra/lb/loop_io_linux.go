package lb

import (
	"errors"

	"golang.org/x/sys/unix"
)

// A loop's receives and sends are made together, at the end of each round, through the loop's
// uring.Batch: one io_uring_enter for the receives of the sockets the round's edges said are
// readable (and the sends queued meanwhile), then one for the sends their requests and
// responses lead to, and so on while those lead to more. A request costs a share of those two
// system calls and of one epoll_wait, where it cost four calls and the share. Where io_uring is
// not allowed the batch makes the same calls one at a time: the loop's rules are the same.
//
// Only the first receive after an edge is batched: a client's request (its head, or the rest
// of a small body) and a backend's response head. Its result is applied as the state machine
// would apply its own (clientGot, upstreamGot), then the state machine runs as on any event and
// receives on itself if it needs more. A receive that finds the end of the stream or an error
// is left to the state machine to see again (for a client, its connection simply closes).

// pending is a queued receive or send: for c (u nil) or for u on behalf of c.
type pending struct {
	c    *lclient
	u    *lup
	recv bool
	room int // the receive's buffer size (a shorter read drained the socket)
}

// live: p's client is still open and, for u, u is still open and carries c's exchange (a state
// machine that ran since p was queued may have ended either).
func (p *pending) live() bool {
	return !p.c.closed && (p.u == nil || p.u.fd >= 0 && p.u.c == p.c)
}

// mayReadClient: c's next step is reading its request (readRequest would receive now).
func (l *loop) mayReadClient(c *lclient) bool {
	return c.CanRead && c.phase <= phBodyWait && c.pendOff == len(c.pend) && !c.closed
}

// mayReadHead: u's next step is reading c's response head (readHead would receive now).
func (l *loop) mayReadHead(c *lclient, u *lup) bool {
	return u.CanRead && c.phase == phAwait && c.u == u && c.pendOff == len(c.pend) && !c.closed
}

// receive queues the receive an edge of c (u nil) or of u made due; the state machine goes on
// once it is made (received).
func (l *loop) receive(c *lclient, u *lup) {
	if u != nil {
		if !u.reading {
			u.reading = true
			l.incoming = append(l.incoming, pending{c: c, u: u, recv: true})
		}
		return
	}
	if !c.reading {
		c.reading = true
		l.incoming = append(l.incoming, pending{c: c, recv: true})
	}
}

// settle ends a round: the clients ready for another request are served, then the round's
// receives and sends are made (flush), and so on while those lead to more.
func (l *loop) settle() {
	for {
		l.runReady()
		if len(l.incoming) == 0 && len(l.outgoing) == 0 {
			return
		}
		l.flush()
	}
}

// flush makes the queued receives and sends in one batch and goes on with each exchange as its
// result says: the sends' first (they finish exchanges), then the receives'. What those queue
// goes to the next batch.
func (l *loop) flush() {
	all := append(l.inflight[:0], l.outgoing...)
	all = append(all, l.incoming...)
	clear(l.outgoing)
	clear(l.incoming)
	l.outgoing, l.incoming = l.outgoing[:0], l.incoming[:0]
	for i := range all {
		p := &all[i]
		if !l.prepare(p, uint64(i)) {
			l.done(p) // closed, or its exchange moved on, since it was queued
			p.c = nil
		}
	}
	l.io.Flush(func(i uint64, n int, err error) {
		p := &all[i]
		l.done(p)
		switch {
		case p.recv:
			l.got(p, n, err)
			p.recv = false // its state machine runs below, after the other results
			return
		case !p.live():
		case p.u == nil:
			l.clientSent(p.c, n, err)
		default:
			l.upstreamSent(p.c, p.u, n, err)
		}
		p.c = nil
	})
	for i := range all { // the receives' state machines, and those the batch could not serve
		p := &all[i]
		switch {
		case p.c == nil || !p.live():
		case p.u == nil && p.c.phase <= phBodyWait && p.c.pendOff == len(p.c.pend):
			l.readRequest(p.c) // (what it received is buffered, whatever CanRead says now)
		case p.u == nil:
			l.clientReady(p.c)
		default:
			l.upstreamReady(p.u)
		}
	}
	clear(all)
	l.inflight = all[:0]
}

// prepare adds p to the batch under token; false when p has nothing to do any more (closed, or
// its exchange moved on, since it was queued). A receive that is no longer the state machine's
// next step (or whose buffer is full) is not made: its state machine runs and finds out itself.
func (l *loop) prepare(p *pending, token uint64) bool {
	if !p.live() {
		return false
	}
	c, u := p.c, p.u
	var free []byte
	var err error
	switch {
	case !p.recv && u == nil:
		l.io.Send(c.fd, c.pend[c.pendOff:], token)
		return true
	case !p.recv:
		l.io.Send(u.fd, u.out[u.outOff:], token)
		return true
	case u == nil && l.mayReadClient(c):
		if free, err = c.in.space(l.s.set.MaxHeaderBytes + loopBodyLimit); err == nil {
			l.io.Recv(c.fd, free, token)
		}
	case u != nil && l.mayReadHead(c, u):
		if free, err = u.in.space(maxResponseHead); err == nil {
			l.io.Recv(u.fd, free, token)
		}
	default:
		err = errNotNow
	}
	if err != nil {
		l.done(p)
		p.recv = false
	}
	p.room = len(free)
	return true
}

// errNotNow: a queued receive that is no longer its state machine's next step.
var errNotNow = errors.New("not the next step")

// done clears the flag that kept p from being queued twice.
func (l *loop) done(p *pending) {
	switch {
	case p.recv && p.u != nil:
		p.u.reading = false
	case p.recv:
		p.c.reading = false
	case p.u != nil:
		p.u.queued = false
	default:
		p.c.queued = false
	}
}

// got applies the result of a batched receive as the state machine applies its own.
func (l *loop) got(p *pending, n int, err error) {
	if !p.live() {
		return // (a state machine that ran before it in the batch ended it)
	}
	switch {
	case n > 0 && p.u == nil:
		l.clientGot(p.c, n, p.room)
	case n > 0:
		p.u.upstreamGot(n, p.room)
	case errors.Is(err, unix.EAGAIN):
		if p.u != nil {
			p.u.CanRead = false
		} else {
			p.c.CanRead = false
		}
	case p.u == nil: // the client closed its side, or its connection broke
		l.closeClient(p.c)
	}
	// a backend's end of the stream or error: readHead receives it again and decides
}
