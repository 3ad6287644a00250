package lb

import (
	"bufio"
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/zero502/zero502/internal/testrig/poll"
	"github.com/zero502/zero502/internal/testrig/syncbuffer"
	"github.com/zero502/zero502/internal/testrig/tcpserver"
)

func TestProxyRelaysBodiesIntact(t *testing.T) {
	a := startBackend(t, "a")
	l := startLB(t, fastSettings(a.addr()))
	c := client()

	code, body, _ := get(t, c, l.url("/big"))
	if code != 200 || body != string(bigBody) {
		t.Fatalf("/big: %d, %d bytes, want 200 and the 1 MiB body", code, len(body))
	}
	code, body, hdr := get(t, c, l.url("/chunked"))
	if code != 200 || body != string(bigBody[:5000]) {
		t.Fatalf("/chunked: %d %d bytes (%v)", code, len(body), hdr)
	}
	upload := make([]byte, 300_000)
	for i := range upload {
		upload[i] = byte(i * 7)
	}
	resp, err := c.Post(l.url("/upload"), "application/octet-stream", strings.NewReader(string(upload)))
	if err != nil {
		t.Fatal(err)
	}
	got, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	sum := sha256.Sum256(upload)
	if want := fmt.Sprintf("300000 %s", hex.EncodeToString(sum[:])); string(got) != want {
		t.Fatalf("upload: got %q want %q", got, want)
	}
}

func TestProxyRelaysCloseDelimitedResponse(t *testing.T) {
	ln := tcpserver.Listen(t)
	tcpserver.ServeOn(t, ln, func(c net.Conn) {
		br := bufio.NewReader(c)
		req, err := http.ReadRequest(br)
		if err != nil {
			return
		}
		if req.URL.Path == "/health" {
			io.WriteString(c, "HTTP/1.1 200 OK\r\nContent-Length: 0\r\n\r\n")
			return
		}
		io.WriteString(c, "HTTP/1.1 200 OK\r\nX-Framing: close\r\n\r\nuntil the end")
	})
	l := startLB(t, fastSettings(ln.Addr().String()))
	out := raw(t, l.Addr(), "GET / HTTP/1.1\r\nHost: x\r\n\r\n", 5*time.Second)
	if !strings.HasPrefix(out, "HTTP/1.1 200 OK\r\n") || !strings.HasSuffix(out, "\r\n\r\nuntil the end") || !strings.Contains(out, "Connection: close") {
		t.Fatalf("close-delimited relay: %q", out)
	}
}

func TestHopByHopHeadersAreDropped(t *testing.T) {
	a := startBackend(t, "a")
	l := startLB(t, fastSettings(a.addr()))
	out := raw(t, l.Addr(), "GET /headers HTTP/1.1\r\nHost: example.test:1234\r\n"+
		"Connection: close, X-Secret\r\nKeep-Alive: 5\r\nProxy-Connection: keep-alive\r\nTE: trailers\r\n"+
		"Trailer: X\r\nUpgrade: websocket\r\nX-Secret: s\r\nX-Forwarded-For: 10.0.0.1\r\nX-Keep: yes\r\n\r\n", 5*time.Second)
	_, body, ok := strings.Cut(out, "\r\n\r\n")
	if !ok {
		t.Fatalf("no response: %q", out)
	}
	for _, h := range []string{"Connection:", "Keep-Alive:", "Proxy-Connection:", "Te:", "Upgrade:", "X-Secret:"} {
		if strings.Contains(body, h) {
			t.Errorf("hop-by-hop %s forwarded:\n%s", h, body)
		}
	}
	// Trailer is end-to-end (RFC 9110 §6.6.2)
	for _, h := range []string{"Host: example.test:1234", "X-Forwarded-For: 127.0.0.1\r\n", "X-Keep: yes", "Trailer: X\r\n"} {
		if !strings.Contains(body, h) {
			t.Errorf("missing %q:\n%s", h, body)
		}
	}
}

func TestKeepAlivePipeliningAndClose(t *testing.T) {
	a := startBackend(t, "a")
	l := startLB(t, fastSettings(a.addr()))
	c := dialLB(t, l.Addr(), 10*time.Second)
	// three pipelined requests in one write, then one more on the same connection
	io.WriteString(c, "GET /a HTTP/1.1\r\nHost: x\r\n\r\nPOST /upload HTTP/1.1\r\nHost: x\r\nContent-Length: 3\r\n\r\nabcHEAD /b HTTP/1.1\r\nHost: x\r\n\r\n")
	br := bufio.NewReader(c)
	got := readResponses(t, br, 2, "GET")
	got = append(got, readResponses(t, br, 1, "HEAD")...)
	sum := sha256.Sum256([]byte("abc"))
	want := []string{"200 a", "200 3 " + hex.EncodeToString(sum[:]), "200"}
	if fmt.Sprint(got) != fmt.Sprint(want) {
		t.Fatalf("pipelined answers %q, want %q", got, want)
	}
	io.WriteString(c, "GET / HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n")
	if got := readResponses(t, br, 1, "GET"); got[0] != "200 a" {
		t.Fatalf("4th request: %q", got)
	}
	if _, err := br.ReadByte(); err != io.EOF {
		t.Fatalf("after Connection: close the LB must close, got %v", err)
	}

	out := raw(t, l.Addr(), "GET / HTTP/1.0\r\n\r\n", 5*time.Second)
	if !strings.HasPrefix(out, "HTTP/1.1 200") || !strings.HasSuffix(out, "a") {
		t.Fatalf("HTTP/1.0 request must be answered and closed: %q", out)
	}
}

func TestGatewayTimeoutForSilentBackendWhileOthersAreServed(t *testing.T) {
	a := startBackend(t, "a")
	set := fastSettings(a.addr())
	set.HeaderTimeout = 500 * time.Millisecond
	l := startLB(t, set)
	done := make(chan int, 1)
	go func() {
		resp, err := client().Get(l.url("/hang"))
		if err != nil {
			done <- 0
			return
		}
		resp.Body.Close()
		done <- resp.StatusCode
	}()
	c := client()
	for i := 0; i < 5; i++ {
		if code, _, _ := get(t, c, l.url("/")); code != 200 {
			t.Fatalf("other request during /hang: %d", code)
		}
	}
	if code := <-done; code != 504 {
		t.Fatalf("/hang: %d, want 504", code)
	}
	if code, body, _ := get(t, c, l.url("/")); code != 200 || body != "a" {
		t.Fatalf("after 504 the backend stays in rotation: %d %q", code, body)
	}
}

func TestSlowClientBlocksNobody(t *testing.T) {
	a := startBackend(t, "a")
	set := fastSettings(a.addr())
	set.ClientHeaderTimeout = 300 * time.Millisecond
	l := startLB(t, set)
	var slow []net.Conn
	for i := 0; i < 50; i++ {
		c := dialLB(t, l.Addr(), 0)
		io.WriteString(c, "GET / HTTP/1.1\r\nHo")
		slow = append(slow, c)
	}
	if code, _, _ := get(t, client(), l.url("/")); code != 200 {
		t.Fatalf("request beside 50 half-sent ones: %d", code)
	}
	_ = slow[0].SetDeadline(time.Now().Add(5 * time.Second))
	b, _ := io.ReadAll(slow[0])
	if !strings.HasPrefix(string(b), "HTTP/1.1 408") {
		t.Fatalf("half-sent request after the client header timeout: %q, want 408 and close", b)
	}
}

func TestBodyTimesOutOnSilenceNotOnTotalDuration(t *testing.T) {
	a := startBackend(t, "a")
	set := fastSettings(a.addr())
	set.HeaderTimeout = 400 * time.Millisecond // the trickle takes ~900 ms in all
	l := startLB(t, set)
	code, body, _ := get(t, client(), l.url("/trickle"))
	if code != 200 || body != string(bigBody[:600]) {
		t.Fatalf("trickled body: %d, %d bytes; want 200 and all 600", code, len(body))
	}
}

func TestHTTP10ClientGetsChunkedBodyDecoded(t *testing.T) {
	a := startBackend(t, "a")
	l := startLB(t, fastSettings(a.addr()))
	out := raw(t, l.Addr(), "GET /chunked HTTP/1.0\r\nHost: x\r\n\r\n", 5*time.Second)
	head, body, _ := strings.Cut(out, "\r\n\r\n")
	if strings.Contains(head, "Transfer-Encoding") || !strings.Contains(head, "Connection: close") || body != string(bigBody[:5000]) {
		t.Fatalf("HTTP/1.0 client and a chunked response: head %q, %d body bytes", head, len(body))
	}
}

func TestExpectContinueIsAnsweredByTheLB(t *testing.T) {
	a := startBackend(t, "a")
	l := startLB(t, fastSettings(a.addr()))
	c := dialLB(t, l.Addr(), 10*time.Second)
	io.WriteString(c, "POST /upload HTTP/1.1\r\nHost: x\r\nContent-Length: 3\r\nExpect: 100-continue\r\n\r\n")
	br := bufio.NewReader(c)
	line, err := br.ReadString('\n')
	if err != nil || line != "HTTP/1.1 100 Continue\r\n" {
		t.Fatalf("before the body: %q %v, want 100 Continue", line, err)
	}
	br.ReadString('\n')
	io.WriteString(c, "abc")
	sum := sha256.Sum256([]byte("abc"))
	if got := readResponses(t, br, 1, "POST"); got[0] != "200 3 "+hex.EncodeToString(sum[:]) {
		t.Fatalf("upload after 100 Continue: %q", got)
	}
}

func TestClientLeavingMidResponseBreaksNothing(t *testing.T) {
	a := startBackend(t, "a")
	l := startLB(t, fastSettings(a.addr()))
	for i := 0; i < 20; i++ {
		c := dialLB(t, l.Addr(), 0)
		io.WriteString(c, "GET /big HTTP/1.1\r\nHost: x\r\n\r\n")
		buf := make([]byte, 1000)
		io.ReadFull(c, buf)
		c.(*net.TCPConn).SetLinger(0)
		c.Close()
	}
	c := client()
	for i := 0; i < 5; i++ {
		if code, body, _ := get(t, c, l.url("/big")); code != 200 || len(body) != len(bigBody) {
			t.Fatalf("after clients left mid-response: %d %d", code, len(body))
		}
	}
	poll.Until(t, 5*time.Second, "no request left in flight", func() bool { return l.Backends()[0].inFlight.Load() == 0 })
}

func TestAccessLogIsOffByDefaultAndJSONWhenOn(t *testing.T) {
	a := startBackend(t, "a")
	var buf syncbuffer.Buffer
	set := fastSettings(a.addr())
	set.AccessLog = true
	l := startLB(t, set, WithAccessLogOutput(&buf))
	get(t, client(), l.url("/x?y=1"))
	poll.Until(t, 5*time.Second, "an access log line", func() bool { return strings.Contains(buf.String(), `"target":"/x?y=1"`) })
	line := strings.SplitN(buf.String(), "\n", 2)[0]
	var rec map[string]any
	if err := json.Unmarshal([]byte(line), &rec); err != nil || rec["status"] != float64(200) || rec["backend"] != a.addr() || rec["method"] != "GET" {
		t.Fatalf("access log line %q: %v %v", line, rec, err)
	}
	var quiet syncbuffer.Buffer
	l2 := startLB(t, fastSettings(a.addr()), WithAccessLogOutput(&quiet))
	get(t, client(), l2.url("/"))
	if quiet.String() != "" {
		t.Fatalf("access log must be off by default: %q", quiet.String())
	}
}

// A response whose body breaks off (the backend closes it short of its Content-Length) has its
// access log line too, with the status the client got, on either engine: the log has a line per
// request, not per request that ended well.
func TestAResponseCutShortIsInTheAccessLog(t *testing.T) {
	short := tcpserver.Serve(t, rawBackend(func(c net.Conn, _ *http.Request) bool {
		_, _ = io.WriteString(c, "HTTP/1.1 200 OK\r\nContent-Length: 100\r\n\r\nshort")
		return false
	}))
	var buf syncbuffer.Buffer
	set := fastSettings(short)
	set.AccessLog = true
	l := startLB(t, set, WithAccessLogOutput(&buf))
	out := raw(t, l.Addr(), "GET /cut HTTP/1.1\r\nHost: x\r\n\r\n", 10*time.Second)
	if !strings.HasPrefix(out, "HTTP/1.1 200 OK\r\n") || !strings.HasSuffix(out, "short") {
		t.Fatalf("the client got %q, want the head and the 5 bytes that came", out)
	}
	poll.UntilNil(t, 5*time.Second, "an access log line for GET /cut", func() error {
		for _, line := range strings.Split(buf.String(), "\n") {
			var rec map[string]any
			if json.Unmarshal([]byte(line), &rec) == nil && rec["target"] == "/cut" {
				if rec["status"] != float64(200) || rec["backend"] != short {
					return fmt.Errorf("line %q, want status 200 from backend %s", line, short)
				}
				return nil
			}
		}
		return fmt.Errorf("none in %q", buf.String())
	})
}

func TestIdleConnectionIsParkedWokenByItsNextRequestAndClosedWhenIdleTooLong(t *testing.T) {
	a := startBackend(t, "a")
	set := fastSettings(a.addr())
	set.ClientIdleTimeout = 1500 * time.Millisecond
	l := startLB(t, set)
	c := dialLB(t, l.Addr(), 0)
	br := bufio.NewReader(c)
	for i := 0; i < 2; i++ {
		io.WriteString(c, "GET / HTTP/1.1\r\nHost: x\r\n\r\n")
		if got := readResponses(t, br, 1, "GET"); got[0] != "200 a" {
			t.Fatalf("request %d: %q", i, got)
		}
		poll.Until(t, 5*time.Second, "the idle connection parked", func() bool { return parked(l.Server) == 1 })
	}
	t0 := time.Now()
	_ = c.SetReadDeadline(time.Now().Add(10 * time.Second))
	if _, err := br.ReadByte(); err != io.EOF {
		t.Fatalf("idle connection: %v, want EOF after the client idle timeout", err)
	}
	if waited := time.Since(t0); waited < time.Second {
		t.Fatalf("closed after %s, before the 1.5s idle timeout", waited)
	}
	poll.Until(t, 5*time.Second, "parking empty", func() bool { return parked(l.Server) == 0 })
}

// A fresh connection that sends nothing is closed after the client header timeout, as nginx's
// client_header_timeout and HAProxy's timeout http-request bound a first request, not after the
// client idle timeout, which bounds the wait between the requests of a keep-alive connection: a
// connection idle for longer, that carried a request, still serves the next one.
func TestAFreshConnectionThatSendsNothingGetsTheHeaderTimeout(t *testing.T) {
	a := startBackend(t, "a")
	set := fastSettings(a.addr())
	set.ClientHeaderTimeout, set.ClientIdleTimeout = 500*time.Millisecond, 30*time.Second
	l := startLB(t, set)
	used := dialLB(t, l.Addr(), 20*time.Second)
	br := bufio.NewReader(used)
	io.WriteString(used, "GET / HTTP/1.1\r\nHost: x\r\n\r\n")
	if got := readResponses(t, br, 1, "GET"); got[0] != "200 a" {
		t.Fatalf("first request: %q", got)
	}
	fresh := dialLB(t, l.Addr(), 10*time.Second) // well below the 30s idle timeout
	if n, err := fresh.Read(make([]byte, 1)); err != io.EOF {
		t.Fatalf("a fresh connection that sent nothing: read %d, %v; want EOF after the 500ms client header timeout", n, err)
	}
	io.WriteString(used, "GET / HTTP/1.1\r\nHost: x\r\n\r\n") // idle longer than the fresh one lived
	if got := readResponses(t, br, 1, "GET"); got[0] != "200 a" {
		t.Fatalf("the keep-alive connection's next request: %q", got)
	}
}

// One keep-alive connection whose requests alternate between what the event loops forward
// themselves (including a chunked response) and what they hand to the goroutine path (Expect:
// 100-continue, a 300 KB upload): every answer is right, and between requests the connection
// waits without a goroutine.
func TestConnectionMovesBetweenLoopAndGoroutinePath(t *testing.T) {
	a := startBackend(t, "a")
	l := startLB(t, fastSettings(a.addr()))
	c := dialLB(t, l.Addr(), 0)
	br := bufio.NewReader(c)
	upload := bigBody[:300_000]
	sum := sha256.Sum256(upload)
	steps := []struct {
		req, method, want string
	}{
		{"GET / HTTP/1.1\r\nHost: x\r\n\r\n", "GET", "200 a"},
		{"GET /chunked HTTP/1.1\r\nHost: x\r\n\r\n", "GET", "200 " + string(bigBody[:5000])},
		{"POST /upload HTTP/1.1\r\nHost: x\r\nContent-Length: 5\r\nExpect: 100-continue\r\n\r\nhello", "POST",
			fmt.Sprintf("200 5 %x", sha256.Sum256([]byte("hello")))},
		{"GET / HTTP/1.1\r\nHost: x\r\n\r\n", "GET", "200 a"},
		{"POST /upload HTTP/1.1\r\nHost: x\r\nContent-Length: 300000\r\n\r\n" + string(upload), "POST",
			fmt.Sprintf("200 300000 %x", sum)},
		{"HEAD / HTTP/1.1\r\nHost: x\r\n\r\n", "HEAD", "200"},
		{"GET / HTTP/1.1\r\nHost: x\r\n\r\n", "GET", "200 a"},
	}
	for i, st := range steps {
		if _, err := io.WriteString(c, st.req); err != nil {
			t.Fatal(err)
		}
		if got := readResponses(t, br, 1, st.method); got[0] != st.want {
			t.Fatalf("step %d: %.60q, want %.60q", i, got[0], st.want)
		}
		poll.Until(t, 5*time.Second, "the connection waiting without a goroutine", func() bool {
			l.mu.Lock()
			onGoroutine := len(l.conns)
			l.mu.Unlock()
			// the goroutines engine counts parked connections among its own
			return parked(l.Server) == 1 && (l.loops == nil || onGoroutine == 0)
		})
	}
	if l.loops != nil && l.loops.handoffs.Load() != 2 {
		t.Fatalf("%d hand-offs to the goroutine path, want 2 (Expect, the big upload)", l.loops.handoffs.Load())
	}
	if got := a.hits.Load(); got != 4 {
		t.Fatalf("backend saw %d requests to / (GET and HEAD), want 4", got)
	}
}

// Many keep-alive clients at once, each sending a random mix of what the event loops forward
// themselves (small GET, HEAD, a 1 MiB Content-Length body, a small POST) and what they hand to
// the goroutine path (a chunked response, a 300 KB upload): every answer is intact, on both
// engines, under the race detector.
func TestMixedTrafficOnManyConnections(t *testing.T) {
	a, b := startBackend(t, "a"), startBackend(t, "b")
	// one active check only: on a loaded CI machine under the race detector the 80 ms health
	// timeout of fastSettings can run out twice and take both backends out (503)
	l := startLB(t, fastSettings(a.addr(), b.addr()), slowChecks())
	const clients, each = 12, 30
	small, large := bigBody[:3000], bigBody[:300_000]
	sum := func(p []byte) string { s := sha256.Sum256(p); return fmt.Sprintf("%x", s) }
	errs := make(chan error, clients)
	for i := 0; i < clients; i++ {
		go func(seed int) {
			c := &http.Client{Timeout: 20 * time.Second, Transport: &http.Transport{MaxIdleConnsPerHost: 1, DisableCompression: true}}
			defer c.CloseIdleConnections()
			for k := 0; k < each; k++ {
				var req *http.Request
				var check func(status int, body []byte) bool
				switch (seed*7 + k) % 6 {
				case 0:
					req, _ = http.NewRequest("GET", l.url("/"), nil)
					check = func(st int, body []byte) bool { return st == 200 && (string(body) == "a" || string(body) == "b") }
				case 1:
					req, _ = http.NewRequest("HEAD", l.url("/"), nil)
					check = func(st int, body []byte) bool { return st == 200 && len(body) == 0 }
				case 2:
					req, _ = http.NewRequest("GET", l.url("/big"), nil)
					check = func(st int, body []byte) bool { return st == 200 && sum(body) == sum(bigBody) }
				case 3:
					req, _ = http.NewRequest("POST", l.url("/upload"), bytes.NewReader(small))
					check = func(st int, body []byte) bool { return st == 200 && string(body) == "3000 "+sum(small) }
				case 4:
					req, _ = http.NewRequest("GET", l.url("/chunked"), nil)
					check = func(st int, body []byte) bool { return st == 200 && string(body) == string(bigBody[:5000]) }
				case 5:
					req, _ = http.NewRequest("POST", l.url("/upload"), bytes.NewReader(large))
					check = func(st int, body []byte) bool { return st == 200 && string(body) == "300000 "+sum(large) }
				}
				resp, err := c.Do(req)
				if err != nil {
					errs <- fmt.Errorf("client %d request %d %s %s: %w", seed, k, req.Method, req.URL.Path, err)
					return
				}
				body, err := io.ReadAll(resp.Body)
				resp.Body.Close()
				if err != nil || !check(resp.StatusCode, body) {
					errs <- fmt.Errorf("client %d request %d %s %s: status %d, %d body bytes %.40q, err %v",
						seed, k, req.Method, req.URL.Path, resp.StatusCode, len(body), body, err)
					return
				}
			}
			errs <- nil
		}(i)
	}
	for i := 0; i < clients; i++ {
		if err := <-errs; err != nil {
			t.Fatal(err)
		}
	}
	poll.Until(t, 5*time.Second, "no request left in flight", func() bool {
		return l.Backends()[0].Status().InFlight == 0 && l.Backends()[1].Status().InFlight == 0
	})
}

// dialLB opens a client connection to the LB at addr, closed when the test ends; when within is
// not zero, its reads and writes fail after that long.
func dialLB(t *testing.T, addr string, within time.Duration) net.Conn {
	t.Helper()
	c, err := net.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	if within > 0 {
		_ = c.SetDeadline(time.Now().Add(within))
	}
	return c
}

// scriptedBackend answers every request on a connection with the same raw bytes.
func scriptedBackend(t *testing.T, answer string) string {
	t.Helper()
	return tcpserver.Serve(t, func(c net.Conn) {
		br := bufio.NewReader(c)
		for {
			req, err := http.ReadRequest(br)
			if err != nil {
				return
			}
			_, _ = io.Copy(io.Discard, req.Body)
			if req.URL.Path == "/health" {
				_, _ = io.WriteString(c, "HTTP/1.1 200 OK\r\nContent-Length: 0\r\n\r\n")
				continue
			}
			if _, err := io.WriteString(c, answer); err != nil {
				return
			}
		}
	})
}

// A chunked response goes to an HTTP/1.1 client byte for byte: chunk extensions and trailers
// included, and the next pipelined request is answered after it; a response whose chunked
// framing breaks closes the client connection instead of passing on a body that never ends.
func TestChunkedResponseIsRelayedAsItCame(t *testing.T) {
	body := "5;ext=1\r\nhello\r\n6\r\n world\r\n0\r\nX-Trailer: yes\r\n\r\n"
	good := scriptedBackend(t, "HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n"+body)
	l := startLB(t, fastSettings(good))
	c := dialLB(t, l.Addr(), 10*time.Second)
	if _, err := io.WriteString(c, "GET /a HTTP/1.1\r\nHost: x\r\n\r\nGET /b HTTP/1.1\r\nHost: x\r\n\r\n"); err != nil {
		t.Fatal(err)
	}
	want := "HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n" + body
	got := make([]byte, 2*len(want))
	if _, err := io.ReadFull(c, got); err != nil {
		t.Fatalf("reading two chunked responses: %v (got %q)", err, got)
	}
	if string(got) != want+want {
		t.Fatalf("relayed:\n%q\nwant twice:\n%q\n%+v", got, want, l.Backends()[0].Status())
	}

	for _, tc := range []struct{ body, never string }{
		{"zz\r\nhello\r\n0\r\n\r\n", "hello"},
		{"5 zz\r\nhello\r\n0\r\n\r\n", "zz"},                              // after the size only whitespace, then ';' or CRLF
		{"5\r\nhello\r\n0\r\nGET /smuggled HTTP/1.1\r\n\r\n", "smuggled"}, // a trailer line is a header field
		{"5\r\nhello\r\n0\r\nX: a\r\n folded\r\n\r\n", "folded"},
	} {
		broken := scriptedBackend(t, "HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n"+tc.body)
		lb := startLB(t, fastSettings(broken))
		t0 := time.Now()
		out := raw(t, lb.Addr(), "GET / HTTP/1.1\r\nHost: x\r\n\r\n", 10*time.Second)
		if waited := time.Since(t0); waited > 8*time.Second {
			t.Errorf("%q: the connection stayed open %s after a broken chunked framing", tc.body, waited)
			continue
		}
		// the loop has sent the head by then, the goroutine path may still hold it in its
		// buffer: either way not the broken line, and the connection is closed (raw returns at EOF)
		if out != "" && !strings.HasPrefix(out, "HTTP/1.1 200 OK\r\n") || strings.Contains(out, tc.never) {
			t.Errorf("broken chunked framing %q: %q, want at most the head and the body before it, then the connection closed", tc.body, out)
		}
	}
}

// linkLocalListener listens on an IPv6 link-local address of this host and returns it with its
// address, zone (the interface) included, or skips the test when the host has none.
func linkLocalListener(t *testing.T) (net.Listener, string) {
	t.Helper()
	ifs, _ := net.Interfaces()
	for _, ifc := range ifs {
		addrs, _ := ifc.Addrs()
		for _, a := range addrs {
			ipn, ok := a.(*net.IPNet)
			if !ok || ipn.IP.To4() != nil || !ipn.IP.IsLinkLocalUnicast() {
				continue
			}
			host := ipn.IP.String() + "%" + ifc.Name
			ln, err := net.Listen("tcp", net.JoinHostPort(host, "0"))
			if err != nil {
				continue
			}
			t.Cleanup(func() { ln.Close() })
			return ln, net.JoinHostPort(host, strconv.Itoa(ln.Addr().(*net.TCPAddr).Port))
		}
	}
	t.Skip("no IPv6 link-local address to listen on")
	return nil, ""
}

// A backend given by a link-local IPv6 address with its zone ([fe80::1%eth0]:8080), which only
// that interface reaches, is served on either engine: the event loops connect through its zone
// as net.Dial does, rather than fail the connect and eject a healthy backend.
func TestABackendAtALinkLocalAddressIsServed(t *testing.T) {
	ln, addr := linkLocalListener(t)
	srv := httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { fmt.Fprint(w, "zoned") }))
	srv.Listener = ln
	srv.Start()
	t.Cleanup(srv.Close)
	l := startLB(t, fastSettings(addr))
	c := client()
	for i := range 3 {
		if code, body, _ := get(t, c, l.url("/")); code != 200 || body != "zoned" {
			t.Fatalf("GET %d through backend %s: %d %q, want 200 \"zoned\"", i, addr, code, body)
		}
	}
	if b := l.Backends()[0]; !b.InRotation() {
		t.Errorf("backend %s left rotation: %+v", addr, b.Status())
	}
}
