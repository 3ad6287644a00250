package measure

import (
	"context"
	"errors"
	"fmt"
	"io"
	"math"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/zero502/zero502/internal/testrig/tcpserver"
)

func TestClassifyStatusesAndErrors(t *testing.T) {
	for _, tc := range []struct {
		name   string
		kind   string
		status int
		err    error
		want   Class
	}{
		{"200 is ok", KindGet, 200, nil, OK},
		{"301 is ok", KindGet, 301, nil, OK},
		{"503 to a health check is the drain at work", KindHealth, 503, nil, Health503},
		{"503 to a user's GET is a failure", KindGet, 503, nil, C503},
		{"503 to a user's POST is a failure", KindPost, 503, nil, C503},
		{"502", KindGet, 502, nil, C502},
		{"504", KindGet, 504, nil, C504},
		{"500 is other 5xx", KindGet, 500, nil, C5xx},
		{"404 is 4xx", KindGet, 404, nil, C4xx},
		{"500 to a health check is still a failure", KindHealth, 500, nil, C5xx},
		{"refused", KindGet, 0, &net.OpError{Op: "dial", Err: syscall.ECONNREFUSED}, Refused},
		{"reset", KindGet, 0, &net.OpError{Op: "read", Err: syscall.ECONNRESET}, Reset},
		{"eof", KindGet, 0, io.ErrUnexpectedEOF, Reset},
		{"deadline", KindGet, 0, context.DeadlineExceeded, Timeout},
		{"other", KindGet, 0, errors.New("tls: bad certificate"), ErrOther},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := classify(tc.kind, tc.status, tc.err); got != tc.want {
				t.Fatalf("classify(%q, %d, %v) = %s, want %s", tc.kind, tc.status, tc.err, got, tc.want)
			}
			if tc.want.Failure() == (tc.want == OK || tc.want == Health503) {
				t.Fatalf("%s: Failure() = %v", tc.want, tc.want.Failure())
			}
		})
	}
}

// run sends a short load to target and returns the result.
func run(t *testing.T, o Options) *Result {
	t.Helper()
	if o.Rate == 0 {
		o.Rate = 100
	}
	if o.Duration == 0 {
		o.Duration = 300 * time.Millisecond
	}
	l, err := New(o)
	if err != nil {
		t.Fatal(err)
	}
	return l.Run(context.Background())
}

func TestServerStatusesAreClassifiedOverRealSockets(t *testing.T) {
	for _, tc := range []struct {
		status int
		want   Class
	}{{200, OK}, {502, C502}, {503, C503}, {504, C504}, {500, C5xx}} {
		t.Run(http.StatusText(tc.status), func(t *testing.T) {
			srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				w.WriteHeader(tc.status)
			}))
			defer srv.Close()
			res := run(t, Options{Target: srv.URL, PostShare: 0.3, NewConnShare: 0.3})
			if res.Sent == 0 || res.Counts[tc.want] != res.Sent {
				t.Fatalf("want all %d requests classified %s, got %v", res.Sent, tc.want, res.Counts)
			}
			if res.Failed() != tc.want.Failure() {
				t.Fatalf("Failed() = %v for %s", res.Failed(), tc.want)
			}
		})
	}
}

func TestHealth503IsNotAFailureButA503OnARealPathIs(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/health" {
			w.WriteHeader(http.StatusServiceUnavailable)
		}
	}))
	defer srv.Close()
	res := run(t, Options{Target: srv.URL, HealthShare: 0.5})
	if res.Counts[Health503] == 0 || res.Failed() {
		t.Fatalf("health 503s must be counted apart and fail nothing: %v", res.Counts)
	}
	if res.Counts[Health503] != res.Kinds[KindHealth] || res.Counts[OK] != res.Kinds[KindGet] {
		t.Fatalf("counts %v do not match kinds %v", res.Counts, res.Kinds)
	}

	all503 := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.WriteHeader(http.StatusServiceUnavailable)
	}))
	defer all503.Close()
	res = run(t, Options{Target: all503.URL, HealthShare: 0.5})
	if res.Counts[C503] != res.Kinds[KindGet] || res.Counts[C503] == 0 || !res.Failed() {
		t.Fatalf("a 503 on / must be a failure: counts %v kinds %v", res.Counts, res.Kinds)
	}
	// a user's GET on the health path (or on it with a query) is a user's request still
	res = run(t, Options{Target: all503.URL, GetPath: "/health?probe=user", HealthShare: 0.5})
	if res.Counts[C503] != res.Kinds[KindGet] || res.Counts[C503] == 0 || res.Counts[Health503] != res.Kinds[KindHealth] || !res.Failed() {
		t.Fatalf("a 503 to a user's GET of the health path must be a failure: counts %v kinds %v", res.Counts, res.Kinds)
	}
}

// resetServer accepts connections, reads the request and resets the connection (SO_LINGER 0).
func resetServer(t *testing.T) string {
	t.Helper()
	ln := tcpserver.Listen(t)
	tcpserver.ServeOn(t, ln, func(c net.Conn) {
		buf := make([]byte, 4096)
		_, _ = c.Read(buf)
		c.(*net.TCPConn).SetLinger(0)
		c.Close()
	})
	return "http://" + ln.Addr().String()
}

func TestResetRefusedAndTimeoutAreTransportFailures(t *testing.T) {
	res := run(t, Options{Target: resetServer(t), NewConnShare: 0.5, PostShare: 0.5})
	if res.Counts[Reset] != res.Sent || res.Sent == 0 {
		t.Fatalf("reset server: want every request classified reset, got %v (errors %v)", res.Counts, res.Errors)
	}

	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	closed := "http://" + ln.Addr().String()
	ln.Close()
	res = run(t, Options{Target: closed})
	if res.Counts[Refused] != res.Sent || res.Sent == 0 {
		t.Fatalf("closed port: want every request refused, got %v (errors %v)", res.Counts, res.Errors)
	}

	stall := make(chan struct{})
	slow := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		<-stall
	}))
	defer slow.Close()
	defer close(stall)
	res = run(t, Options{Target: slow.URL, Rate: 20, Timeout: 200 * time.Millisecond})
	if res.Counts[Timeout] != res.Sent || res.Sent == 0 {
		t.Fatalf("stalled server: want every request a timeout, got %v (errors %v)", res.Counts, res.Errors)
	}
}

// paced runs attempt up to three times until it returns nil, and fails the test with the last
// error. A starved machine (the packages under load run beside this one) can delay requests,
// never make an unpaced load look paced: one run that meets the bounds shows the pacing.
func paced(t *testing.T, attempt func() error) {
	t.Helper()
	var err error
	for i := range 3 {
		if err = attempt(); err == nil {
			return
		}
		t.Logf("run %d: %v", i+1, err)
	}
	t.Fatal(err)
}

// TestRateIsHonouredOpenLoop checks the pace at the server: requests arrive spread over the run,
// and a slow server does not slow the load down (it is not a closed loop).
func TestRateIsHonouredOpenLoop(t *testing.T) {
	paced(t, func() error { return rateHonouredOpenLoop(t) })
}

func rateHonouredOpenLoop(t *testing.T) error {
	var mu sync.Mutex
	var arrivals []time.Duration
	keys := map[string]int{}
	var start time.Time
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		arrivals = append(arrivals, time.Since(start))
		if k := r.Header.Get("Idempotency-Key"); r.Method == http.MethodPost {
			keys[k]++
			if r.URL.Path != "/orders" || r.URL.RawQuery != "ms=5" {
				t.Errorf("POST went to %s, want /orders?ms=5", r.URL)
			}
		}
		mu.Unlock()
		time.Sleep(100 * time.Millisecond) // slower than the pace: an open loop does not care
		w.Header().Set("X-Version", "v1")
	}))
	defer srv.Close()
	l, err := New(Options{Target: srv.URL, Rate: 200, Duration: time.Second, PostShare: 0.5, PostPath: "/orders?ms=5"})
	if err != nil {
		t.Fatal(err)
	}
	start = time.Now()
	res := l.Run(context.Background())
	mu.Lock()
	defer mu.Unlock()
	if len(arrivals) < 170 || len(arrivals) > 230 {
		return fmt.Errorf("rate 200/s for 1s: server saw %d requests, want 170..230", len(arrivals))
	}
	// Paced, not bursted: the arrivals span most of the second, and neither half has nearly all
	// of them (bounds generous for a loaded machine, where early connections are slow to open).
	first, last, firstHalf := arrivals[0], arrivals[0], 0
	for _, a := range arrivals {
		first, last = min(first, a), max(last, a)
		if a < 500*time.Millisecond {
			firstHalf++
		}
	}
	if span := last - first; span < 600*time.Millisecond {
		return fmt.Errorf("arrivals span %s; a steady 1s load must spread over most of the second", span)
	}
	if share := float64(firstHalf) / float64(len(arrivals)); share < 0.1 || share > 0.9 {
		return fmt.Errorf("%.0f%% of requests arrived in the first half of the run; want a steady pace", 100*share)
	}
	if res.Counts[OK] != len(arrivals) || res.Failed() { // timeouts, on a starved machine
		return fmt.Errorf("counts %v, server saw %d", res.Counts, len(arrivals))
	}
	// what follows is not timing: it holds on any run
	for k, n := range keys {
		if k == "" || n != 1 {
			t.Fatalf("Idempotency-Key %q seen %d times; every POST needs its own", k, n)
		}
	}
	if len(keys) != res.Kinds[KindPost] || len(keys) == 0 {
		t.Fatalf("%d distinct keys for %d POSTs", len(keys), res.Kinds[KindPost])
	}
	if vs := res.VersionSwitches(); len(vs) != 1 || vs[0].Version != "v1" {
		t.Fatalf("versions seen: %+v, want v1", vs)
	}
	return nil
}

// TestNewConnShareOpensConnections: share 1 opens a connection per request; share 0 reuses
// keep-alive connections (a few more open while answers are slow: judged on the best of three
// runs, as the pace is).
func TestNewConnShareOpensConnections(t *testing.T) {
	for _, tc := range []struct {
		share    float64
		min, max int // connections opened for 60 requests
	}{{1, 60, 60}, {0, 1, 20}} {
		paced(t, func() error {
			var mu sync.Mutex
			opened := 0
			srv := httptest.NewUnstartedServer(http.HandlerFunc(func(http.ResponseWriter, *http.Request) {}))
			srv.Config.ConnState = func(_ net.Conn, s http.ConnState) {
				if s == http.StateNew {
					mu.Lock()
					opened++
					mu.Unlock()
				}
			}
			srv.Start()
			res := run(t, Options{Target: srv.URL, Rate: 100, Duration: 600 * time.Millisecond, NewConnShare: tc.share})
			srv.Close()
			mu.Lock()
			defer mu.Unlock()
			if res.Sent != 60 || opened < tc.min || opened > tc.max {
				return fmt.Errorf("new-conn-share %g: %d requests opened %d connections, want %d..%d", tc.share, res.Sent, opened, tc.min, tc.max)
			}
			return nil
		})
	}
}

func TestBadOptionsAreRefused(t *testing.T) {
	for _, o := range []Options{
		{Target: "127.0.0.1:8080", Rate: 10},
		{Target: "http://x", Rate: 0},
		{Target: "http://x", Rate: 10, PostShare: 1.5},
		{Target: "http://x", Rate: 10, PostShare: 0.6, HealthShare: 0.6},
		{Target: "http://x", Rate: 10, Duration: -time.Second},
		{Target: "http://x", Rate: 10, PostPath: "orders"},
	} {
		if _, err := New(o); err == nil {
			t.Errorf("New(%+v) accepted bad options", o)
		}
	}
}

// A share that is no number (--post-share NaN) is refused as out of 0..1, naming it: it passes
// every comparison, and the load would silently send none of that kind.
func TestAShareThatIsNoNumberIsRefused(t *testing.T) {
	for _, o := range []Options{
		{Target: "http://x", Rate: 10, PostShare: math.NaN()},
		{Target: "http://x", Rate: 10, HealthShare: math.NaN()},
		{Target: "http://x", Rate: 10, NewConnShare: math.NaN()},
	} {
		_, err := New(o)
		if err == nil || !strings.Contains(err.Error(), "NaN: must be from 0 to 1") {
			t.Errorf("New(%+v) = %v; want a share refused as NaN: must be from 0 to 1", o, err)
		}
	}
}
