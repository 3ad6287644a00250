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
		k, err := rawsys.Recv(u.fd, buf)
		switch {
		case k > 0:
			c.left -= int64(k)
			l.progress(c)
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
			if err != nil || send && k > 0 && !l.writeClient(c, b[:k]) {
				l.closeClient(c) // a broken framing or a gone client: no whole response possible
				return
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
		l.progress(c)
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
