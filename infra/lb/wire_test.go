package lb

import (
	"bufio"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/zero502/zero502/infra/http1"
	"github.com/zero502/zero502/internal/testrig/tcpserver"
)

// A request with more than http1.MaxRequestFields header lines is refused with 431 and the
// connection closed, on either engine, though it is far below max_header_bytes; one with
// exactly that many is served.
func TestTooManyHeaderFieldsGet431(t *testing.T) {
	a := startBackend(t, "a")
	l := startLB(t, fastSettings(a.addr()))
	head := func(n int) string {
		var b strings.Builder
		b.WriteString("GET / HTTP/1.1\r\nHost: x\r\nConnection: close\r\n")
		for i := 2; i < n; i++ {
			fmt.Fprintf(&b, "X-F%d: v\r\n", i)
		}
		return b.String() + "\r\n"
	}
	if out := raw(t, l.Addr(), head(200), 10*time.Second); !strings.HasPrefix(out, "HTTP/1.1 431 Request Header Fields Too Large\r\n") ||
		!strings.Contains(out, "Connection: close\r\n") {
		t.Errorf("200 header lines: %q, want 431 and the connection closed", out)
	}
	if out := raw(t, l.Addr(), head(http1.MaxRequestFields), 10*time.Second); !strings.HasPrefix(out, "HTTP/1.1 200 OK\r\n") {
		t.Errorf("%d header lines: %q, want 200", http1.MaxRequestFields, out)
	}
}

// A backend that takes a chunked request's head, then resets the connection while its body is
// on the way: the client gets 502 and its connection is closed. The body's bytes (here a last
// chunk whose extension and trailer hold a request line and Host: `0;x="/ HTTP/1.1"`) were
// relayed, never a request of their own: the LB must not parse them as the client's next
// request, and neither the backend nor the LB sees a second request (request smuggling).
func TestChunkedBodyAfterBackendResetIsNotARequest(t *testing.T) {
	var requests atomic.Int64 // apart from health checks
	reset := make(chan struct{})
	var once sync.Once
	addr := tcpserver.Serve(t, rawBackend(func(c net.Conn, req *http.Request) bool {
		if requests.Add(1) == 1 {
			_ = c.(*net.TCPConn).SetLinger(0) // Close sends RST
			_ = c.Close()
			once.Do(func() { close(reset) })
			return false
		}
		_, _ = io.Copy(io.Discard, req.Body)
		_, _ = io.WriteString(c, "HTTP/1.1 200 OK\r\nContent-Length: 9\r\n\r\nsmuggled\n")
		return true
	}))
	l := startSteadyLB(t, fastSettings(addr))
	c := dialLB(t, l.Addr(), 10*time.Second)
	if _, err := io.WriteString(c, "POST /upload HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\n\r\n"); err != nil {
		t.Fatal(err)
	}
	select {
	case <-reset:
	case <-time.After(5 * time.Second):
		t.Fatal("the request head did not reach the backend")
	}
	time.Sleep(100 * time.Millisecond) // the reset reaches the LB: its write of the body fails
	if _, err := io.WriteString(c, "0;x=\"/ HTTP/1.1\"\r\nHost: x\r\n\r\n"); err != nil {
		t.Fatal(err)
	}
	br := bufio.NewReader(c)
	resp, err := http.ReadResponse(br, nil)
	if err != nil {
		t.Fatalf("no answer: %v", err)
	}
	_, _ = io.Copy(io.Discard, resp.Body)
	resp.Body.Close()
	if resp.StatusCode != 502 {
		t.Errorf("status %d, want 502", resp.StatusCode)
	}
	rest, err := io.ReadAll(br)
	switch {
	case errors.Is(err, os.ErrDeadlineExceeded):
		t.Errorf("the client connection stayed open after the 502 (then read %q)", rest)
	case len(rest) > 0:
		t.Errorf("after the 502 the client got %q: the body was read as a request", rest)
	}
	time.Sleep(100 * time.Millisecond)
	if n := requests.Load(); n != 1 {
		t.Errorf("the backend saw %d requests, want 1", n)
	}
}

// A backend that sends 103 Early Hints, then closes without a final response, answered: both
// engines pass the 103 on once, then answer 502, without sending the GET to another backend or
// ejecting the backend (it did answer).
func TestInterimResponseThenCloseIs502(t *testing.T) {
	var requests atomic.Int64
	hints := rawBackend(func(c net.Conn, _ *http.Request) bool {
		requests.Add(1)
		_, _ = io.WriteString(c, "HTTP/1.1 103 Early Hints\r\nLink: </a.css>\r\n\r\n")
		return false
	})
	l := startSteadyLB(t, fastSettings(tcpserver.Serve(t, hints), tcpserver.Serve(t, hints)))
	out := raw(t, l.Addr(), "GET /x HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n", 10*time.Second)
	if n := strings.Count(out, "103 Early Hints"); n != 1 || !strings.HasPrefix(out, "HTTP/1.1 103 Early Hints\r\n") ||
		!strings.Contains(out, "\r\n\r\nHTTP/1.1 502 Bad Gateway\r\n") {
		t.Errorf("answer %q, want one 103, then 502", out)
	}
	if n := requests.Load(); n != 1 {
		t.Errorf("the GET went to %d backends, want 1", n)
	}
	for _, b := range l.Backends() {
		if !b.InRotation() {
			t.Errorf("backend %s ejected for a 1xx then a close: %+v", b.Address, b.Status())
		}
	}
}

// An interim response (103 Early Hints) reaches the client without its hop-by-hop headers and
// those its Connection header names, as a final one does, on either engine.
func TestInterimResponseLosesItsHopByHopHeaders(t *testing.T) {
	addr := scriptedBackend(t, "HTTP/1.1 103 Early Hints\r\nLink: </a.css>\r\nConnection: X-Hint-Secret\r\n"+
		"X-Hint-Secret: s3cret\r\nKeep-Alive: timeout=5\r\nProxy-Connection: keep-alive\r\n\r\n"+
		"HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\nok")
	l := startLB(t, fastSettings(addr))
	out := raw(t, l.Addr(), "GET /x HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n", 10*time.Second)
	interim, final, ok := strings.Cut(out, "\r\n\r\n")
	if !ok || !strings.HasPrefix(interim, "HTTP/1.1 103 Early Hints\r\n") || !strings.Contains(interim, "\r\nLink: </a.css>") ||
		!strings.HasPrefix(final, "HTTP/1.1 200 OK\r\n") || !strings.HasSuffix(final, "\r\n\r\nok") {
		t.Fatalf("answer %q, want the 103 with its Link, then the 200", out)
	}
	for _, h := range []string{"Connection:", "X-Hint-Secret", "Keep-Alive", "Proxy-Connection"} {
		if strings.Contains(interim, h) {
			t.Errorf("the 103 passed on %s: %q", h, interim)
		}
	}
}

// A backend response with both Transfer-Encoding: chunked and Content-Length reaches the client
// framed by chunked, without Content-Length (RFC 9112 §6.3), on either engine.
func TestResponseContentLengthWithChunkedIsDropped(t *testing.T) {
	body := "5\r\nhello\r\n0\r\n\r\n"
	addr := scriptedBackend(t, "HTTP/1.1 200 OK\r\nContent-Length: 100\r\nX-A: 1\r\nTransfer-Encoding: chunked\r\n\r\n"+body)
	l := startLB(t, fastSettings(addr))
	out := raw(t, l.Addr(), "GET / HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n", 10*time.Second)
	head, got, ok := strings.Cut(out, "\r\n\r\n")
	if !ok || !strings.HasPrefix(head, "HTTP/1.1 200 OK\r\n") || strings.Contains(strings.ToLower(head), "content-length") ||
		!strings.Contains(head, "\r\nTransfer-Encoding: chunked") || !strings.Contains(head, "\r\nX-A: 1") || got != body {
		t.Errorf("relayed %q, want the head without Content-Length, then the chunked body %q", out, body)
	}
}

// Forwarded, X-Real-IP and X-Forwarded-Host reach the backend from a trusted proxy only; from
// any other client they are dropped, on either engine. Spelled with an underscore (X_Forwarded_For, X-Real_IP,
// which CGI, WSGI and PHP backends read as the real ones) they are dropped from anyone.
func TestForwardedAndRealIPAreKeptOnlyFromTrustedProxies(t *testing.T) {
	a := startBackend(t, "a")
	set := fastSettings(a.addr())
	set.TrustedProxies = []string{"127.0.0.3/32"}
	l := startLB(t, set)
	sent := func(local string) string {
		c := dialFrom(t, local, l.Addr())
		_, _ = io.WriteString(c, "GET /headers HTTP/1.1\r\nHost: x\r\nForwarded: for=6.6.6.6\r\nX-Real-IP: 6.6.6.6\r\nX-Forwarded-Host: 6.6.6.6\r\n"+
			"X_Forwarded_For: 7.7.7.7\r\nX-Real_IP: 7.7.7.7\r\nx-forwarded_proto: 7.7.7.7\r\n\r\n")
		return readResponses(t, bufio.NewReader(c), 1, "GET")[0]
	}
	if got := sent("127.0.0.2"); strings.Contains(got, "6.6.6.6") || strings.Contains(got, "7.7.7.7") {
		t.Errorf("from an untrusted client the backend saw:\n%s", got)
	}
	if got := sent("127.0.0.3"); !strings.Contains(got, "Forwarded: for=6.6.6.6") || !strings.Contains(got, "X-Real-Ip: 6.6.6.6") ||
		!strings.Contains(got, "X-Forwarded-Host: 6.6.6.6") ||
		strings.Contains(got, "7.7.7.7") {
		t.Errorf("from a trusted proxy the backend saw:\n%s", got)
	}
}

// A backend's reason phrase with control characters (a bare CR that would start a line of its
// own in the client's head, a NUL), in a final or an interim response, is a malformed response:
// the client gets 502 and none of it, on either engine (RFC 9112 §4).
func TestControlCharactersInAReasonPhraseAre502(t *testing.T) {
	for _, answer := range []string{
		"HTTP/1.1 200 OK\rSet-Cookie: injected=1\x00\r\nContent-Length: 2\r\n\r\nok",
		"HTTP/1.1 103 Early\rSet-Cookie: injected=1\r\nLink: </a.css>\r\n\r\nHTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\nok",
		"HTTP/1.1 200 OK\x7f\r\nContent-Length: 2\r\n\r\nok",
	} {
		l := startLB(t, fastSettings(scriptedBackend(t, answer)))
		out := raw(t, l.Addr(), "GET / HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n", 10*time.Second)
		if !strings.HasPrefix(out, "HTTP/1.1 502 ") || strings.Contains(out, "injected") || strings.Contains(out, "\x7f") {
			t.Errorf("backend answer %q reached the client as %q, want 502", answer, out)
		}
	}
}

// A response with chunked applied twice is malformed: 502 (RFC 9112 §6.1), on either engine.
func TestResponseChunkedTwiceIs502(t *testing.T) {
	for _, te := range []string{"Transfer-Encoding: chunked\r\nTransfer-Encoding: chunked", "Transfer-Encoding: chunked, chunked"} {
		l := startLB(t, fastSettings(scriptedBackend(t, "HTTP/1.1 200 OK\r\n"+te+"\r\n\r\n5\r\nhello\r\n0\r\n\r\n")))
		if out := raw(t, l.Addr(), "GET / HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n", 10*time.Second); !strings.HasPrefix(out, "HTTP/1.1 502 ") {
			t.Errorf("%q: the client got %q, want 502", te, out)
		}
	}
}

// An HTTP/1.0 response with Transfer-Encoding has faulty framing (RFC 9112 §6.1): it is relayed,
// but its backend connection is closed after it, never reused, though it said keep-alive, on
// either engine.
func TestHTTP10ResponseWithTransferEncodingClosesTheBackendConnection(t *testing.T) {
	var mu sync.Mutex
	served := map[net.Conn]int{}
	addr := tcpserver.Serve(t, rawBackend(func(c net.Conn, _ *http.Request) bool {
		mu.Lock()
		served[c]++
		mu.Unlock()
		_, _ = io.WriteString(c, "HTTP/1.0 200 OK\r\nConnection: keep-alive\r\nTransfer-Encoding: chunked\r\n\r\n2\r\nok\r\n0\r\n\r\n")
		return true
	}))
	l := startSteadyLB(t, fastSettings(addr))
	for i := range 3 {
		out := raw(t, l.Addr(), "GET / HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n", 10*time.Second)
		if !strings.HasPrefix(out, "HTTP/1.1 200 OK\r\n") || !strings.HasSuffix(out, "\r\n\r\n2\r\nok\r\n0\r\n\r\n") {
			t.Fatalf("request %d: %q", i+1, out)
		}
		time.Sleep(50 * time.Millisecond) // a connection kept would be back in the pool by now
	}
	mu.Lock()
	defer mu.Unlock()
	for _, n := range served {
		if n > 1 {
			t.Fatalf("a backend connection carried %d requests after an HTTP/1.0 response with Transfer-Encoding", n)
		}
	}
}

// Trailer is end-to-end (RFC 9110 §6.6.2): it reaches the backend with a chunked request, the
// trailer field with it, and the client with a chunked response, on either engine.
func TestTrailerHeaderIsForwardedBothWays(t *testing.T) {
	type seen struct{ announced, value string }
	got := make(chan seen, 1)
	addr := tcpserver.Serve(t, rawBackend(func(c net.Conn, req *http.Request) bool {
		var s seen
		for name := range req.Trailer { // the Trailer header's names, before the body
			s.announced += name
		}
		_, _ = io.Copy(io.Discard, req.Body)
		s.value = req.Trailer.Get("X-Sum")
		got <- s
		_, _ = io.WriteString(c, "HTTP/1.1 200 OK\r\nTrailer: X-Sum\r\nTransfer-Encoding: chunked\r\n\r\n2\r\nok\r\n0\r\nX-Sum: 2\r\n\r\n")
		return true
	}))
	l := startSteadyLB(t, fastSettings(addr))
	out := raw(t, l.Addr(), "POST /sum HTTP/1.1\r\nHost: x\r\nTrailer: X-Sum\r\nTransfer-Encoding: chunked\r\nConnection: close\r\n\r\n"+
		"5\r\nhello\r\n0\r\nX-Sum: 5\r\n\r\n", 10*time.Second)
	select {
	case s := <-got:
		if s != (seen{"X-Sum", "5"}) {
			t.Errorf("the backend saw Trailer %q and X-Sum %q in the trailer, want X-Sum and 5", s.announced, s.value)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("the request did not reach the backend")
	}
	head, body, _ := strings.Cut(out, "\r\n\r\n")
	if !strings.HasPrefix(head, "HTTP/1.1 200 OK\r\n") || !strings.Contains(head, "\r\nTrailer: X-Sum") || body != "2\r\nok\r\n0\r\nX-Sum: 2\r\n\r\n" {
		t.Errorf("the client got %q, want Trailer: X-Sum in the head and the trailer after the body", out)
	}
}

// rawBackend is a backend written byte by byte: it answers the LB's health checks 200 and hands
// every other request to serve, which writes its answer on c and says whether to read another.
func rawBackend(serve func(c net.Conn, req *http.Request) bool) func(net.Conn) {
	return func(c net.Conn) {
		br := bufio.NewReader(c)
		for {
			req, err := http.ReadRequest(br)
			if err != nil {
				return
			}
			if req.URL.Path == "/health" {
				_, _ = io.WriteString(c, "HTTP/1.1 200 OK\r\nContent-Length: 0\r\n\r\n")
				continue
			}
			if !serve(c, req) {
				return
			}
		}
	}
}

// Bytes a backend sends past its response (a body on a HEAD, a Content-Length shorter than the
// body) would be the next request's response on that connection, another client's: on either
// engine such a connection is closed, never reused. Both ways it happens: in the same write as
// the body (the socket holds more when the response is done), and a moment after a response
// (the connection waits in the pool).
func TestBytesABackendSentPastItsResponseNeverReachAnotherClient(t *testing.T) {
	const evil = "HTTP/1.1 200 OK\r\nContent-Length: 4\r\n\r\nEVIL"
	sneaky := rawBackend(func(c net.Conn, req *http.Request) bool {
		switch req.URL.Path {
		case "/long":
			_, _ = io.WriteString(c, "HTTP/1.1 200 OK\r\nContent-Length: 5000\r\n\r\n")
			time.Sleep(30 * time.Millisecond) // the body in a read of its own, which it fills exactly
			_, _ = io.WriteString(c, strings.Repeat("x", 5000)+evil)
		case "/late":
			_, _ = io.WriteString(c, "HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\nok")
			time.Sleep(50 * time.Millisecond)
			_, _ = io.WriteString(c, evil)
		default:
			_, _ = io.WriteString(c, "HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\nok")
		}
		return true
	})
	l := startSteadyLB(t, fastSettings(tcpserver.Serve(t, sneaky)))
	for _, first := range []string{"/long", "/late"} {
		if out := raw(t, l.Addr(), "GET "+first+" HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n", 10*time.Second); !strings.HasPrefix(out, "HTTP/1.1 200 OK\r\n") {
			t.Fatalf("GET %s: %q", first, out)
		}
		time.Sleep(200 * time.Millisecond) // the late bytes arrive while the connection waits in the pool
		for i := range 2 {
			out := raw(t, l.Addr(), "GET /b HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n", 10*time.Second)
			if _, body, _ := strings.Cut(out, "\r\n\r\n"); body != "ok" {
				t.Errorf("after GET %s, request %d of another client got %q; want its own answer, ok", first, i+1, out)
			}
		}
	}
}

// An HTTP/1.0 client that says Expect: 100-continue gets no 100 Continue from the LB (RFC 9110
// §15.2: no 1xx to a 1.0 client, which would read it as its answer; §10.1.1: a 1.0 request's
// expectation is ignored), only its answer, once its body came; on either engine.
func TestAnHTTP10ClientIsNeverSentA100Continue(t *testing.T) {
	a := startBackend(t, "a")
	l := startLB(t, fastSettings(a.addr()))
	c := dialLB(t, l.Addr(), 10*time.Second)
	if _, err := io.WriteString(c, "POST /upload HTTP/1.0\r\nExpect: 100-continue\r\nContent-Length: 5\r\n\r\n"); err != nil {
		t.Fatal(err)
	}
	// The LB answers an expectation as soon as it has read the head and no body came with it: a
	// 100 would be on the wire within this wait. (The wait only gives it the chance.)
	_ = c.SetReadDeadline(time.Now().Add(300 * time.Millisecond))
	if early, _ := io.ReadAll(c); len(early) > 0 {
		t.Fatalf("an HTTP/1.0 client with Expect: 100-continue got %q before it sent its body; want nothing yet", early)
	}
	_ = c.SetReadDeadline(time.Now().Add(10 * time.Second))
	if _, err := io.WriteString(c, "hello"); err != nil {
		t.Fatal(err)
	}
	out, _ := io.ReadAll(c)
	if !strings.HasPrefix(string(out), "HTTP/1.1 200 OK\r\n") || strings.Contains(string(out), " 100 Continue") {
		t.Fatalf("an HTTP/1.0 client with Expect: 100-continue got %q; want its 200 alone", out)
	}
	if _, body, _ := strings.Cut(string(out), "\r\n\r\n"); !strings.HasPrefix(body, "5 ") { // /upload answers the length it got
		t.Errorf("the backend's answer %q does not say it got the 5-byte body", out)
	}
}

// A chunked body's trailer reaches the other side without the fields the LB frames, routes or
// forwards by, in either direction and on either engine: a backend that merges the trailer into
// the header section (RFC 9110 §6.5.2 says it must not; some do) cannot be handed a client
// address, a Host or framing the LB did not set, and a client cannot be handed framing or
// connection fields the LB did not send. Other trailer fields pass as they came.
func TestTrailerDropsFieldsTheLBControls(t *testing.T) {
	got := make(chan string, 1)
	addr := tcpserver.Serve(t, func(c net.Conn) {
		readTrailedRequest(c, got)
		_, _ = io.WriteString(c, "HTTP/1.1 200 OK\r\nTrailer: X-Sum\r\nTransfer-Encoding: chunked\r\nConnection: close\r\n\r\n"+
			"2\r\nok\r\n0\r\nConnection: keep-alive\r\nX-Sum: 2\r\nContent-Length: 7\r\nTransfer-Encoding: chunked\r\n\r\n")
	})
	l := startSteadyLB(t, fastSettings(addr))
	out := raw(t, l.Addr(), "POST /sum HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\nConnection: close\r\n\r\n"+
		"5\r\nhello\r\n0\r\nX-Forwarded-For: 6.6.6.6\r\nX-Sum: 5\r\nX-Real-IP: 6.6.6.6\r\nForwarded: for=6.6.6.6\r\nHost: evil\r\nContent-Length: 99\r\n\r\n", 10*time.Second)
	select {
	case body := <-got:
		if body != "5\r\nhello\r\n0\r\nX-Sum: 5\r\n\r\n" {
			t.Errorf("the backend got the body %q, want the trailer X-Sum alone", body)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("the request did not reach the backend")
	}
	for _, req := range []string{out, raw(t, l.Addr(), "GET / HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n", 10*time.Second)} {
		if _, body, _ := strings.Cut(req, "\r\n\r\n"); body != "2\r\nok\r\n0\r\nX-Sum: 2\r\n\r\n" {
			t.Errorf("the client got %q, want the trailer X-Sum alone", req)
		}
	}
}

// A trailer field whose name arrives in two reads is judged once all of it is here: the
// request's forged X-Forwarded-For and the response's Connection are dropped all the same, the
// rest of the body goes on, and nothing waits for bytes that never come.
func TestTrailerFieldNameSplitAcrossReadsIsDropped(t *testing.T) {
	got := make(chan string, 1)
	addr := tcpserver.Serve(t, func(c net.Conn) {
		readTrailedRequest(c, got)
		_, _ = io.WriteString(c, "HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n2\r\nok\r\n0\r\nConne")
		time.Sleep(50 * time.Millisecond)
		_, _ = io.WriteString(c, "ction: keep-alive\r\nX-Sum: 2\r\n\r\n")
	})
	l := startSteadyLB(t, fastSettings(addr))
	c, err := net.Dial("tcp", l.Addr())
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	_ = c.SetDeadline(time.Now().Add(10 * time.Second))
	_, _ = io.WriteString(c, "POST /sum HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\nConnection: close\r\n\r\n5\r\nhello\r\n0\r\nX-Forw")
	time.Sleep(50 * time.Millisecond)
	_, _ = io.WriteString(c, "arded-For: 6.6.6.6\r\nX-Sum: 5\r\n\r\n")
	select {
	case body := <-got:
		if body != "5\r\nhello\r\n0\r\nX-Sum: 5\r\n\r\n" {
			t.Errorf("the backend got the body %q, want the trailer X-Sum alone", body)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("the request's trailer did not reach the backend")
	}
	out, _ := io.ReadAll(c)
	if _, body, _ := strings.Cut(string(out), "\r\n\r\n"); body != "2\r\nok\r\n0\r\nX-Sum: 2\r\n\r\n" {
		t.Errorf("the client got %q, want the trailer X-Sum alone", out)
	}
}

// readTrailedRequest is the backend's side of the trailer tests: it reads one request from c up
// to its head's end and, for a POST (a chunked body with a trailer, its fields one per line), up
// to its trailer's end too, and sends the POST's body, as it came, on got.
func readTrailedRequest(c net.Conn, got chan<- string) {
	br := bufio.NewReader(c)
	var in strings.Builder
	for blanks, want := 0, 1; blanks < want; {
		line, err := br.ReadString('\n')
		if err != nil {
			return
		}
		if in.Len() == 0 && strings.HasPrefix(line, "POST ") {
			want = 2
		}
		in.WriteString(line)
		if line == "\r\n" {
			blanks++
		}
	}
	if req := in.String(); strings.HasPrefix(req, "POST ") {
		_, body, _ := strings.Cut(req, "\r\n\r\n")
		got <- body
	}
}

// Interim heads the client has not taken yet go before the final head, whole, whatever the
// backend sends meanwhile, on either engine. The backend sends 6 MiB of 103s (more than the
// socket buffers on the way hold, so the LB waits for a slow client with a 103 part sent), then
// a close-delimited 200 (which the loops hand to the goroutine path) and its body a byte every
// millisecond, each an event on the backend's connection while a 103 waits for the client.
func TestInterimHeadsTheClientHasNotTakenGoBeforeTheFinalHead(t *testing.T) {
	const hints = 192
	link := "</" + strings.Repeat("a", 32<<10) + ".css>"
	hint := "HTTP/1.1 103 Early Hints\r\nLink: " + link + "\r\n\r\n"
	const ticks = 500
	backend := rawBackend(func(c net.Conn, _ *http.Request) bool {
		_ = c.SetWriteDeadline(time.Now().Add(time.Minute))
		if _, err := io.WriteString(c, strings.Repeat(hint, hints)+"HTTP/1.1 200 OK\r\nContent-Type: text/plain\r\n\r\n"); err != nil {
			return false
		}
		for range ticks {
			if _, err := io.WriteString(c, "x"); err != nil {
				return false
			}
			time.Sleep(time.Millisecond)
		}
		return false
	})
	c := getThroughLB(t, backend, 256<<10) // (no autotuning: the LB's socket fills)
	_ = c.SetDeadline(time.Now().Add(time.Minute))
	var out []byte
	buf := make([]byte, 32<<10)
	for {
		n, err := c.Read(buf) // a slow client: 32 KiB a millisecond at most
		out = append(out, buf[:n]...)
		if err != nil {
			break
		}
		time.Sleep(time.Millisecond)
	}
	rest := string(out)
	for i := range hints {
		head, after, ok := strings.Cut(rest, "\r\n\r\n")
		if !ok || !strings.HasPrefix(head, "HTTP/1.1 103 Early Hints\r\n") || !strings.Contains(head, "\r\nLink: "+link) || strings.Contains(head, "HTTP/1.1 200") {
			t.Fatalf("interim head %d of %d is not whole: %.80q… (%d bytes received)", i+1, hints, head, len(out))
		}
		rest = after
	}
	head, body, _ := strings.Cut(rest, "\r\n\r\n")
	if !strings.HasPrefix(head, "HTTP/1.1 200 OK\r\n") || body != strings.Repeat("x", ticks) {
		t.Fatalf("after the %d interim heads: head %.200q, a body of %d bytes; want the 200 and %d bytes", hints, head, len(body), ticks)
	}
}

// A client that reads nothing holds back a backend's interim responses as it holds back a body:
// the LB stops reading a backend whose 1xx heads the client does not take, rather than keep
// them all in memory, on either engine. The backend writes 103s until a write makes no
// progress for 2 s; with backpressure that is after the socket buffers on the way filled
// (some MiB), without it after all of them.
func TestInterimResponsesToAClientReadingNothingAreHeldBack(t *testing.T) {
	const total = 256 << 20
	hint := "HTTP/1.1 103 Early Hints\r\nLink: </" + strings.Repeat("a", 8<<10) + ".css>\r\n\r\n"
	var written atomic.Int64
	done := make(chan struct{})
	flood := rawBackend(func(c net.Conn, _ *http.Request) bool {
		defer close(done)
		for written.Load() < total {
			_ = c.SetWriteDeadline(time.Now().Add(2 * time.Second))
			n, err := io.WriteString(c, hint)
			written.Add(int64(n))
			if err != nil {
				return false
			}
		}
		return false
	})
	getThroughLB(t, flood, 4<<10)
	select {
	case <-done:
	case <-time.After(time.Minute):
		t.Fatalf("the backend still writes after a minute (%d bytes)", written.Load())
	}
	if n := written.Load(); n >= 48<<20 {
		t.Errorf("the LB took %d MiB of 1xx heads for a client that reads nothing, want it held back (a few MiB)", n>>20)
	}
}

// getThroughLB sends a GET, through an LB (a head timeout of a minute) in front of backend
// alone, on a connection with a receive buffer of readBuffer bytes, and returns the connection
// (closed when the test ends).
func getThroughLB(t *testing.T, backend func(net.Conn), readBuffer int) net.Conn {
	t.Helper()
	set := fastSettings(tcpserver.Serve(t, backend))
	set.HeaderTimeout = time.Minute
	l := startLB(t, set)
	c, err := net.Dial("tcp", l.Addr())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	_ = c.(*net.TCPConn).SetReadBuffer(readBuffer)
	if _, err := io.WriteString(c, "GET /x HTTP/1.1\r\nHost: x\r\n\r\n"); err != nil {
		t.Fatal(err)
	}
	return c
}
