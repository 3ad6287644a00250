package acceptance

import (
	"bytes"
	"crypto/rand"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"net/http"
	"strconv"
	"strings"
	"testing"
	"time"
)

// The lab's proxy checks: GET, keep-alive, Connection: close, HTTP/1.0, pipelining, a request
// arriving in pieces, 1 MiB responses in every framing, a 300 KB upload, slow bodies.

func TestProxyConnectionHandling(t *testing.T) {
	t.Parallel()
	l := startLB(t, []*backendProc{startBackend(t, "a")}, calm...)

	t.Run("three requests on one keep-alive connection", func(t *testing.T) {
		c := dialRawConn(t, l.addr)
		for i := 0; i < 3; i++ {
			c.send(request("GET / HTTP/1.1", []string{"Host: lb.test"}, ""))
			resp, body := c.read("GET")
			if resp.StatusCode != 200 || string(body) != "a\n" {
				t.Fatalf("request %d: status %d body %q, want 200 %q", i+1, resp.StatusCode, body, "a\n")
			}
		}
		c.requireOpen("after three keep-alive requests")
	})
	t.Run("Connection: close closes after the response", func(t *testing.T) {
		c := dialRawConn(t, l.addr)
		c.send(request("GET / HTTP/1.1", []string{"Host: lb.test", "Connection: close"}, ""))
		if resp, body := c.read("GET"); resp.StatusCode != 200 || string(body) != "a\n" {
			t.Fatalf("status %d body %q, want 200 %q", resp.StatusCode, body, "a\n")
		}
		c.requireClosed("client sent Connection: close")
	})
	for name, headers := range map[string][]string{
		"with Host": {"Host: lb.test"},
		// HTTP/1.0 does not require Host (RFC 9112 §3.2 demands it of HTTP/1.1 only).
		"without Host": nil,
	} {
		t.Run("HTTP/1.0 "+name+" closes after the response", func(t *testing.T) {
			c := dialRawConn(t, l.addr)
			c.send(request("GET / HTTP/1.0", headers, ""))
			if resp, body := c.read("GET"); resp.StatusCode != 200 || string(body) != "a\n" {
				t.Fatalf("status %d body %q, want 200 %q", resp.StatusCode, body, "a\n")
			}
			c.requireClosed("client spoke HTTP/1.0")
		})
	}
	t.Run("pipelined requests are answered in order", func(t *testing.T) {
		c := dialRawConn(t, l.addr)
		// The first is the slowest: answering in completion order would put it last. The POST in
		// the middle has its body in the same segment as the requests around it.
		c.send(request("GET /slow?ms=400&id=first HTTP/1.1", []string{"Host: lb.test"}, "") +
			request("POST /upload HTTP/1.1", []string{"Host: lb.test", "Content-Length: 5"}, "hello") +
			request("GET /slow?ms=0&id=third HTTP/1.1", []string{"Host: lb.test"}, ""))
		if _, body := c.read("GET"); string(body) != "first\n" {
			t.Fatalf("first response body %q, want %q", body, "first\n")
		}
		_, body := c.read("POST")
		sum := sha256.Sum256([]byte("hello"))
		if want := `"sha256":"` + hex.EncodeToString(sum[:]) + `"`; !strings.Contains(string(body), want) {
			t.Fatalf("second response %q, want the upload of %q (%s)", body, "hello", want)
		}
		if _, body := c.read("GET"); string(body) != "third\n" {
			t.Fatalf("third response body %q, want %q", body, "third\n")
		}
	})
	t.Run("a request arriving in pieces", func(t *testing.T) {
		c := dialRawConn(t, l.addr)
		req := request("POST /upload HTTP/1.1", []string{"Host: lb.test", "Content-Length: 11"}, "hello world")
		for i := 0; i < len(req); i += 7 {
			c.send(req[i:min(i+7, len(req))])
			time.Sleep(5 * time.Millisecond) // let each piece arrive as its own segment
		}
		resp, body := c.read("POST")
		if resp.StatusCode != 200 || !strings.Contains(string(body), `"length":11`) {
			t.Fatalf("status %d body %q, want 200 with length 11", resp.StatusCode, body)
		}
	})
	l.requireAlive(t)
}

func TestProxyLargeBodiesArriveIntact(t *testing.T) {
	t.Parallel()
	l := startLB(t, []*backendProc{startBackend(t, "a")}, calm...)
	for _, framing := range []string{"length", "chunked", "close"} {
		t.Run("1 MiB response framed by "+framing, func(t *testing.T) {
			resp, body := l.mustGet(t, "/big?framing="+framing)
			sum := sha256.Sum256(body)
			if resp.StatusCode != 200 || len(body) != 1<<20 || hex.EncodeToString(sum[:]) != resp.Header.Get("X-Body-Sha256") {
				t.Fatalf("status %d, %d bytes, sha256 %x; want 200, %d bytes, sha256 %s",
					resp.StatusCode, len(body), sum, 1<<20, resp.Header.Get("X-Body-Sha256"))
			}
		})
	}
	t.Run("300 KB upload", func(t *testing.T) {
		payload := make([]byte, 300_000)
		_, _ = rand.Read(payload)
		resp, err := l.client.Post("http://"+l.addr+"/upload", "application/octet-stream", bytes.NewReader(payload))
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		var got struct {
			Length int64
			Sha256 string
		}
		if err := json.NewDecoder(resp.Body).Decode(&got); err != nil {
			t.Fatalf("status %d: %v", resp.StatusCode, err)
		}
		sum := sha256.Sum256(payload)
		if got.Length != int64(len(payload)) || got.Sha256 != hex.EncodeToString(sum[:]) {
			t.Fatalf("backend saw %d bytes sha256 %s; sent %d bytes sha256 %x", got.Length, got.Sha256, len(payload), sum)
		}
	})
	t.Run("a body trickling for longer than the header timeout is not a 504", func(t *testing.T) {
		// 16 chunks 250 ms apart: 3.75 s in total, but never more than 250 ms of silence.
		start := time.Now()
		resp, body := l.mustGet(t, "/slowbody?chunks=16&every=250ms&size=1024")
		if resp.StatusCode != 200 || len(body) != 16*1024 {
			t.Fatalf("status %d, %d bytes after %s; want 200 and %d bytes", resp.StatusCode, len(body), time.Since(start), 16*1024)
		}
		t.Logf("slow body of %d bytes relayed in %s", len(body), time.Since(start).Round(time.Millisecond))
	})
	l.requireAlive(t)
}

func TestProxyHeaders(t *testing.T) {
	t.Parallel()
	l := startLB(t, []*backendProc{startBackend(t, "a")}, calm...)
	type seen struct {
		Host    string
		Headers http.Header
	}
	echo := func(t *testing.T, headers ...string) seen {
		t.Helper()
		c := dialRawConn(t, l.addr)
		c.send(request("GET /headers HTTP/1.1", headers, ""))
		resp, body := c.read("GET")
		var s seen
		if err := json.Unmarshal(body, &s); resp.StatusCode != 200 || err != nil {
			t.Fatalf("status %d body %q (%v)", resp.StatusCode, body, err)
		}
		return s
	}

	t.Run("hop-by-hop stripped, X-Forwarded-For replaced, Host preserved", func(t *testing.T) {
		s := echo(t,
			"Host: shop.example.test:8443",
			"Connection: keep-alive, X-Custom-Hop",
			"Keep-Alive: timeout=5",
			"Proxy-Connection: keep-alive",
			"TE: trailers",
			"Trailer: X-Checksum",
			"Upgrade: websocket",
			"X-Custom-Hop: secret",
			"X-Forwarded-For: 203.0.113.7",
			"X-End-To-End: kept")
		if s.Host != "shop.example.test:8443" {
			t.Errorf("backend saw Host %q, want the client's %q", s.Host, "shop.example.test:8443")
		}
		for _, h := range []string{"Keep-Alive", "Proxy-Connection", "Te", "Upgrade", "X-Custom-Hop"} {
			if v, ok := s.Headers[h]; ok {
				t.Errorf("hop-by-hop header %s reached the backend: %q", h, v)
			}
		}
		if got := s.Headers.Get("Trailer"); got != "X-Checksum" { // end-to-end, RFC 9110 §6.6.2
			t.Errorf("end-to-end header Trailer %q, want %q", got, "X-Checksum")
		}
		if c := strings.ToLower(strings.Join(s.Headers["Connection"], ",")); strings.Contains(c, "x-custom-hop") {
			t.Errorf("the client's Connection header reached the backend: %q", c)
		}
		if got, want := strings.Join(s.Headers["X-Forwarded-For"], ", "), "127.0.0.1"; got != want {
			t.Errorf("X-Forwarded-For %q, want %q (an untrusted client's own header replaced by its address)", got, want)
		}
		if got := s.Headers.Get("X-End-To-End"); got != "kept" {
			t.Errorf("end-to-end header X-End-To-End %q, want %q", got, "kept")
		}
	})
	t.Run("X-Forwarded-For added when absent", func(t *testing.T) {
		s := echo(t, "Host: lb.test")
		if got := strings.Join(s.Headers["X-Forwarded-For"], ", "); got != "127.0.0.1" {
			t.Errorf("X-Forwarded-For %q, want %q", got, "127.0.0.1")
		}
	})
	t.Run("hop-by-hop response headers are not relayed", func(t *testing.T) {
		resp, _ := l.mustGet(t, "/headers?hop=1")
		for _, h := range []string{"Proxy-Connection", "Upgrade", "X-Resp-Hop"} {
			if v, ok := resp.Header[h]; ok {
				t.Errorf("backend's hop-by-hop response header %s reached the client: %q", h, v)
			}
		}
		if v := resp.Header.Get("Keep-Alive"); v == "timeout=99" {
			t.Errorf("backend's Keep-Alive response header reached the client: %q", v)
		}
	})
}

// requestLine is "GET /path HTTP/1.1" with Host, for the many raw single requests.
func requestLine(method, path string, extra ...string) string {
	return request(method+" "+path+" HTTP/1.1", append([]string{"Host: lb.test"}, extra...), "")
}

// contentLength is a Content-Length header line.
func contentLength(n int) string { return "Content-Length: " + strconv.Itoa(n) }
