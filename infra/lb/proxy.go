package lb

import (
	"errors"
	"io"
	"net"
	"os"
	"sync"
	"time"

	"github.com/zero502/zero502/infra/http1"
	"github.com/zero502/zero502/infra/standing"
)

// exchange is the scratch memory of one request in progress, pooled: an idle client
// connection holds none of it.
type exchange struct {
	req   http1.Request
	resp  http1.Response
	out   []byte
	copy  []byte
	head  []byte            // a copy of the request head while a chunked body streams over it
	chunk http1.ChunkFramer // a chunked request body's framing, as far as it was relayed
	t     tried             // the backends the request used
	seen  uint64            // the outages of the backend of the attempt when it was picked
	wait  headWait          // the attempt's registration while it waits for the head (resend.go)
}

const outFlush = 16 << 10

var exchanges = sync.Pool{New: func() any {
	return &exchange{out: make([]byte, 0, outFlush+smallBuf), copy: make([]byte, 32<<10)}
}}

func putExchange(x *exchange) {
	x.req.Reset()
	x.resp.Head = nil
	exchanges.Put(x)
}

// outcome of one attempt to get a response head from a backend.
type attemptError int

const (
	attemptOK            attemptError = iota
	attemptConnect                    // could not connect: nothing was sent
	attemptNoAnswer                   // sent (maybe partly), not one byte came back: refused, reset, closed
	attemptTimeout                    // no response head within header_timeout, or the request not taken within body_timeout: 504
	attemptBad                        // a broken or partial response head: 502
	attemptClientGone                 // the client closed or broke the connection during its body: no answer possible
	attemptClientStall                // the client sent no body bytes for client_header_timeout: 408, close
	attemptSlowBody                   // the client IP has max_slow_bodies_per_ip slow bodies already: 429, close
	attemptClientFraming              // the client's chunked body has broken framing: 400, close
	attemptEjected                    // no response byte yet when the backend left rotation for failing: resent (resendNow)
	attemptCut                        // the head went out and a write of the body failed: read on for an answer (writeFailed); never an attempt's end
	attemptLocal                      // no connection for lack of the LB's own descriptors, memory or ports: 503, the backend not blamed
)

// dialFailure is the attempt's outcome when a connect to a backend failed with err, for both
// engines: attemptLocal when the LB itself is short (standing.LocalShortage), else
// attemptConnect.
func dialFailure(err error) attemptError {
	if standing.LocalShortage(err) {
		return attemptLocal
	}
	return attemptConnect
}

// deadline refreshes a connection's read or write deadline at most every quarter of the
// silence budget, so a transfer times out on silence between reads, never on its total
// duration, without a timer reset per read.
type deadline struct {
	conn    net.Conn
	write   bool
	silence time.Duration
	at      time.Time
}

func (d *deadline) touch(now time.Time) {
	if now.Sub(d.at) > d.silence/4 {
		d.at = now
		if d.write {
			_ = d.conn.SetWriteDeadline(now.Add(d.silence))
		} else {
			_ = d.conn.SetReadDeadline(now.Add(d.silence))
		}
	}
}

// proxy forwards the request whose head is the first headLen buffered bytes of cc and relays
// the response. It returns whether the client connection may carry another request.
func (s *Server) proxy(cc *clientConn, x *exchange, headLen int, start time.Time) bool {
	req := &x.req
	if req.Chunked {
		// the body streams from the read buffer through x.chunk (streamChunked); what already
		// arrived must be well framed before any of it goes to a backend. Its bytes land where
		// the head was once that is consumed: the request keeps a copy of its head
		x.head = append(x.head[:0], cc.in.buffered()[:headLen]...)
		req.Head = x.head
		cc.in.consume(headLen)
		headLen = 0
		x.chunk.Reset()
		var probe http1.ChunkFramer
		if _, err := probe.Scan(cc.in.buffered()); err != nil {
			s.refuse(cc, 400)
			return false
		}
	}
	body := cc.in.buffered()[headLen:]
	if int64(len(body)) > req.ContentLength {
		body = body[:req.ContentLength]
	}
	rest := req.ContentLength - int64(len(body)) // still to read from the client
	consumed := func() { cc.in.consume(headLen + len(body)) }

	t := &x.t
	*t = tried{}
	again := attemptOK // why this attempt is not the first
	for {
		b := s.rot.pick(t)
		if b == nil {
			if !s.skipBody(cc, x, rest, start) {
				return false
			}
			consumed()
			return s.answer(cc, req, 503, start, nil)
		}
		x.seen = b.outages.Load()
		t.add(b)
		s.countAgain(again)
		b.inFlight.Add(1)
		u, aerr := s.attempt(cc, x, b, body, &rest, start)
		if u != nil && staleRetry(req, aerr, u.reused) {
			u.close()
			u, aerr = s.attemptFresh(cc, x, b, body, &rest, start)
		}
		switch aerr {
		case attemptOK:
			if x.resp.Status == 101 {
				consumed()
				// An open upgraded connection is in flight to its backend until it ends: a drain
				// at the balancer waits for it (within its window) before the stop signal.
				s.tunnel(cc, x, b, u, start)
				b.inFlight.Add(-1)
				return false
			}
			if rest > 0 || req.Chunked && !x.chunk.Done() {
				// the backend answered before it took the whole body (writeFailed): the rest of
				// it was not read, so the connection cannot carry another request
				req.Close = true
			}
			keep := s.relay(cc, x, b, u, start)
			b.inFlight.Add(-1)
			consumed()
			return keep
		case attemptConnect, attemptNoAnswer, attemptTimeout, attemptBad, attemptEjected:
			reused := u != nil && u.reused
			if u != nil {
				u.close()
			}
			next, status := s.attemptFailed(req, b, aerr, reused)
			if next {
				again = aerr
				continue
			}
			if aerr == attemptConnect || aerr == attemptNoAnswer {
				// nothing of the request may have been taken (or not all of its body): get past
				// the rest of the body to go on
				if !s.skipBody(cc, x, rest, start) {
					return false
				}
			} else if rest > 0 || req.Chunked && !x.chunk.Done() {
				req.Close = true // the body was not read to its end: the connection cannot go on
			}
			if req.Chunked && aerr != attemptConnect {
				// a chunked body whose relay failed: whatever the client sends after it is not
				// trusted to be a request of its own (request smuggling); the connection closes
				// after the answer
				req.Close = true
			}
			consumed()
			return s.answer(cc, req, status, start, b)
		default: // the client's fault: the backend is not blamed, its counters untouched
			if u != nil {
				u.close()
			}
			b.inFlight.Add(-1)
			switch aerr {
			case attemptClientStall:
				s.refuse(cc, expiry(phBodyWait).refuse)
			case attemptSlowBody:
				s.refuse(cc, 429)
			case attemptClientFraming:
				s.refuse(cc, 400)
			}
			return false
		}
	}
}

// attempt sends the request to b on a pooled connection if one is fit (see pool), else on a
// fresh one, and reads the response head into x.resp.
// start is when the request began (slow bodies count from it).
func (s *Server) attempt(cc *clientConn, x *exchange, b *Backend, body []byte, rest *int64, start time.Time) (*upstream, attemptError) {
	now := s.clock.Now()
	if u := b.pool.get(now, s.set.IdleTimeout, reuseProbe); u != nil {
		return u, s.exchange(cc, x, u, body, rest, start)
	}
	return s.attemptFresh(cc, x, b, body, rest, start)
}

func (s *Server) attemptFresh(cc *clientConn, x *exchange, b *Backend, body []byte, rest *int64, start time.Time) (*upstream, attemptError) {
	u, err := s.dial(b)
	if err != nil {
		return nil, dialFailure(err)
	}
	return u, s.exchange(cc, x, u, body, rest, start)
}

func (s *Server) dial(b *Backend) (*upstream, error) {
	t0 := time.Now()
	c, err := net.DialTimeout("tcp", b.Address, s.set.budget(phConnect))
	if err != nil && b.named {
		c, err = s.dialReached(b, err)
	}
	if err != nil {
		return nil, err
	}
	b.connectSeconds.Observe(time.Since(t0).Seconds())
	if b.named {
		b.reach(c.RemoteAddr()) // where the event loops connect to it too
	}
	tc := c.(*net.TCPConn)
	raw, err := tc.SyscallConn()
	if err != nil {
		_ = c.Close()
		return nil, err
	}
	u := &upstream{conn: tc, raw: raw, backend: b}
	u.in = reader{conn: tc, buf: make([]byte, 8<<10)}
	return u, nil
}

// dialReached connects to b, given by name, where the last connection by its name got
// (Backend.reached), as the event loops do, when the dial by name failed with err because the
// name did not resolve (a resolver blip); otherwise, or without such an address, it is err.
func (s *Server) dialReached(b *Backend, err error) (net.Conn, error) {
	var dnsErr *net.DNSError
	p := b.reached.Load()
	if p == nil || !errors.As(err, &dnsErr) {
		return nil, err
	}
	return net.DialTimeout("tcp", p.String(), s.set.budget(phConnect))
}

// exchange writes the request on u and reads the response head. Writing to the backend times
// out on silence (body_timeout without progress), never on the total duration of the body.
func (s *Server) exchange(cc *clientConn, x *exchange, u *upstream, body []byte, rest *int64, start time.Time) attemptError {
	req := &x.req
	out := http1.AppendUpstreamHead(x.out[:0], req, cc.ip, s.trustsForwarded(cc.ip), cc.tls, u.backend.Address)
	headLen := len(out)
	if len(body) <= smallBuf {
		out = append(out, body...)
		body = nil
	}
	x.out = out[:0]
	uw := deadline{conn: u.conn, write: true, silence: s.set.budget(phSend)}
	uw.touch(time.Now())
	aerr := attemptOK // attemptCut: a write of the body failed, an answer may be waiting (writeFailed)
	if n, err := u.conn.Write(out); err != nil {
		aerr = backendWriteFailed(err, n >= headLen)
	} else if len(body) > 0 {
		if _, err := u.conn.Write(body); err != nil {
			aerr = backendWriteFailed(err, true)
		}
	}
	if aerr == attemptOK && (*rest > 0 || req.Chunked) {
		if req.ExpectContinue {
			req.ExpectContinue = false
			_ = cc.conn.SetWriteDeadline(time.Now().Add(s.set.budget(phAnswer)))
			if _, err := io.WriteString(cc.conn, "HTTP/1.1 100 Continue\r\n\r\n"); err != nil {
				return attemptClientGone
			}
		}
		stream := s.streamBody
		if req.Chunked {
			stream = s.streamChunked
		}
		aerr = stream(cc, x, u, &uw, rest, start)
	}
	cut := aerr == attemptCut
	if aerr != attemptOK && !cut {
		return aerr
	}
	t0 := time.Now()
	_ = u.conn.SetReadDeadline(t0.Add(s.set.budget(phAwait)))
	var wait *headWait // registered while an outage of the backend would resend the request
	if resendAfterEject(req, false) {
		wait = &x.wait
		u.backend.wait(wait, u.conn, x.seen)
		defer u.backend.unwait(wait)
	}
	answered := false // a byte of the response came
	for {
		switch n, step := responseHead(u.in.buffered(), req, &x.resp); step {
		case headBad:
			return attemptBad
		case headInterim:
			if req.Minor == 1 {
				// rewritten as a final head is: its hop-by-hop headers stay with the backend
				_ = cc.conn.SetWriteDeadline(time.Now().Add(s.set.budget(phBody)))
				if _, err := cc.conn.Write(http1.AppendClientHead(nil, &x.resp, false, false)); err != nil {
					return attemptClientGone
				}
			}
			u.in.consume(n)
			continue
		case headFinal:
			s.answered(u.backend, req, x.resp.Status, time.Since(t0))
			if cut {
				x.resp.KeepAlive = false // the connection broke under the body
			}
			return attemptOK
		}
		// an interim response passed on (consumed: u.in may be empty again) is an answer too:
		// the backend is not blamed as silent, and the request is not sent again (the client
		// would get the interim response twice), as on the event loops (lup.got)
		got := answered || u.in.w > 0
		if err := u.in.fill(maxResponseHead); err != nil {
			switch {
			case errors.Is(err, os.ErrDeadlineExceeded) && wait != nil && u.backend.takeCut(wait):
				if s.resendNow(req, answered, &x.t) {
					return attemptEjected
				}
				// kept where it is (a byte came, or no healthy backend is left): as before
				u.backend.resumeWait(wait, t0.Add(s.set.budget(phAwait)))
				continue
			case errors.Is(err, os.ErrDeadlineExceeded):
				return expiry(phAwait).attempt
			case errors.Is(err, errBufferFull), got:
				return attemptBad
			}
			return attemptNoAnswer // cut or not: the connection broke with no answer (writeFailed)
		}
		answered = true
	}
}

const maxResponseHead = 64 << 10

// backendWriteFailed classifies a failed write of the request to a backend: one that took no
// bytes for body_timeout is a slow backend (504, like a late response head), not a broken one;
// any other is writeFailed's, headOut saying whether the whole head had gone out.
func backendWriteFailed(err error, headOut bool) attemptError {
	if errors.Is(err, os.ErrDeadlineExceeded) {
		return expiry(phSend).attempt
	}
	return writeFailed(headOut)
}

// streamBody copies the rest of the request body from the client to u (see clientBody for the
// client's side); the backend must take a byte within body_timeout of the last (then 504).
func (s *Server) streamBody(cc *clientConn, x *exchange, u *upstream, uw *deadline, rest *int64, start time.Time) attemptError {
	body := s.newClientBody(cc, *rest, start)
	defer body.close()
	for *rest > 0 {
		n, aerr := body.read(x.copy)
		*rest = body.rest
		if n > 0 {
			uw.touch(time.Now())
			if _, err := u.conn.Write(x.copy[:n]); err != nil {
				return backendWriteFailed(err, true)
			}
		}
		if aerr != attemptOK {
			return aerr
		}
	}
	return attemptOK
}

// skipBody gets past the unread rest of a request body the LB answers itself, so the next
// request on the connection is found where it starts: it reads and drops it (as any body, see
// clientBody), or, when the client waits for 100 Continue (and may never send it), marks the
// connection to close. False when the body did not come: the connection closes unanswered.
func (s *Server) skipBody(cc *clientConn, x *exchange, rest int64, start time.Time) bool {
	if x.req.Chunked {
		return s.skipChunked(cc, x, start)
	}
	if rest == 0 {
		return true
	}
	if x.req.ExpectContinue || rest > 1<<20 {
		x.req.Close = true
		return true
	}
	body := s.newClientBody(cc, rest, start)
	defer body.close()
	for body.rest > 0 {
		if _, aerr := body.read(x.copy); aerr != attemptOK {
			return false
		}
	}
	return true
}

func (s *Server) eject(b *Backend, aerr attemptError) {
	reason := "connection broke before the response"
	if aerr == attemptConnect {
		reason = "connect failed"
	}
	if t, ok := b.Eject(reason, s.clock.Now()); ok {
		s.ejections.Add(1)
		s.changed(b, t)
	}
}
