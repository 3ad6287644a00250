package lb

import (
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/zero502/zero502/infra/adminapi"
	"github.com/zero502/zero502/infra/clock"
	"github.com/zero502/zero502/internal/testrig/poll"
)

// handlerBackend is a backend whose /health answers 200 and every other path what h answers.
func handlerBackend(t *testing.T, h http.HandlerFunc) string {
	t.Helper()
	mux := http.NewServeMux()
	mux.HandleFunc("/health", func(w http.ResponseWriter, r *http.Request) {})
	mux.HandleFunc("/", h)
	srv := httptest.NewServer(mux)
	t.Cleanup(srv.Close)
	return srv.Listener.Addr().String()
}

// startSteadyLB is an LB on backends whose first health check places them and no check
// follows (slowChecks), with a health timeout long enough that the first check passes on a
// loaded machine; it returns once the first checks put every backend in rotation.
func startSteadyLB(t *testing.T, set Settings) *testLB {
	t.Helper()
	set.Interval, set.Timeout = 10*time.Second, 5*time.Second
	clk := clock.NewFake(zeroTime)
	l := startLB(t, set, withClock(clk))
	get(t, client(), l.url("/_lb/health")) // accepted once the first checks are done
	for _, b := range l.Backends() {
		if !b.InRotation() {
			t.Fatalf("backend %s not in rotation after its first check: %+v", b.Address, b.Status())
		}
	}
	// Every backend's checker has done its check at once and waits on the fake clock: no check
	// runs again while the test changes what a backend answers.
	poll.UntilNil(t, 10*time.Second, "every checker waits for its next check", func() error {
		if n := clk.Waiters(); n < len(l.Backends()) {
			return fmt.Errorf("%d of %d checkers wait", n, len(l.Backends()))
		}
		return nil
	})
	return l
}

// outcomesOf reads addr's status over the admin API.
func outcomesOf(t *testing.T, l *testLB, addr string) BackendStatus {
	t.Helper()
	st, ok := statusOf(t, l.AdminAddr(), addr)
	if !ok {
		t.Fatalf("GET /admin/backends has no %s", addr)
	}
	return st
}

// windowUntil waits until the window of addr since before satisfies check (an error says what is
// still wrong), and returns it.
func windowUntil(t *testing.T, l *testLB, addr string, before BackendStatus, what string, check func(adminapi.WindowOutcome) error) adminapi.WindowOutcome {
	t.Helper()
	var w adminapi.WindowOutcome
	poll.UntilNil(t, 5*time.Second, what, func() error {
		var err error
		if w, err = adminapi.Window(before, outcomesOf(t, l, addr)); err != nil {
			return err
		}
		return check(w)
	})
	return w
}

// hasSeries checks that a /metrics scrape (scrape) carries every series line.
func hasSeries(t *testing.T, metrics string, series ...string) {
	t.Helper()
	for _, s := range series {
		if !strings.Contains(metrics, s+"\n") {
			t.Errorf("/metrics lacks %q", s)
		}
	}
}

func TestABackendAnswering500IsCountedWithItsErrorRate(t *testing.T) {
	var n atomic.Int64
	broken := handlerBackend(t, func(w http.ResponseWriter, r *http.Request) {
		if n.Add(1)%2 == 0 {
			w.WriteHeader(500)
			return
		}
		io.WriteString(w, "ok")
	})
	l := startSteadyLB(t, fastSettings(broken))
	c := client()
	get(t, c, l.url("/_lb/health"))
	before := outcomesOf(t, l, broken)
	fives := 0
	for i := 0; i < 10; i++ {
		if code, _, _ := get(t, c, l.url("/")); code == 500 {
			fives++
		}
	}
	if fives != 5 {
		t.Fatalf("%d of 10 answers were 500, want every second one", fives)
	}
	w := windowUntil(t, l, broken, before, "10 answers, 5 of them server errors", func(w adminapi.WindowOutcome) error {
		if w.Requests != 10 || w.ServerErrors != 5 || w.Errors != 5 || w.ErrorRate != 0.5 {
			return fmt.Errorf("window %+v", w)
		}
		return nil
	})
	if w.Failures.Total() != 0 || w.LBAnswers.Total() != 0 || w.Latency.Count() != 10 {
		t.Fatalf("a backend that answered has no failures and 10 latencies: %+v", w)
	}
	st := outcomesOf(t, l, broken)
	if st.Requests["5xx"] != 5 || st.Requests["2xx"] != 5 || st.Requests["errors"] != 0 {
		t.Fatalf("requests by class %v, want 5 2xx, 5 5xx, no errors", st.Requests)
	}
	hasSeries(t, scrape(t, l),
		`zero502_lb_backend_errors_total{backend="`+broken+`",kind="5xx"} 5`,
		`zero502_lb_backend_errors_total{backend="`+broken+`",kind="reset"} 0`,
		`zero502_lb_requests_total{backend="`+broken+`",class="5xx"} 5`,
		`zero502_lb_upstream_header_seconds_count{backend="`+broken+`"} 10`)
}

func TestHealth503OfADrainingBackendIsNotAnError(t *testing.T) {
	a := startBackend(t, "a")
	l := startSteadyLB(t, fastSettings(a.addr())) // only the first check: a stays in rotation
	c := client()
	get(t, c, l.url("/_lb/health"))
	before := outcomesOf(t, l, a.addr())
	a.health.Store(503) // the drain handshake: /health says 503, real requests go on
	for i := 0; i < 3; i++ {
		for _, path := range []string{"/health", "/health?probe=1"} {
			if code, body, _ := get(t, c, l.url(path)); code != 503 || body != "" {
				t.Fatalf("%s through the LB: %d %q, want the backend's 503 (no body)", path, code, body)
			}
		}
		if code, body, _ := get(t, c, l.url("/")); code != 200 || body != "a" {
			t.Fatalf("a real request to the draining backend: %d %q", code, body)
		}
	}
	windowUntil(t, l, a.addr(), before, "9 answers, 6 health 503s, no errors", func(w adminapi.WindowOutcome) error {
		if w.Requests != 9 || w.HealthUnavailable != 6 || w.Errors != 0 || w.ErrorRate != 0 {
			return fmt.Errorf("window %+v", w)
		}
		return nil
	})
	hasSeries(t, scrape(t, l),
		`zero502_lb_backend_health_unavailable_total{backend="`+a.addr()+`"} 6`,
		`zero502_lb_backend_errors_total{backend="`+a.addr()+`",kind="5xx"} 0`)

	// a 503 to any other path is the backend failing
	sick := handlerBackend(t, func(w http.ResponseWriter, r *http.Request) { w.WriteHeader(503) })
	l2 := startSteadyLB(t, fastSettings(sick))
	get(t, c, l2.url("/_lb/health"))
	before = outcomesOf(t, l2, sick)
	get(t, c, l2.url("/orders"))
	windowUntil(t, l2, sick, before, "a 503 to /orders counted as a server error", func(w adminapi.WindowOutcome) error {
		if w.ServerErrors != 1 || w.HealthUnavailable != 0 || w.ErrorRate != 1 {
			return fmt.Errorf("window %+v", w)
		}
		return nil
	})
}

func TestARefusedBackendsFailuresAreChargedToIt(t *testing.T) {
	a := startBackend(t, "a")
	dying := startBackend(t, "dying")
	dead := dying.addr()
	l := startSteadyLB(t, fastSettings(dead, a.addr()))
	c := client()
	get(t, c, l.url("/_lb/health")) // both in rotation
	beforeDead, beforeA := outcomesOf(t, l, dead), outcomesOf(t, l, a.addr())
	dying.srv.Close() // its connections are refused from here
	for i := 0; i < 4; i++ {
		if code, body, _ := get(t, c, l.url("/")); code != 200 || body != "a" {
			t.Fatalf("request %d: %d %q, want 200 from a", i, code, body)
		}
	}
	windowUntil(t, l, dead, beforeDead, "one refused connect charged to the dead backend", func(w adminapi.WindowOutcome) error {
		// the GET went on to a: its client got a's answer, not one of the LB's
		if w.Failures != (adminapi.Failures{Connect: 1}) || w.LBAnswers.Total() != 0 || w.Errors != 1 || w.ErrorRate != 1 {
			return fmt.Errorf("window %+v", w)
		}
		return nil
	})
	windowUntil(t, l, a.addr(), beforeA, "a charged nothing", func(w adminapi.WindowOutcome) error {
		if w.Requests != 4 || w.Errors != 0 {
			return fmt.Errorf("window %+v", w)
		}
		return nil
	})
	hasSeries(t, scrape(t, l), `zero502_lb_backend_errors_total{backend="`+dead+`",kind="connect"} 1`)
}

func TestLBMade502And504AreChargedToTheTargetTheyName(t *testing.T) {
	var executed atomic.Int64
	breaker := orderTaker(t, &executed) // takes the POST, closes without a byte back
	set := fastSettings(breaker)
	l := startSteadyLB(t, set)
	c := client()
	get(t, c, l.url("/_lb/health"))
	before := outcomesOf(t, l, breaker)
	resp, err := c.Post(l.url("/orders"), "text/plain", strings.NewReader("x"))
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != 502 {
		t.Fatalf("POST to a backend that broke the connection: %d, want 502", resp.StatusCode)
	}
	windowUntil(t, l, breaker, before, "a reset and the LB's 502 charged to the breaking backend", func(w adminapi.WindowOutcome) error {
		if w.Failures != (adminapi.Failures{Reset: 1}) || w.LBAnswers != (adminapi.LBAnswers{BadGateway: 1}) || w.ErrorRate != 1 {
			return fmt.Errorf("window %+v", w)
		}
		return nil
	})

	a := startBackend(t, "a") // /hang answers nothing for 30s
	set = fastSettings(a.addr())
	set.HeaderTimeout = 300 * time.Millisecond
	l2 := startSteadyLB(t, set)
	get(t, c, l2.url("/_lb/health"))
	before = outcomesOf(t, l2, a.addr())
	if code, _, _ := get(t, c, l2.url("/hang")); code != 504 {
		t.Fatalf("GET /hang past header_timeout: %d, want 504", code)
	}
	windowUntil(t, l2, a.addr(), before, "a timeout and the LB's 504 charged to the silent backend", func(w adminapi.WindowOutcome) error {
		if w.Failures != (adminapi.Failures{Timeout: 1}) || w.LBAnswers != (adminapi.LBAnswers{GatewayTimeout: 1}) {
			return fmt.Errorf("window %+v", w)
		}
		return nil
	})
	st := outcomesOf(t, l2, a.addr())
	if st.Requests["errors"] != 1 {
		t.Fatalf("requests %v, want the timeout under errors", st.Requests)
	}
	hasSeries(t, scrape(t, l2),
		`zero502_lb_backend_errors_total{backend="`+a.addr()+`",kind="timeout"} 1`,
		`zero502_lb_backend_own_responses_total{backend="`+a.addr()+`",code="504"} 1`,
		`zero502_lb_backend_own_responses_total{backend="`+a.addr()+`",code="502"} 0`)
}

func TestASlowBackendsLatencyLandsInAHigherBucket(t *testing.T) {
	fast := handlerBackend(t, func(w http.ResponseWriter, r *http.Request) { io.WriteString(w, "fast") })
	slow := handlerBackend(t, func(w http.ResponseWriter, r *http.Request) {
		time.Sleep(50 * time.Millisecond)
		io.WriteString(w, "slow")
	})
	l := startSteadyLB(t, fastSettings(fast, slow))
	c := client()
	get(t, c, l.url("/_lb/health"))
	beforeFast, beforeSlow := outcomesOf(t, l, fast), outcomesOf(t, l, slow)
	for i := 0; i < 10; i++ {
		get(t, c, l.url("/"))
	}
	enough := func(w adminapi.WindowOutcome) error {
		if w.Latency.Count() != 5 {
			return fmt.Errorf("%d latencies, want 5 (round robin over two)", w.Latency.Count())
		}
		return nil
	}
	wf := windowUntil(t, l, fast, beforeFast, "5 latencies of the fast backend", enough)
	ws := windowUntil(t, l, slow, beforeSlow, "5 latencies of the slow backend", enough)
	for i, n := range ws.Latency.Counts {
		if n > 0 && i < len(ws.Latency.Bounds) && ws.Latency.Bounds[i] < 0.05 {
			t.Fatalf("a 50ms answer in the bucket up to %gs: %v", ws.Latency.Bounds[i], ws.Latency.Counts)
		}
	}
	if ws.P50 < 50*time.Millisecond || wf.P50 >= ws.P50 {
		t.Fatalf("p50 fast %v slow %v: want the slow one at least 50ms and above the fast one (buckets %v vs %v)",
			wf.P50, ws.P50, wf.Latency.Counts, ws.Latency.Counts)
	}
	if ws.Latency.SumSeconds < 5*0.05 {
		t.Fatalf("slow backend's latency sum %gs, want at least 5 × 50ms", ws.Latency.SumSeconds)
	}
	hasSeries(t, scrape(t, l), `zero502_lb_upstream_header_seconds_bucket{backend="`+slow+`",le="0.025"} 0`)
	// the status page's p99 column: the slow backend's only answers are the window's
	if code, page := adminCall(t, l.AdminAddr(), "GET", "/", ""); code != 200 || !strings.Contains(page, "<td>"+ws.P99.String()+"</td>") ||
		!strings.Contains(page, "</table>") {
		t.Fatalf("status page: %d, want a whole table with the slow backend's p99 %v:\n%s", code, ws.P99, page)
	}
}

// The fine latency buckets: as many as the histogram holds, from 100µs to 5s, each at most 15 %
// above the one before (a 20 % slower p99 lands in another bucket), and every /metrics bucket one
// of them (its counts are sums of fine ones).
func TestLatencyBoundsAreFineAndHoldTheMetricsBuckets(t *testing.T) {
	if len(latencyBounds)+1 != latencyBuckets {
		t.Fatalf("%d bounds, latencyBuckets %d: want one bucket per bound and one above", len(latencyBounds), latencyBuckets)
	}
	if latencyBounds[0] != .0001 || latencyBounds[len(latencyBounds)-1] != 5 {
		t.Fatalf("bounds from %g to %g, want 0.0001 to 5", latencyBounds[0], latencyBounds[len(latencyBounds)-1])
	}
	for i := 1; i < len(latencyBounds); i++ {
		if r := latencyBounds[i] / latencyBounds[i-1]; r <= 1 || r > 1.15 {
			t.Fatalf("bound %g follows %g: ratio %.3f, want above 1 and at most 1.15", latencyBounds[i], latencyBounds[i-1], r)
		}
	}
	for _, m := range metricsBounds {
		if !slices.Contains(latencyBounds, m) {
			t.Fatalf("metrics bucket %g is no latency bound", m)
		}
	}
	var h latency
	for _, d := range []time.Duration{100 * time.Millisecond, 120 * time.Millisecond} {
		h.observe(d)
	}
	s := h.snapshot()
	var at []float64
	for i, n := range s.Counts {
		if n > 0 {
			at = append(at, s.Bounds[i])
		}
	}
	if len(at) != 2 || at[0] != .1 || at[1] != .12 {
		t.Fatalf("100ms and 120ms went into the buckets up to %v, want [0.1 0.12]", at)
	}
}
