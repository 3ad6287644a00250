package lb

import "time"

// streamChunked relays a chunked request body from the client to u as it comes, framing and
// all but the trailer fields the LB drops (http1.ChunkFramer.Relay), with the same backpressure
// and timeouts as streamBody: the bytes already buffered, then chunk data read straight into the
// copy buffer (never past the chunk's end, so a pipelined request stays in the read buffer) and
// framing read into the read buffer. What x.chunk has
// scanned is consumed from the read buffer at once, before it is written: the read buffer and
// the framer never disagree on where the body stands, even when a write fails. A body whose
// framing breaks ends the exchange (attemptClientFraming): the backend connection is closed, so
// the backend sees a truncated body, never a second request.
func (s *Server) streamChunked(cc *clientConn, x *exchange, u *upstream, uw *deadline, _ *int64, start time.Time) attemptError {
	body := s.newClientBody(cc, 0, start)
	defer body.close()
	for !x.chunk.Done() {
		if p := cc.in.buffered(); len(p) > 0 {
			n, send, err := x.chunk.Relay(p)
			if err != nil {
				return attemptClientFraming
			}
			if n > 0 {
				// consumed before the write: x.chunk has taken these bytes, so they are body
				// whatever the write does; left in the buffer after a failed write, they would
				// be read as the client's next request (request smuggling)
				cc.in.consume(n)
				if !send {
					continue // a trailer field the LB drops
				}
				uw.touch(time.Now())
				if _, err := u.conn.Write(p[:n]); err != nil {
					return backendWriteFailed(err, true)
				}
				continue
			}
			// a trailer field's name too short yet to judge: read on
		}
		if left := x.chunk.DataLeft(); left > 0 {
			body.rest = left
			n, aerr := body.read(x.copy)
			if n > 0 {
				_, _ = x.chunk.Scan(x.copy[:n]) // chunk data: no framing to break
				uw.touch(time.Now())
				if _, err := u.conn.Write(x.copy[:n]); err != nil {
					return backendWriteFailed(err, true)
				}
			}
			if aerr != attemptOK {
				return aerr
			}
			continue
		}
		if aerr := body.fill(); aerr != attemptOK {
			return aerr
		}
	}
	return attemptOK
}

// skipChunked gets past the rest of a chunked body the LB answers itself (see skipBody): it
// reads and drops up to 1 MiB of it; beyond that, or when the client waits for 100 Continue,
// the connection closes after the answer. False when the body did not come or broke.
func (s *Server) skipChunked(cc *clientConn, x *exchange, start time.Time) bool {
	if x.chunk.Done() {
		return true
	}
	if x.req.ExpectContinue {
		x.req.Close = true
		return true
	}
	body := s.newClientBody(cc, 0, start)
	defer body.close()
	for dropped := 0; !x.chunk.Done(); {
		if p := cc.in.buffered(); len(p) > 0 {
			n, err := x.chunk.Scan(p)
			if err != nil {
				return false
			}
			cc.in.consume(n)
			if dropped += n; dropped > 1<<20 && !x.chunk.Done() {
				x.req.Close = true
				return true
			}
			continue
		}
		if body.fill() != attemptOK {
			return false
		}
	}
	return true
}
