package lb

import (
	"errors"

	"github.com/zero502/zero502/infra/http1"
	"github.com/zero502/zero502/internal/rawsys"
	"golang.org/x/sys/unix"
)

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
	l.enter(c, phBody)
	l.writeClient(c, out) // relayBody goes on once it went (clientSent)
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
		k, err := rawsys.Recv(u.fd, buf)
		switch {
		case k > 0:
			c.left -= int64(k)
			l.progress(c)
			if k < len(buf) && !u.Hup {
				u.CanRead = false
			}
			l.writeClient(c, buf[:k])
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

// relayChunked relays a chunked body byte for byte but the trailer fields the LB drops, its
// framing checked by the exchange's http1.ChunkFramer only to find where the message ends, as
// on the goroutine path (http1.ChunkFramer.Relay); backpressure as in relayBody.
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
			k, send, err := c.x.chunk.Relay(b)
			if err != nil {
				l.closeClient(c) // a broken framing: no whole response possible
				return
			}
			if send && k > 0 {
				l.writeClient(c, b[:k])
			}
			if k > 0 {
				u.in.consume(k)
				continue
			}
			// a trailer field's name too short yet to judge: read on
		}
		if !u.CanRead {
			return
		}
		free, err := u.in.space(maxResponseHead)
		if err != nil {
			l.closeClient(c)
			return
		}
		k, err := rawsys.Recv(u.fd, free)
		switch {
		case k > 0:
			u.in.w += k
			l.progress(c)
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

// writeClient queues p for the client; the loop sends it with the round's other sends (flush,
// loop_io_linux.go) and goes on with the exchange once all of it went (clientSent).
func (l *loop) writeClient(c *lclient, p []byte) {
	if c.pend == nil && len(l.spare) > 0 {
		c.pend, l.spare = l.spare[len(l.spare)-1], l.spare[:len(l.spare)-1]
	}
	c.pend = append(c.pend, p...)
	l.queueClient(c)
}

// queueClient queues c's pending bytes for the round's sends, or, when the socket takes no
// more now, waits for its writable edge (clientReady queues them then).
func (l *loop) queueClient(c *lclient) {
	if c.queued || c.closed {
		return
	}
	if !c.CanWrite {
		l.watch(c)
		return
	}
	c.queued = true
	l.outgoing = append(l.outgoing, pending{c: c})
}

// clientSent takes the result of a send of c's pending bytes: the rest waits for the socket's
// writable edge; once all went, the exchange goes on where the write left it.
func (l *loop) clientSent(c *lclient, n int, err error) {
	switch {
	case err == nil:
		c.pendOff += n
		if n > 0 {
			l.progress(c)
		}
		if c.pendOff < len(c.pend) {
			c.CanWrite = false // a short write: the socket buffer is full
			l.watch(c)
			return
		}
	case errors.Is(err, unix.EAGAIN):
		c.CanWrite = false
		l.watch(c)
		return
	default: // the client is gone
		l.closeClient(c)
		return
	}
	l.releasePend(c)
	switch c.phase {
	case phAnswer:
		l.finish(c)
	case phAwait: // interim heads went: read on for the final one (backpressure, readHead)
		if c.u != nil {
			l.readHead(c, c.u)
		}
	case phBody:
		if c.u != nil {
			l.relayBody(c, c.u)
		}
	}
}

// releasePend gives c's emptied buffer of pending bytes to the loop's spares, so that an idle
// client holds none.
func (l *loop) releasePend(c *lclient) {
	if c.pend != nil && cap(c.pend) <= 64<<10 && len(l.spare) < maxSpare {
		l.spare = append(l.spare, c.pend[:0])
	}
	c.pend, c.pendOff = nil, 0
}

// maxSpare bounds the emptied buffers a loop keeps for its clients' next responses.
const maxSpare = 64
