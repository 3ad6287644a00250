package acceptance

import (
	"fmt"
	"io"
	"net"
	"net/http"
	"strings"
	"testing"
	"time"
)

// The lab's robustness checks (garbage, a 100 KB header, a client leaving mid-response, a hung
// backend, half-sent requests) and the request-smuggling defences of RFC 9112 §6.3.

func TestGarbageIs400AndTheLBLives(t *testing.T) {
	t.Parallel()
	l := startLB(t, []*backendProc{startBackend(t, "a")}, calm...)
	for _, garbage := range []string{
		"\x16\x03\x01\x02\x00\x01\x00\x01\xfc\x03\x03\r\n\r\n", // a TLS hello-ish blob
		"HELLO THERE\r\n\r\n",
		"GET\r\n\r\n",
		"GET / HTTP/9.9\r\nHost: x\r\n\r\n",
		"GET / HTTP/1.1\r\nHost: x\r\nNo colon here\r\n\r\n",
	} {
		t.Run(fmt.Sprintf("%q", garbage), func(t *testing.T) {
			c := dialRawConn(t, l.addr)
			c.send(garbage)
			resp, _ := c.read("GET")
			if resp.StatusCode != http.StatusBadRequest && !(strings.Contains(garbage, "9.9") && resp.StatusCode == http.StatusHTTPVersionNotSupported) {
				t.Fatalf("status %d, want 400", resp.StatusCode)
			}
			c.requireClosed("after a malformed request")
		})
	}
	if resp, _ := l.mustGet(t, "/"); resp.StatusCode != 200 {
		t.Fatalf("after the garbage GET / gave %d", resp.StatusCode)
	}
	l.requireAlive(t)
}

func TestOversizedHeaderIs431(t *testing.T) {
	t.Parallel()
	a := startBackend(t, "a")
	l := startLB(t, []*backendProc{a}, calm...)
	big := func(t *testing.T, l *lbProc, size int) int {
		t.Helper()
		c := dialRawConn(t, l.addr)
		req := requestLine("GET", "/", "X-Big: "+strings.Repeat("z", size))
		go func() { // the LB may answer before reading it all; a failed write is fine
			_ = c.c.SetWriteDeadline(time.Now().Add(10 * time.Second))
			_, _ = io.WriteString(c.c, req)
		}()
		resp, _, err := c.tryRead("GET", 10*time.Second)
		if err != nil {
			t.Fatalf("%d-byte header: reading the answer: %v (the LB must let the client read its 431 "+
				"before it closes: drain the rest or close the write side first)", size, err)
		}
		return resp.StatusCode
	}
	t.Run("100 KB header with the default limit", func(t *testing.T) {
		if code := big(t, l, 100_000); code != http.StatusRequestHeaderFieldsTooLarge {
			t.Fatalf("status %d, want 431", code)
		}
		if resp, _ := l.mustGet(t, "/"); resp.StatusCode != 200 {
			t.Fatalf("after the big header GET / gave %d", resp.StatusCode)
		}
		if n := a.count(t, "GET /"); n != 1 {
			t.Fatalf("the backend saw %d GET /, want only the normal one", n)
		}
	})
	t.Run("the limit follows --max-header-bytes", func(t *testing.T) {
		small := startLB(t, []*backendProc{a}, append([]string{"--max-header-bytes", "16384"}, calm...)...)
		if code := big(t, small, 20_000); code != http.StatusRequestHeaderFieldsTooLarge {
			t.Fatalf("20 KB header with --max-header-bytes 16384: status %d, want 431", code)
		}
		if code := big(t, small, 10_000); code != http.StatusOK {
			t.Fatalf("10 KB header with --max-header-bytes 16384: status %d, want 200", code)
		}
	})
	l.requireAlive(t)
}

func TestClientLeavingMidResponseBreaksNothing(t *testing.T) {
	t.Parallel()
	l := startLB(t, threeBackends(t), calm...)
	for i := 0; i < 12; i++ {
		c := dialRawConn(t, l.addr)
		c.send(requestLine("GET", "/big"))
		buf := make([]byte, 4096)
		if _, err := io.ReadFull(c.br, buf); err != nil {
			t.Fatalf("reading the start of /big: %v", err)
		}
		if i%2 == 0 {
			_ = c.c.(*net.TCPConn).SetLinger(0) // leave with a reset, not a FIN
		}
		c.c.Close()
	}
	l.sequence(t, 9)
	eventually(t, 10*time.Second, 50*time.Millisecond, func() (bool, string) {
		for addr, s := range l.status(t) {
			if s.InFlight != 0 {
				return false, fmt.Sprintf("backend %s still counts %d requests in flight", addr, s.InFlight)
			}
		}
		return true, ""
	})
	l.requireAlive(t)
}

func TestHungBackendGives504WhileOthersAreServed(t *testing.T) {
	t.Parallel()
	l := startLB(t, threeBackends(t), calm...)
	type result struct {
		code int
		took time.Duration
		err  error
	}
	hung := make(chan result, 1)
	go func() {
		start := time.Now()
		resp, _, err := l.get("/hang")
		r := result{took: time.Since(start), err: err}
		if err == nil {
			r.code = resp.StatusCode
		}
		hung <- r
	}()
	// While that request waits, everyone else is served: all of them before it gets its 504.
	for i := 0; i < 10; i++ {
		start := time.Now()
		resp, body := l.mustGet(t, "/")
		if resp.StatusCode != 200 || time.Since(start) > 2*time.Second {
			t.Fatalf("request %d beside the hung one: status %d %q after %s", i+1, resp.StatusCode, body, time.Since(start))
		}
		time.Sleep(30 * time.Millisecond) // spread them over the wait
	}
	var r result
	select {
	case r = <-hung:
		t.Fatalf("the hung request was answered (%d after %s) before the others were all served", r.code, r.took)
	default:
		r = <-hung
	}
	if r.err != nil {
		t.Fatalf("GET /hang: %v after %s, want a 504", r.err, r.took)
	}
	if r.code != http.StatusGatewayTimeout || r.took < 2500*time.Millisecond || r.took > 8*time.Second {
		t.Fatalf("GET /hang: status %d after %s, want 504 after the 3 s header timeout", r.code, r.took)
	}
	t.Logf("hung backend: 504 after %s", r.took.Round(time.Millisecond))
}

func TestHalfSentRequestsBlockNobody(t *testing.T) {
	t.Parallel()
	l := startLB(t, threeBackends(t), calm...)
	const heads, bodies = 200, 20
	for i := 0; i < heads+bodies; i++ {
		c, err := net.DialTimeout("tcp", l.addr, 5*time.Second)
		if err != nil {
			t.Fatalf("slow client %d: %v", i, err)
		}
		t.Cleanup(func() { c.Close() })
		if i < heads { // half a head (slowloris)
			_, err = io.WriteString(c, "GET / HTTP/1.1\r\nHost: lb.test\r\nX-Slow: ")
		} else { // a whole head, half the body
			_, err = io.WriteString(c, "POST /upload HTTP/1.1\r\nHost: lb.test\r\nContent-Length: 100\r\n\r\n0123456789")
		}
		if err != nil {
			t.Fatalf("slow client %d: %v", i, err)
		}
	}
	for i := 0; i < 30; i++ {
		start := time.Now()
		resp, body := l.mustGet(t, "/")
		// Blocked would mean waiting for the LB's 10 s client header timeout.
		if resp.StatusCode != 200 || time.Since(start) > 5*time.Second {
			t.Fatalf("request %d beside %d slow clients: status %d %q after %s",
				i+1, heads+bodies, resp.StatusCode, body, time.Since(start))
		}
	}
	l.requireAlive(t)
}

func TestSmugglingDefences(t *testing.T) {
	t.Parallel()
	bs := threeBackends(t)
	l := startLB(t, bs, calm...)
	for _, tc := range []struct {
		name string
		req  string
		want int
	}{
		{"Transfer-Encoding other than chunked", requestLine("POST", "/smuggled", "Transfer-Encoding: gzip, chunked") + "5\r\nhello\r\n0\r\n\r\n", 400},
		{"broken chunk size", requestLine("POST", "/smuggled", "Transfer-Encoding: chunked") + "5x\r\nhello\r\n0\r\n\r\n", 400},
		{"Transfer-Encoding with Content-Length", requestLine("POST", "/smuggled", "Content-Length: 5", "Transfer-Encoding: chunked") + "0\r\n\r\n", 400},
		{"non-numeric Content-Length", requestLine("POST", "/smuggled", "Content-Length: abc") + "abc", 400},
		{"signed Content-Length", requestLine("POST", "/smuggled", "Content-Length: +5") + "hello", 400},
		{"negative Content-Length", requestLine("POST", "/smuggled", "Content-Length: -1"), 400},
		{"conflicting Content-Length", requestLine("POST", "/smuggled", "Content-Length: 5", "Content-Length: 6") + "hello!", 400},
		{"repeated Content-Length", requestLine("POST", "/smuggled", "Content-Length: 5", "Content-Length: 5") + "hello", 400},
		{"Content-Length list", requestLine("POST", "/smuggled", "Content-Length: 5, 5") + "hello", 400},
		{"obs-fold header line", requestLine("GET", "/smuggled", "X-Folded: a", " b"), 400},
		{"space before the colon", requestLine("GET", "/smuggled", "Content-Length : 0"), 400},
		{"bare LF inside the head", "GET /smuggled HTTP/1.1\r\nHost: lb.test\nX-Bare: lf\r\n\r\n", 400},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c := dialRawConn(t, l.addr)
			c.send(tc.req)
			resp, body := c.read("POST")
			if resp.StatusCode != tc.want {
				t.Fatalf("status %d %q, want %d", resp.StatusCode, body, tc.want)
			}
			c.requireClosed("after a refused request")
		})
	}
	for _, b := range bs {
		for _, m := range []string{"GET", "POST"} {
			if n := b.count(t, m+" /smuggled"); n != 0 {
				t.Errorf("backend %s received %d refused %s requests", b.name, n, m)
			}
		}
	}
}
