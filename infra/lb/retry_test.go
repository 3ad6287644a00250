package lb

import (
	"bufio"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/zero502/zero502/infra/clock"
	"github.com/zero502/zero502/internal/testrig/poll"
	"github.com/zero502/zero502/internal/testrig/tcpserver"
)

// deadAddr is a loopback address nobody listens on (connect is refused).
func deadAddr(t testing.TB) string {
	t.Helper()
	// A claimed port below the ephemeral range (tcpserver.FreePort): a port the kernel handed out
	// and took back would soon be another test's listener, which this "dead" backend then was.
	return net.JoinHostPort("127.0.0.1", strconv.Itoa(tcpserver.FreePort(t)))
}

// slowChecks keeps the active checker to its first check, so passive behaviour shows alone.
func slowChecks() Option { return withClock(clock.NewFake(zeroTime)) }

func TestGETIsRetriedOnTheNextBackendAndTheDeadOneEjectedAtOnce(t *testing.T) {
	a := startBackend(t, "a")
	dying := startBackend(t, "dying")
	l := startLB(t, fastSettings(dying.addr(), a.addr()), slowChecks())
	c := client()
	get(t, c, l.url("/_lb/health")) // the first checks are done: both in rotation
	dying.srv.Close()               // from here its connections are refused
	for i := 0; i < 6; i++ {
		if code, body, _ := get(t, c, l.url("/")); code != 200 || body != "a" {
			t.Fatalf("request %d: %d %q, want 200 from a", i, code, body)
		}
	}
	st := l.Backends()[0].Status()
	if st.State != Unhealthy || len(st.Transitions) != 2 || !strings.HasPrefix(st.Transitions[1].Reason, "passive:") {
		t.Fatalf("dead backend: %+v", st)
	}
	if l.retries.Load() != 1 || l.ejections.Load() != 1 {
		t.Fatalf("retries %d ejections %d, want 1 and 1", l.retries.Load(), l.ejections.Load())
	}
}

func TestKilledBackendCostsNoClientErrors(t *testing.T) {
	bs := []*testBackend{startBackend(t, "a"), startBackend(t, "b"), startBackend(t, "c")}
	l := startLB(t, fastSettings(bs[0].addr(), bs[1].addr(), bs[2].addr()), slowChecks())
	c := client()
	for i := 0; i < 9; i++ { // fill the upstream pools
		get(t, c, l.url("/"))
	}
	bs[1].srv.CloseClientConnections()
	bs[1].srv.Close()
	seen := map[string]int{}
	for i := 0; i < 12; i++ {
		code, body, _ := get(t, c, l.url("/"))
		if code != 200 {
			t.Fatalf("request %d after the kill: %d", i, code)
		}
		seen[body]++
	}
	if seen["b"] != 0 || seen["a"] != 6 || seen["c"] != 6 {
		t.Fatalf("after the kill traffic must split over the survivors: %v", seen)
	}
}

// orderTaker is a backend that executes POST /orders (counts it) and then dies without
// answering: the worst case for a retrying proxy.
func orderTaker(t *testing.T, executed *atomic.Int64) string {
	return tcpserver.Serve(t, func(c net.Conn) {
		br := bufio.NewReader(c)
		for {
			req, err := http.ReadRequest(br)
			if err != nil {
				return
			}
			io.Copy(io.Discard, req.Body)
			if req.URL.Path == "/health" {
				io.WriteString(c, "HTTP/1.1 200 OK\r\nContent-Length: 0\r\n\r\n")
				continue
			}
			executed.Add(1)
			return // executed, then the connection breaks before any response byte
		}
	})
}

func TestPOSTIsNeverExecutedTwice(t *testing.T) {
	var executed atomic.Int64
	l := startLB(t, fastSettings(orderTaker(t, &executed), orderTaker(t, &executed)), slowChecks())
	resp, err := client().Post(l.url("/orders"), "application/json", strings.NewReader(`{"key":"k1"}`))
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != 502 {
		t.Fatalf("POST whose backend broke: %d, want 502", resp.StatusCode)
	}
	if n := executed.Load(); n != 1 {
		t.Fatalf("POST executed %d times, want exactly 1", n)
	}
}

func TestPOSTToAnUnreachableBackendIs502NotReplayed(t *testing.T) {
	a := startBackend(t, "a")
	dying := startBackend(t, "dying")
	l := startLB(t, fastSettings(dying.addr(), a.addr()), slowChecks())
	get(t, client(), l.url("/_lb/health")) // the first checks are done: both in rotation
	dying.srv.Close()                      // from here its connections are refused
	resp, err := client().Post(l.url("/orders"), "text/plain", strings.NewReader("x"))
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != 502 || a.posts.Load() != 0 {
		t.Fatalf("POST: %d, executed on a: %d; want 502 and 0", resp.StatusCode, a.posts.Load())
	}
	if st := l.Backends()[0].State(); st != Unhealthy {
		t.Fatalf("unreachable backend after the POST: %s, want unhealthy", st)
	}
}

func TestNoHealthyBackendIs503AndServiceResumesByItself(t *testing.T) {
	a := startBackend(t, "a")
	addr := a.addr()
	l := startLB(t, fastSettings(addr))
	a.srv.CloseClientConnections()
	a.srv.Close()
	c := client()
	poll.Until(t, 10*time.Second, "503 once the only backend is dead", func() bool {
		t0 := time.Now()
		resp, err := c.Get(l.url("/"))
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if time.Since(t0) > 2*time.Second {
			t.Fatalf("503 must come in bounded time, took %s", time.Since(t0))
		}
		return resp.StatusCode == 503 && resp.Header.Get("Retry-After") != ""
	})
	// the backend returns on the same address
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		t.Skipf("cannot listen on %s again: %v", addr, err)
	}
	back := httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		io.WriteString(w, "back")
	}))
	back.Listener = ln
	back.Start()
	defer back.Close()
	poll.Until(t, 10*time.Second, "service resumes", func() bool {
		resp, err := c.Get(l.url("/"))
		if err != nil {
			return false
		}
		b, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		return resp.StatusCode == 200 && string(b) == "back"
	})
}

func TestDrainingBackendGetsNoNewRequestsAndItsIdleConnsAreClosed(t *testing.T) {
	a, b := startBackend(t, "a"), startBackend(t, "b")
	l := startLB(t, fastSettings(a.addr(), b.addr()))
	c := client()
	for i := 0; i < 4; i++ {
		get(t, c, l.url("/"))
	}
	poll.Until(t, 5*time.Second, "a pooled connection to b", func() bool { return l.Backends()[1].idleConns() > 0 })
	b.health.Store(503)
	poll.Until(t, 5*time.Second, "b draining", func() bool { return l.Backends()[1].State() == Draining })
	// the event loops close theirs as soon as they are woken by the transition
	poll.Until(t, time.Second, "no idle pooled conns to the draining backend", func() bool { return l.Backends()[1].idleConns() == 0 })
	before := b.hits.Load()
	for i := 0; i < 6; i++ {
		if _, body, _ := get(t, c, l.url("/")); body != "a" {
			t.Fatalf("request went to the draining backend")
		}
	}
	if b.hits.Load() != before {
		t.Fatal("draining backend got new requests")
	}
	b.health.Store(200)
	poll.Until(t, 5*time.Second, "b back", func() bool { return l.Backends()[1].State() == Healthy })
}
