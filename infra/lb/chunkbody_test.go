package lb

import (
	"bufio"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"io"
	"net"
	"net/http"
	"strings"
	"sync/atomic"
	"testing"
	"time"
)

// chunkedBody is data in chunked coding, in chunks of the sizes given (cycled), with an
// extension on the first chunk and a trailer.
func chunkedBody(data []byte, sizes ...int) string {
	var b strings.Builder
	for i := 0; len(data) > 0; i++ {
		n := min(sizes[i%len(sizes)], len(data))
		fmt.Fprintf(&b, "%x", n)
		if i == 0 {
			b.WriteString(";name=value")
		}
		b.WriteString("\r\n")
		b.Write(data[:n])
		b.WriteString("\r\n")
		data = data[n:]
	}
	b.WriteString("0\r\nX-Trailer: t\r\n\r\n")
	return b.String()
}

func uploadDigest(data []byte) string {
	h := sha256.Sum256(data)
	return fmt.Sprintf("%d %s", len(data), hex.EncodeToString(h[:]))
}

func TestChunkedUploadIsRelayedWhole(t *testing.T) {
	a := startBackend(t, "a")
	l := startLB(t, fastSettings(a.addr()))
	data := bigBody[:300<<10]
	// then a pipelined request on the same connection: it must be found after the body's end
	out := raw(t, l.Addr(), "POST /upload HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\n\r\n"+chunkedBody(data, 1, 4000, 17, 70000)+
		"GET / HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n", 10*time.Second)
	br := bufio.NewReader(strings.NewReader(out))
	got := readResponses(t, br, 2, "POST")
	if got[0] != "200 "+uploadDigest(data) || got[1] != "200 a" {
		t.Fatalf("chunked upload then a pipelined GET: %q", got)
	}
}

func TestChunkedUploadFromNetHTTPWithExpectContinue(t *testing.T) {
	a := startBackend(t, "a")
	l := startLB(t, fastSettings(a.addr()))
	data := bigBody[:200<<10]
	c := &http.Client{Timeout: 15 * time.Second, Transport: &http.Transport{ExpectContinueTimeout: 10 * time.Second}}
	for _, expect := range []bool{false, true} {
		req, _ := http.NewRequest("POST", l.url("/upload"), io.MultiReader(strings.NewReader(string(data)))) // unknown length: chunked
		if expect {
			req.Header.Set("Expect", "100-continue")
		}
		resp, err := c.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		body, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if resp.StatusCode != 200 || string(body) != uploadDigest(data) {
			t.Fatalf("chunked upload (expect %v): %d %q", expect, resp.StatusCode, body)
		}
	}
}

func TestBrokenChunkedFramingIs400AndNeverForwarded(t *testing.T) {
	b := startBackend(t, "b")
	l := startLB(t, fastSettings(b.addr()))
	for _, tc := range []struct{ name, body string }{
		{"not hex", "zz\r\nhello\r\n0\r\n\r\n"},
		{"size without CRLF", "5\nhello\r\n0\r\n\r\n"},
		{"data longer than its size", "3\r\nhello\r\n0\r\n\r\n"},
		{"bare CR in an extension", "5;a\rb\r\nhello\r\n0\r\n\r\n"},
		{"quoted extension value across the line's end", "5;a=\"x\r\n\"\r\nhello\r\n0\r\n\r\n"},
		{"extension name that is no token", "5;/ HTTP/1.1\r\nhello\r\n0\r\n\r\n"},
		{"control character in a trailer", "5\r\nhello\r\n0\r\nX: a\x01b\r\n\r\n"},
		{"size too large", "1000000000000000\r\nhello\r\n"},
		{"junk after the size", "3 x\r\nabc\r\n0\r\n\r\n"},
		{"trailer line without a colon", "5\r\nhello\r\n0\r\nGET /smuggled HTTP/1.1\r\n\r\n"},
		{"obs-fold in a trailer", "5\r\nhello\r\n0\r\nX: a\r\n b\r\n\r\n"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			before := b.hits.Load() + b.posts.Load()
			out := raw(t, l.Addr(), "POST /orders HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\n\r\n"+tc.body+
				"GET / HTTP/1.1\r\nHost: x\r\n\r\n", 5*time.Second)
			if !strings.HasPrefix(out, "HTTP/1.1 400 ") || strings.Count(out, "HTTP/1.1") != 1 {
				t.Fatalf("broken chunked framing: %q, want one 400 and the connection closed", out)
			}
			if n := b.hits.Load() + b.posts.Load() - before; n != 0 {
				t.Fatalf("the backend saw %d requests of a refused connection", n)
			}
		})
	}
	// broken framing that arrives after the body began to stream still ends in 400
	c, err := net.Dial("tcp", l.Addr())
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	_ = c.SetDeadline(time.Now().Add(10 * time.Second))
	io.WriteString(c, "POST /upload HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\n\r\n5\r\nhello\r\n")
	io.WriteString(c, "5x\r\nworld\r\n0\r\n\r\n")
	resp, err := http.ReadResponse(bufio.NewReader(c), &http.Request{Method: "POST"})
	if err != nil || resp.StatusCode != 400 {
		t.Fatalf("framing broken mid-stream: %v %v, want 400", resp, err)
	}
}

func TestChunkedPOSTIsNeverExecutedTwice(t *testing.T) {
	var executed atomic.Int64
	l := startLB(t, fastSettings(orderTaker(t, &executed), orderTaker(t, &executed)), slowChecks())
	resp, err := client().Post(l.url("/orders"), "application/json", io.MultiReader(strings.NewReader(`{"key":"k1"}`)))
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != 502 {
		t.Fatalf("chunked POST whose backend broke: %d, want 502", resp.StatusCode)
	}
	if n := executed.Load(); n != 1 {
		t.Fatalf("chunked POST executed %d times, want exactly 1", n)
	}
}

func TestChunkedPOSTToNoBackendIs503AndTheConnectionGoesOn(t *testing.T) {
	l := startLB(t, fastSettings(deadAddr(t)), slowChecks())
	out := raw(t, l.Addr(), "POST /orders HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\n\r\n5\r\nhello\r\n0\r\n\r\n"+
		"GET /_lb/health HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n", 5*time.Second)
	got := readResponses(t, bufio.NewReader(strings.NewReader(out)), 2, "POST")
	if !strings.HasPrefix(got[0], "503 ") || got[1] != "200 ok" {
		t.Fatalf("chunked POST to an unreachable backend, then the next request: %q", got)
	}
}
