package lb

import (
	"io"
	"time"

	"github.com/zero502/zero502/infra/http1"
)

// relay sends the response head in x.resp (still buffered in u) to the client and the body
// after it, byte for byte, then parks u for reuse when the response ended cleanly and the
// backend allows it. It returns whether the client connection may carry another request.
func (s *Server) relay(cc *clientConn, x *exchange, b *Backend, u *upstream, start time.Time) bool {
	resp := &x.resp
	req := &x.req
	closeClient := req.Close || s.draining.Load() || s.closing.Load() || resp.Framing == http1.UntilClose
	dechunk := req.Minor == 0 && resp.Framing == http1.Chunked
	closeClient = closeClient || dechunk
	out := http1.AppendClientHead(x.out[:0], resp, closeClient, dechunk)
	u.in.consume(len(resp.Head))
	status := resp.Status

	now := time.Now()
	cw := deadline{conn: cc.conn, write: true, silence: s.set.budget(phBody)}
	cw.touch(now)

	// the header deadline is still set: from here on only silence counts
	ur := deadline{conn: u.conn, silence: s.set.budget(phBody), at: now}
	if resp.Framing != http1.NoBody {
		_ = u.conn.SetReadDeadline(now.Add(s.set.budget(phBody)))
	}
	w := sink{cc: cc, out: out, cw: cw}

	var ok bool
	switch resp.Framing {
	case http1.NoBody:
		ok = w.flush()
	case http1.ContentLength:
		ok = w.copyN(u, &ur, resp.ContentLength, x.copy)
	case http1.Chunked:
		ok = w.chunked(u, &ur, dechunk)
	case http1.UntilClose:
		ok = w.copyUntilEOF(u, &ur, x.copy)
	}
	x.out = w.out[:0]
	switch {
	case ok && resp.KeepAlive:
		s.putUpstream(b, u)
	default:
		u.close()
	}
	s.logAccess(cc.ip, req, status, b, start)
	if !ok {
		return false
	}
	return !closeClient
}

func (s *Server) putUpstream(b *Backend, u *upstream) {
	_ = u.conn.SetReadDeadline(time.Time{})
	b.pool.put(u, s.clock.Now())
}

// sink collects bytes for the client and writes them in as few writes as possible: the head
// and whatever body is already buffered go out together; before every blocking read from the
// backend the sink is flushed, so a slow backend's bytes still stream.
type sink struct {
	cc   *clientConn
	out  []byte
	cw   deadline
	fail bool
}

func (w *sink) write(p []byte) {
	w.out = append(w.out, p...)
	if len(w.out) >= outFlush {
		w.flush()
	}
}

func (w *sink) flush() bool {
	if w.fail {
		return false
	}
	if len(w.out) > 0 {
		w.cw.touch(time.Now())
		if _, err := w.cc.conn.Write(w.out); err != nil {
			w.fail = true // the client left: nothing breaks, the backend connection is closed
		}
		w.out = w.out[:0]
	}
	return !w.fail
}

// fill flushes the sink and reads more from the backend.
func (w *sink) fill(u *upstream, ur *deadline) bool {
	if !w.flush() {
		return false
	}
	ur.touch(time.Now())
	return u.in.fill(maxResponseHead) == nil
}

// copyN relays exactly n body bytes.
func (w *sink) copyN(u *upstream, ur *deadline, n int64, buf []byte) bool {
	if b := u.in.buffered(); len(b) > 0 {
		k := min(int64(len(b)), n)
		w.write(b[:k])
		u.in.consume(int(k))
		n -= k
	}
	if !w.flush() {
		return false
	}
	for n > 0 {
		ur.touch(time.Now())
		p := buf
		if int64(len(p)) > n {
			p = p[:n]
		}
		k, err := u.conn.Read(p)
		n -= int64(k)
		if k > 0 {
			w.cw.touch(time.Now())
			if _, werr := w.cc.conn.Write(p[:k]); werr != nil {
				return false
			}
		}
		if err != nil && n > 0 {
			return false
		}
	}
	return true
}

// copyUntilEOF relays a close-delimited body.
func (w *sink) copyUntilEOF(u *upstream, ur *deadline, buf []byte) bool {
	if b := u.in.buffered(); len(b) > 0 {
		w.write(b)
		u.in.consume(len(b))
	}
	if !w.flush() {
		return false
	}
	for {
		ur.touch(time.Now())
		k, err := u.conn.Read(buf)
		if k > 0 {
			w.cw.touch(time.Now())
			if _, werr := w.cc.conn.Write(buf[:k]); werr != nil {
				return false
			}
		}
		if err == io.EOF {
			return true
		}
		if err != nil {
			return false
		}
	}
}

// chunked relays a chunked body as it came but the trailer fields the LB drops, its framing
// checked by an http1.ChunkFramer only to find where the message ends (the last chunk and the
// trailer section; see http1.ChunkFramer.Relay). With dechunk only the data goes out (for an
// HTTP/1.0 client, which cannot read chunked coding; its connection closes after).
func (w *sink) chunked(u *upstream, ur *deadline, dechunk bool) bool {
	var f http1.ChunkFramer
	for !f.Done() {
		b := u.in.buffered()
		switch {
		case len(b) == 0:
			if !w.fill(u, ur) {
				return false
			}
		case f.DataLeft() > 0:
			k := f.Data(len(b))
			w.write(b[:k])
			u.in.consume(k)
		case dechunk:
			k, err := f.Frame(b)
			if err != nil {
				return false
			}
			u.in.consume(k)
		default:
			k, send, err := f.Relay(b)
			if err != nil {
				return false
			}
			if k == 0 { // a trailer field's name too short yet to judge
				if !w.fill(u, ur) {
					return false
				}
				continue
			}
			if send {
				w.write(b[:k])
			}
			u.in.consume(k)
		}
	}
	return w.flush()
}
