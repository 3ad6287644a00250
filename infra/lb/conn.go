package lb

import (
	"crypto/tls"
	"errors"
	"net"
	"net/http"
	"os"
	"strconv"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/zero502/zero502/infra/http1"
)

// clientConn is one client connection. Between requests it holds no buffer: it waits for
// readability with a zero-copy peek (waitReadable), and takes a read buffer and an exchange
// from their pools only while a request is in progress.
type clientConn struct {
	conn clientSocket
	raw  syscall.RawConn // nil for TLS: its bytes are not the socket's (no peek, no event loop)
	tls  bool            // came in on the TLS listener (X-Forwarded-Proto: https)
	in   reader
	ip   []byte
	idle atomic.Bool // waiting for a request on its own goroutine
	// resting: idle past hotWindow, waiting with the zero-copy peek and no read buffer
	resting atomic.Bool
	// used: a request began on it (see freshGrace).
	used atomic.Bool
	// since is when the buffered request began, for a connection an event loop handed over
	// mid-request (zero otherwise): slow bodies count from it.
	since time.Time
}

// clientSocket is a client connection's socket: TCP, or TLS over TCP (tls.go), which only the
// goroutine path serves.
type clientSocket interface {
	net.Conn
	CloseWrite() error
}

func newClientConn(c clientSocket) *clientConn {
	cc := &clientConn{conn: c}
	cc.in.conn = c
	_, cc.tls = c.(*tls.Conn)
	if tc, ok := c.(*net.TCPConn); ok {
		if raw, err := tc.SyscallConn(); err == nil {
			cc.raw = raw
		}
	}
	if a, ok := c.RemoteAddr().(*net.TCPAddr); ok {
		cc.ip = []byte(a.IP.String())
	}
	return cc
}

// serveConn answers the requests of one client connection, in order (pipelined requests
// wait in the read buffer), until it closes, asks to close, the LB stops, or it goes idle and
// is handed to an event loop (parkInLoop). ready says the client has already sent something
// (an event loop handing it over mid-request).
func (s *Server) serveConn(cc *clientConn, ready bool) {
	if s.serveRequests(cc, ready) {
		return // parked in an event loop: the connection lives on without this goroutine
	}
	s.closeConn(cc)
}

// serveRequests returns true when the connection was parked in an event loop, false when it is
// done.
func (s *Server) serveRequests(cc *clientConn, ready bool) (parked bool) {
	for {
		if len(cc.in.buffered()) == 0 && !ready {
			switch s.awaitRequest(cc) {
			case waitParked:
				return true
			case waitDone:
				return false
			}
		}
		ready = false
		cc.used.Store(true)
		start := time.Now()
		if !cc.since.IsZero() {
			start, cc.since = cc.since, time.Time{}
		}
		_ = cc.conn.SetReadDeadline(start.Add(s.set.budget(phHead)))
		n, err := s.readHead(cc)
		if err != nil {
			var pe *http1.ParseError
			if errors.As(err, &pe) {
				s.refuse(cc, pe.Status)
			} else if errors.Is(err, os.ErrDeadlineExceeded) && len(cc.in.buffered()) > 0 {
				s.refuse(cc, expiry(phHead).refuse)
			}
			return false
		}
		x := exchanges.Get().(*exchange)
		keep := s.serve(cc, x, n, start)
		putExchange(x)
		if !keep {
			return false
		}
	}
}

// closeConn ends a goroutine-path client connection.
func (s *Server) closeConn(cc *clientConn) {
	cc.in.r, cc.in.w = 0, 0
	cc.in.release()
	_ = cc.conn.Close()
	s.forget(cc)
}

// hotWindow is how long a client connection keeps its goroutine and read buffer waiting for
// the next request before it is parked in an event loop, or rests in the peek.
const hotWindow = 250 * time.Millisecond

type waitResult int

const (
	waitData   waitResult = iota // bytes arrived
	waitParked                   // handed to an event loop
	waitDone                     // closed by the client, idle too long, or the LB is stopping
)

// awaitRequest waits for the first bytes of the next request. For hotWindow the connection
// keeps its read buffer and reads directly, the common case of a busy keep-alive client; after
// that it is parked in an event loop, or, without the loops (TLS, the goroutines engine, a
// system without epoll), rests on its goroutine in a buffer-free peek until the client idle
// timeout.
func (s *Server) awaitRequest(cc *clientConn) waitResult {
	now := time.Now()
	idle := s.set.idleBudget(cc.used.Load())
	cc.in.acquire()
	_ = cc.conn.SetReadDeadline(now.Add(min(hotWindow, idle)))
	if s.closing.Load() && !cc.used.Load() {
		// accepted just before the LB stopped accepting: its first request is on its way
		_ = cc.conn.SetReadDeadline(now.Add(freshGrace))
		if cc.in.fill(s.set.MaxHeaderBytes) == nil {
			return waitData
		}
		return waitDone
	}
	cc.idle.Store(true)
	if s.closing.Load() {
		return waitDone
	}
	err := cc.in.fill(s.set.MaxHeaderBytes)
	cc.idle.Store(false)
	switch {
	case err == nil:
		return waitData
	case !errors.Is(err, os.ErrDeadlineExceeded) || idle <= hotWindow || s.closing.Load():
		return waitDone
	}
	_ = cc.conn.SetReadDeadline(time.Time{})
	if s.parkInLoop(cc) {
		return waitParked
	}
	if s.closing.Load() {
		return waitDone
	}
	_ = cc.conn.SetReadDeadline(now.Add(idle))
	cc.idle.Store(true)
	if s.closing.Load() {
		cc.in.release()
		return waitDone
	}
	cc.resting.Store(true)
	err = awaitReadable(cc, s.set.MaxHeaderBytes)
	cc.resting.Store(false)
	cc.idle.Store(false)
	if err != nil {
		return waitDone
	}
	return waitData
}

// readHead reads until the buffer holds a whole request head and returns its length.
func (s *Server) readHead(cc *clientConn) (int, error) {
	max := s.set.MaxHeaderBytes
	for {
		skip, n, err := requestHead(cc.in.buffered(), max)
		cc.in.consume(skip)
		if err != nil {
			return 0, err
		}
		if n > 0 {
			return n, nil
		}
		if err := cc.in.fill(max); err != nil {
			if errors.Is(err, errBufferFull) {
				return 0, headTooLarge(max)
			}
			return 0, err
		}
	}
}

// serve handles one parsed-or-refused request head of n bytes.
func (s *Server) serve(cc *clientConn, x *exchange, n int, start time.Time) bool {
	head := cc.in.buffered()[:n]
	if err := http1.ParseRequest(head, &x.req); err != nil {
		var pe *http1.ParseError
		if errors.As(err, &pe) {
			s.refuse(cc, pe.Status)
		}
		return false
	}
	req := &x.req
	if status, ok := s.answersItself(req); ok {
		cc.in.consume(n)
		return s.answer(cc, req, status, start, nil)
	}
	return s.proxy(cc, x, n, start)
}

// answer writes a response the LB makes itself (its own health, 502, 503, 504) and returns
// whether the client connection may carry another request.
func (s *Server) answer(cc *clientConn, req *http1.Request, status int, start time.Time, b *Backend) bool {
	out, closeClient := s.ownAnswer(make([]byte, 0, 160), cc.ip, req, status, start, b)
	_ = cc.conn.SetWriteDeadline(time.Now().Add(s.set.budget(phAnswer)))
	_, err := cc.conn.Write(out)
	if err == nil && closeClient && req.HasBody() && b == nil {
		// a body the LB answered without reading (maintenance): the client sees the answer,
		// not a reset
		lingerClose(cc)
	}
	return err == nil && !closeClient
}

// ownAnswer appends a response the LB makes itself to dst, counts and logs it, and says whether
// the client connection closes after it. A 503 of no backend while maintenance is on is the
// maintenance page, counted apart (zero502_lb_maintenance_responses_total): not a failure.
func (s *Server) ownAnswer(dst, ip []byte, req *http1.Request, status int, start time.Time, b *Backend) ([]byte, bool) {
	closeClient := req.Close || s.draining.Load() || s.closing.Load()
	if p := s.maintenanceFor(req); p != nil && b == nil && status == 503 {
		// a request body is not read: the connection ends after the page
		closeClient = closeClient || req.HasBody()
		s.maint.answered.Add(1)
		s.logAccess(ip, req, status, nil, start)
		return p.appendAnswer(dst, req, closeClient), closeClient
	}
	body := statusBody(status, s.draining.Load() || s.closing.Load())
	out := append(dst, "HTTP/1.1 "...)
	out = strconv.AppendInt(out, int64(status), 10)
	out = append(out, ' ')
	out = append(out, statusText(status)...)
	out = append(out, "\r\nContent-Type: text/plain; charset=utf-8\r\nContent-Length: "...)
	out = strconv.AppendInt(out, int64(len(body)), 10)
	out = append(out, "\r\n"...)
	if status == 503 {
		out = append(out, "Retry-After: 1\r\n"...)
	}
	if closeClient {
		out = append(out, "Connection: close\r\n"...)
	}
	out = append(out, "\r\n"...)
	if !req.IsHead() {
		out = append(out, body...)
	}
	if status >= 500 {
		s.metrics.ownAnswers.WithLabelValues(strconv.Itoa(status)).Inc()
	}
	s.logAccess(ip, req, status, b, start)
	return out, closeClient
}

// refuse answers a request the LB cannot parse and closes the connection gracefully: it stops
// writing, then reads what the client is still sending for a moment, so the client sees the
// status instead of a reset.
func (s *Server) refuse(cc *clientConn, status int) {
	body := statusText(status) + "\n"
	out := "HTTP/1.1 " + strconv.Itoa(status) + " " + statusText(status) +
		"\r\nContent-Type: text/plain; charset=utf-8\r\nContent-Length: " + strconv.Itoa(len(body)) +
		"\r\nConnection: close\r\n\r\n" + body
	s.metrics.refused.WithLabelValues(strconv.Itoa(status)).Inc()
	_ = cc.conn.SetWriteDeadline(time.Now().Add(time.Second))
	if _, err := cc.conn.Write([]byte(out)); err != nil {
		return
	}
	lingerClose(cc)
}

// lingerClose stops writing to the client and reads what it is still sending for a moment
// (up to 1 MiB), so that the answer already written reaches it instead of a reset.
func lingerClose(cc *clientConn) {
	_ = cc.conn.CloseWrite()
	_ = cc.conn.SetReadDeadline(time.Now().Add(500 * time.Millisecond))
	var sink [4096]byte
	for total := 0; total < 1<<20; {
		n, err := cc.conn.Read(sink[:])
		total += n
		if err != nil {
			return
		}
	}
}

// statusText is code's reason phrase as the LB writes it (429 Too Many Requests among them).
func statusText(code int) string {
	if t := http.StatusText(code); t != "" {
		return t
	}
	return "Status " + strconv.Itoa(code)
}

func statusBody(code int, draining bool) string {
	switch code {
	case 200:
		return "ok\n"
	case 502:
		return "bad gateway: the backend could not be reached or broke the connection\n"
	case 503:
		if draining {
			return "draining\n"
		}
		return "no healthy backend\n"
	case 504:
		return "gateway timeout: the backend sent no response headers in time\n"
	}
	return statusText(code) + "\n"
}
