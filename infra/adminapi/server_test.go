package adminapi

import (
	"bufio"
	"errors"
	"io"
	"net"
	"net/http"
	"strings"
	"syscall"
	"testing"
	"time"
)

// serveLimited runs NewServer with l on a loopback port; its handler reads the whole body.
func serveLimited(t *testing.T, l Limits) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	srv := NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if _, err := io.ReadAll(r.Body); err != nil {
			if tooLarge := (*http.MaxBytesError)(nil); errors.As(err, &tooLarge) {
				bodyTooLarge(w, tooLarge.Limit)
				return
			}
			http.Error(w, err.Error(), http.StatusBadRequest)
			return
		}
		_, _ = io.WriteString(w, "ok\n")
	}), l, nil)
	go func() { _ = srv.Serve(ln) }()
	t.Cleanup(func() { _ = srv.Close() })
	return ln.Addr().String()
}

// closedWithin reads c until the server closes it, and fails unless that happens within d. A
// reset counts as closed: a server that closes with bytes of ours unread sends RST, not FIN.
func closedWithin(t *testing.T, c net.Conn, d time.Duration, what string) {
	t.Helper()
	start := time.Now()
	_ = c.SetReadDeadline(start.Add(d + 2*time.Second))
	_, err := io.Copy(io.Discard, c)
	if errors.Is(err, syscall.ECONNRESET) {
		err = nil
	}
	if took := time.Since(start); err != nil || took > d {
		t.Fatalf("%s: the server kept the connection %s (read: %v), want it closed within %s", what, took, err, d)
	}
}

// A slowloris client, one that sends its head or body a byte at a time or keeps a connection
// idle, is closed once the read or idle timeout passes.
func TestControlServerClosesSlowAndIdleClients(t *testing.T) {
	l := Limits{ReadHeader: 300 * time.Millisecond, Read: 600 * time.Millisecond, Idle: 600 * time.Millisecond, MaxBody: 1 << 10}
	addr := serveLimited(t, l)

	t.Run("slow head", func(t *testing.T) {
		c, err := net.Dial("tcp", addr)
		if err != nil {
			t.Fatal(err)
		}
		defer c.Close()
		_, _ = io.WriteString(c, "POST / HTTP/1.1\r\nHost: x\r\n")
		closedWithin(t, c, time.Second, "a head never finished")
	})
	t.Run("slow body", func(t *testing.T) {
		c, err := net.Dial("tcp", addr)
		if err != nil {
			t.Fatal(err)
		}
		defer c.Close()
		_, _ = io.WriteString(c, "POST / HTTP/1.1\r\nHost: x\r\nContent-Length: 100\r\n\r\n")
		stop := make(chan struct{})
		defer close(stop)
		go func() { // a byte every 100ms: the body would take 10s
			for range 100 {
				select {
				case <-stop:
					return
				case <-time.After(100 * time.Millisecond):
				}
				if _, err := c.Write([]byte("x")); err != nil {
					return
				}
			}
		}()
		closedWithin(t, c, 1500*time.Millisecond, "a body trickled a byte at a time")
	})
	t.Run("idle keep-alive", func(t *testing.T) {
		c, err := net.Dial("tcp", addr)
		if err != nil {
			t.Fatal(err)
		}
		defer c.Close()
		_, _ = io.WriteString(c, "GET / HTTP/1.1\r\nHost: x\r\n\r\n")
		br := bufio.NewReader(c)
		resp, err := http.ReadResponse(br, nil)
		if err != nil {
			t.Fatal(err)
		}
		_, _ = io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
		closedWithin(t, c, 1500*time.Millisecond, "a kept-alive connection left idle")
	})
}

// A body above MaxBody is refused 413, announced by Content-Length or sent chunked.
func TestControlServerRefusesOversizedBodies(t *testing.T) {
	addr := serveLimited(t, Limits{ReadHeader: time.Second, Read: 5 * time.Second, Idle: time.Second, MaxBody: 1 << 10})
	big := strings.Repeat("x", 4<<10)
	for _, chunked := range []bool{false, true} {
		req, err := http.NewRequest(http.MethodPost, "http://"+addr+"/", strings.NewReader(big))
		if err != nil {
			t.Fatal(err)
		}
		if chunked {
			req.ContentLength = -1
			req.Body = io.NopCloser(strings.NewReader(big))
		}
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatalf("chunked %v: %v", chunked, err)
		}
		resp.Body.Close()
		if resp.StatusCode != http.StatusRequestEntityTooLarge {
			t.Errorf("chunked %v: a 4 KiB body under a 1 KiB limit answered %d, want 413", chunked, resp.StatusCode)
		}
	}
	resp, err := http.Post("http://"+addr+"/", "text/plain", strings.NewReader("small"))
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		t.Errorf("a small body answered %d, want 200", resp.StatusCode)
	}
}
