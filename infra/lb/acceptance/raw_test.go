package acceptance

import (
	"bufio"
	"errors"
	"io"
	"net"
	"net/http"
	"os"
	"strings"
	"syscall"
	"testing"
	"time"
)

// rawConn is a client connection where the test writes the exact bytes and parses the
// responses itself, for everything where framing matters.
type rawConn struct {
	t  *testing.T
	c  net.Conn
	br *bufio.Reader
}

func dialRawConn(t *testing.T, addr string) *rawConn {
	t.Helper()
	c := dialRaw(t, addr)
	return &rawConn{t: t, c: c, br: bufio.NewReader(c)}
}

// send writes s in one write.
func (r *rawConn) send(s string) {
	r.t.Helper()
	_ = r.c.SetWriteDeadline(time.Now().Add(10 * time.Second))
	if _, err := io.WriteString(r.c, s); err != nil {
		r.t.Fatalf("write request: %v", err)
	}
}

// read parses one response (to a request with the given method) and its whole body.
func (r *rawConn) read(method string) (*http.Response, []byte) {
	r.t.Helper()
	resp, body, err := r.tryRead(method, 15*time.Second)
	if err != nil {
		r.t.Fatalf("read response: %v", err)
	}
	return resp, body
}

func (r *rawConn) tryRead(method string, d time.Duration) (*http.Response, []byte, error) {
	_ = r.c.SetReadDeadline(time.Now().Add(d))
	resp, err := http.ReadResponse(r.br, &http.Request{Method: method})
	if err != nil {
		return nil, nil, err
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	return resp, body, err
}

// closedByPeer reports whether the server closed the connection within d (EOF or reset on read).
func (r *rawConn) closedByPeer(d time.Duration) (bool, error) {
	_ = r.c.SetReadDeadline(time.Now().Add(d))
	var one [1]byte
	n, err := r.br.Read(one[:])
	switch {
	case n > 0:
		return false, errors.New("unexpected bytes after the response: " + string(one[:n]))
	case errors.Is(err, io.EOF), errors.Is(err, syscall.ECONNRESET):
		return true, nil
	case errors.Is(err, os.ErrDeadlineExceeded):
		return false, nil
	default:
		return false, err
	}
}

// requireClosed fails unless the server closes the connection within 5 s.
func (r *rawConn) requireClosed(why string) {
	r.t.Helper()
	closed, err := r.closedByPeer(5 * time.Second)
	if err != nil {
		r.t.Fatalf("%s: %v", why, err)
	}
	if !closed {
		r.t.Fatalf("%s: the LB kept the connection open", why)
	}
}

// requireOpen fails when the server closed the connection (checked for 200 ms).
func (r *rawConn) requireOpen(why string) {
	r.t.Helper()
	closed, err := r.closedByPeer(200 * time.Millisecond)
	if err != nil {
		r.t.Fatalf("%s: %v", why, err)
	}
	if closed {
		r.t.Fatalf("%s: the LB closed the connection", why)
	}
}

// request builds a raw HTTP/1.1 request: line, header lines, body (CRLF everywhere).
func request(line string, headers []string, body string) string {
	var b strings.Builder
	b.WriteString(line + "\r\n")
	for _, h := range headers {
		b.WriteString(h + "\r\n")
	}
	b.WriteString("\r\n")
	b.WriteString(body)
	return b.String()
}
