package lb

import (
	"bufio"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"strings"
	"sync/atomic"
	"testing"
	"time"
)

// testBackend is a real HTTP server on 127.0.0.1:0 with the lab backend's endpoints.
type testBackend struct {
	name   string
	srv    *httptest.Server
	health atomic.Int32 // status /health answers
	hits   atomic.Int64 // requests to / and /orders
	posts  atomic.Int64 // POST /orders executed
}

func (b *testBackend) addr() string { return b.srv.Listener.Addr().String() }

func startBackend(t *testing.T, name string) *testBackend {
	t.Helper()
	b := &testBackend{name: name}
	b.health.Store(200)
	mux := http.NewServeMux()
	mux.HandleFunc("/", func(w http.ResponseWriter, r *http.Request) {
		b.hits.Add(1)
		w.Header().Set("X-Backend", name)
		fmt.Fprint(w, name)
	})
	mux.HandleFunc("/health", func(w http.ResponseWriter, r *http.Request) {
		w.WriteHeader(int(b.health.Load()))
	})
	mux.HandleFunc("/hang", func(w http.ResponseWriter, r *http.Request) {
		select {
		case <-r.Context().Done():
		case <-time.After(30 * time.Second):
		}
	})
	mux.HandleFunc("/slow", func(w http.ResponseWriter, r *http.Request) {
		time.Sleep(700 * time.Millisecond)
		fmt.Fprint(w, "slow")
	})
	mux.HandleFunc("/trickle", func(w http.ResponseWriter, r *http.Request) {
		for i := 0; i < 6; i++ {
			_, _ = w.Write(bigBody[i*100 : (i+1)*100])
			w.(http.Flusher).Flush()
			time.Sleep(150 * time.Millisecond)
		}
	})
	mux.HandleFunc("/big", func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Length", fmt.Sprint(len(bigBody)))
		_, _ = w.Write(bigBody)
	})
	mux.HandleFunc("/chunked", func(w http.ResponseWriter, r *http.Request) {
		for i := 0; i < 5; i++ {
			_, _ = w.Write(bigBody[i*1000 : (i+1)*1000])
			w.(http.Flusher).Flush()
		}
	})
	mux.HandleFunc("/headers", func(w http.ResponseWriter, r *http.Request) {
		fmt.Fprintf(w, "Host: %s\n", r.Host)
		_ = r.Header.Write(w)
	})
	mux.HandleFunc("/upload", func(w http.ResponseWriter, r *http.Request) {
		h := sha256.New()
		n, _ := io.Copy(h, r.Body)
		fmt.Fprintf(w, "%d %s", n, hex.EncodeToString(h.Sum(nil)))
	})
	mux.HandleFunc("/ws", wsEcho(name))
	mux.HandleFunc("/orders", func(w http.ResponseWriter, r *http.Request) {
		b.posts.Add(1)
		w.WriteHeader(201)
	})
	b.srv = httptest.NewServer(mux)
	t.Cleanup(b.srv.Close)
	return b
}

var bigBody = func() []byte {
	b := make([]byte, 1<<20)
	for i := range b {
		b[i] = byte('a' + i%26)
	}
	return b
}()

// testSlowPathOnly says the tests run every connection through the goroutine path:
// ZERO502_TEST_LB_ENGINE=goroutines (TestMain runs the tests once with the event loops, then
// again that way).
func testSlowPathOnly() bool { return os.Getenv("ZERO502_TEST_LB_ENGINE") == "goroutines" }

// parked is how many idle client connections wait without a read buffer: in an event loop
// (without a goroutine either), or, on the goroutines engine, resting in the peek.
func parked(s *Server) int {
	if s.loops != nil {
		return int(s.loops.clients.Load())
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	n := 0
	for cc := range s.conns {
		if cc.resting.Load() {
			n++
		}
	}
	return n
}

// fastSettings are quick numbers for tests.
func fastSettings(backends ...string) Settings {
	s := LabSettings("127.0.0.1:0", backends)
	s.slowPathOnly = testSlowPathOnly()
	// the lab's health numbers (500 ms, 400 ms): a configured backend is placed by its first
	// check alone, which must not time out on a loaded test machine
	s.Admin = "127.0.0.1:0"
	return s
}

type testLB struct {
	*Server
	stop func()
}

func startLB(t *testing.T, set Settings, opts ...Option) *testLB {
	t.Helper()
	opts = append([]Option{WithLogger(slog.New(slog.NewTextHandler(io.Discard, nil)))}, opts...)
	s, err := New(set, opts...)
	if err != nil {
		t.Fatal(err)
	}
	if err := s.Listen(); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- s.Run(ctx) }()
	stopped := false
	stop := func() {
		if stopped {
			return
		}
		stopped = true
		cancel()
		select {
		case err := <-done:
			if err != nil {
				t.Errorf("Run: %v", err)
			}
		case <-time.After(20 * time.Second):
			t.Errorf("Run did not return after stop")
		}
	}
	t.Cleanup(stop)
	return &testLB{Server: s, stop: stop}
}

func (l *testLB) url(path string) string { return "http://" + l.Addr() + path }

// client is an HTTP client with keep-alive that does not retry on its own.
func client() *http.Client {
	return &http.Client{Timeout: 15 * time.Second, Transport: &http.Transport{MaxIdleConnsPerHost: 64, DisableCompression: true}}
}

func get(t *testing.T, c *http.Client, url string) (int, string, http.Header) {
	t.Helper()
	resp, err := c.Get(url)
	if err != nil {
		t.Fatalf("GET %s: %v", url, err)
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatalf("GET %s: body: %v", url, err)
	}
	return resp.StatusCode, string(body), resp.Header
}

// raw sends bytes on a new connection and returns everything the LB answers until it closes
// (or the timeout).
func raw(t *testing.T, addr, payload string, timeout time.Duration) string {
	t.Helper()
	c, err := net.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	_ = c.SetDeadline(time.Now().Add(timeout))
	if _, err := io.WriteString(c, payload); err != nil {
		t.Fatal(err)
	}
	b, _ := io.ReadAll(c)
	return string(b)
}

// readResponses reads n responses from br with net/http's parser.
func readResponses(t *testing.T, br *bufio.Reader, n int, method string) []string {
	t.Helper()
	var out []string
	for i := 0; i < n; i++ {
		resp, err := http.ReadResponse(br, &http.Request{Method: method})
		if err != nil {
			t.Fatalf("response %d: %v", i, err)
		}
		body, err := io.ReadAll(resp.Body)
		resp.Body.Close()
		if err != nil {
			t.Fatalf("response %d body: %v", i, err)
		}
		out = append(out, strings.TrimSpace(fmt.Sprintf("%d %s", resp.StatusCode, body)))
	}
	return out
}
