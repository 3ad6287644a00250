package acceptance

import (
	"fmt"
	"net/http"
	"strings"
	"testing"
	"time"
)

// The lab's failure checks: a SIGKILLed backend, a sick one (alive, / 500, /health 503), all of
// them dead, and what happens to requests with a body when a backend fails under them.

// The lab's limits (with the LB's default flags): out of rotation within 4 s, back within 5 s.
const (
	ejectWithin   = 4 * time.Second
	recoverWithin = 5 * time.Second
)

func TestKilledBackendIsRetriedThenEjectedThenReturns(t *testing.T) {
	t.Parallel()
	bs := threeBackends(t)
	a, b, c := bs[0], bs[1], bs[2]
	l := startLB(t, bs)

	b.kill()
	// The next 12 requests all succeed: the one that meets the dead backend is retried.
	l.sequence(t, 12)
	took := l.waitOutOfRotation(t, ejectWithin, b)
	t.Logf("killed backend out of rotation %s after the 12 requests", took.Round(time.Millisecond))

	names := l.sequence(t, 20)
	counts := tally(names)
	if counts[b.name] != 0 || counts[a.name] != 10 || counts[c.name] != 10 {
		t.Fatalf("after the kill 20 requests went %v, want 10 to a and 10 to c: %v", counts, names)
	}

	b.restart()
	took = l.waitInRotation(t, recoverWithin, b)
	t.Logf("restarted backend back in rotation after %s", took.Round(time.Millisecond))
	for name, n := range tally(l.sequence(t, 30)) {
		if n != 10 {
			t.Fatalf("after the restart backend %q got %d of 30, want 10 each", name, n)
		}
	}
	l.requireAlive(t)
}

func TestSickBackendIsEjectedAndReturns(t *testing.T) {
	t.Parallel()
	bs := threeBackends(t)
	b := bs[1]
	l := startLB(t, bs)

	if code, _ := b.get(t, "/sick"); code != 200 {
		t.Fatalf("/sick answered %d", code)
	}
	took := l.waitOutOfRotation(t, ejectWithin, b)
	st := l.status(t)[b.addr]
	t.Logf("sick backend out of rotation after %s (state %q, last error %q)", took.Round(time.Millisecond), st.State, st.LastError)
	if st.State == "healthy" {
		t.Errorf("a backend out of rotation reports state %q", st.State)
	}
	for _, name := range l.sequence(t, 30) { // sequence fails on any non-200: no 500 of the sick one
		if name == b.name {
			t.Fatalf("a request reached the sick backend after it left rotation")
		}
	}

	if code, _ := b.get(t, "/well"); code != 200 {
		t.Fatalf("/well answered %d", code)
	}
	took = l.waitInRotation(t, recoverWithin, b)
	t.Logf("recovered backend back in rotation after %s", took.Round(time.Millisecond))
	for name, n := range tally(l.sequence(t, 30)) {
		if n != 10 {
			t.Fatalf("after recovery backend %q got %d of 30, want 10 each", name, n)
		}
	}
}

func TestAllBackendsDeadGives503ThenRecovers(t *testing.T) {
	t.Parallel()
	bs := threeBackends(t)
	l := startLB(t, bs)
	for _, b := range bs {
		b.kill()
	}
	for i := 0; i < 5; i++ {
		start := time.Now()
		resp, body := l.mustGet(t, "/")
		took := time.Since(start)
		if resp.StatusCode != http.StatusServiceUnavailable {
			t.Fatalf("request %d with every backend dead: status %d %q, want 503", i+1, resp.StatusCode, body)
		}
		if resp.Header.Get("Retry-After") == "" {
			t.Errorf("503 without Retry-After")
		}
		if took > 5*time.Second {
			t.Errorf("the 503 took %s, want a bounded answer (< 5 s)", took)
		}
	}
	l.requireAlive(t)

	for _, b := range bs {
		b.restart()
	}
	took := eventually(t, 10*time.Second, 50*time.Millisecond, func() (bool, string) {
		resp, body, err := l.get("/")
		if err != nil {
			return false, err.Error()
		}
		return resp.StatusCode == 200, fmt.Sprintf("status %d %q", resp.StatusCode, body)
	})
	t.Logf("first 200 %s after the backends returned", took.Round(time.Millisecond))
	l.waitInRotation(t, recoverWithin, bs...)
	for name, n := range tally(l.sequence(t, 30)) {
		if n != 10 {
			t.Fatalf("after recovery backend %q got %d of 30, want 10 each", name, n)
		}
	}
}

func TestPostToDeadBackendIs502AndNotReplayed(t *testing.T) {
	t.Parallel()
	bs := threeBackends(t)
	a, b, c := bs[0], bs[1], bs[2]
	// Slow health checks: only the POST itself can find out that b died.
	l := startLB(t, bs, "--health-interval", "5s", "--health-timeout", "2s", "--unhealthy-threshold", "2")
	b.kill()

	ok, failed := 0, 0
	for i := 0; i < 3; i++ { // strict rotation: one of three consecutive requests meets b
		resp, body := l.post(t, "/upload", "order-"+fmt.Sprint(i))
		switch resp.StatusCode {
		case http.StatusOK:
			ok++
		case http.StatusBadGateway:
			failed++
		default:
			t.Fatalf("POST %d: status %d %q, want 200 or 502", i+1, resp.StatusCode, body)
		}
	}
	if failed != 1 {
		t.Fatalf("%d of 3 POSTs got 502, want exactly 1 (the one that met the dead backend)", failed)
	}
	if n := a.count(t, "POST /upload") + c.count(t, "POST /upload"); n != int64(ok) {
		t.Fatalf("the survivors executed %d POSTs for %d successful answers: the failed POST was replayed", n, ok)
	}
	// The failure marked b unhealthy at once (passive), long before two 5 s checks could.
	if st := l.status(t)[b.addr]; st.InRotation {
		t.Fatalf("after a refused connection the backend is still in rotation (state %q)", st.State)
	}
	for i := 0; i < 6; i++ {
		if resp, body := l.post(t, "/upload", "more"); resp.StatusCode != 200 {
			t.Fatalf("POST after the passive ejection: status %d %q", resp.StatusCode, body)
		}
	}
}

func TestPostDroppedByBackendIsExecutedOnce(t *testing.T) {
	t.Parallel()
	bs := threeBackends(t)
	l := startLB(t, bs, "--health-interval", "5s", "--health-timeout", "2s")
	// /drop reads the whole request, counts it, and closes without answering: the backend did
	// the work and died before the response. Replaying it elsewhere would do it twice.
	for i := 0; i < 2; i++ {
		if resp, body := l.post(t, "/drop", "pay 10 EUR"); resp.StatusCode != http.StatusBadGateway {
			t.Fatalf("POST %d to a backend that dropped it: status %d %q, want 502", i+1, resp.StatusCode, body)
		}
	}
	var total int64
	for _, b := range bs {
		total += b.count(t, "POST /drop")
	}
	if total != 2 {
		t.Fatalf("two POSTs were executed %d times in all, want 2 (never replayed)", total)
	}
	l.requireAlive(t)
}

func TestStaleUpstreamConnectionsLoseNoRequest(t *testing.T) {
	t.Parallel()
	// The backends close idle keep-alive connections after 200 ms, far sooner than the LB's pool
	// expects: every round below meets connections the backend has just closed.
	bs := threeBackends(t, "--idle-timeout", "200ms")
	l := startLB(t, bs, calm...)
	for round := 0; round < 4; round++ {
		for i := 0; i < 3; i++ {
			if resp, body := l.mustGet(t, "/"); resp.StatusCode != 200 {
				t.Fatalf("round %d GET: status %d %q", round, resp.StatusCode, body)
			}
			if resp, body := l.post(t, "/upload", "x"); resp.StatusCode != 200 {
				t.Fatalf("round %d POST: status %d %q (a POST lost to a stale pooled connection)", round, resp.StatusCode, body)
			}
		}
		time.Sleep(400 * time.Millisecond) // let the backends close the now idle connections
	}
	var total int64
	for _, b := range bs {
		total += b.count(t, "POST /upload")
	}
	if total != 12 {
		t.Fatalf("12 POSTs answered 200 were executed %d times", total)
	}
}

// post sends a POST with body through the LB on a fresh connection.
func (l *lbProc) post(t *testing.T, path, body string) (*http.Response, string) {
	t.Helper()
	c := dialRawConn(t, l.addr)
	defer c.c.Close()
	c.send(request("POST "+path+" HTTP/1.1", []string{"Host: lb.test", contentLength(len(body)), "Connection: close"}, body))
	resp, respBody := c.read("POST")
	return resp, strings.TrimSpace(string(respBody))
}

func TestDrainingBackendFinishesItsInFlightRequests(t *testing.T) {
	t.Parallel()
	bs := threeBackends(t)
	b := bs[1]
	l := startLB(t, bs)
	// One slow request on every backend (strict rotation), then b's health turns 503 under it.
	codes := make(chan string, 3)
	for i := 0; i < 3; i++ {
		go func() {
			resp, body, err := l.get("/slow?ms=2000&id=in-flight")
			if err != nil {
				codes <- err.Error()
				return
			}
			codes <- fmt.Sprintf("%d %s", resp.StatusCode, strings.TrimSpace(string(body)))
		}()
	}
	eventually(t, 5*time.Second, 20*time.Millisecond, func() (bool, string) {
		for _, x := range bs {
			if n := x.count(t, "GET /slow"); n != 1 {
				return false, fmt.Sprintf("backend %s has %d slow requests, want 1 each", x.name, n)
			}
		}
		return true, ""
	})
	b.get(t, "/sick")
	l.waitOutOfRotation(t, ejectWithin, b)
	for _, name := range l.sequence(t, 9) {
		if name == b.name {
			t.Fatalf("a new request reached the draining backend")
		}
	}
	for i := 0; i < 3; i++ {
		if got := <-codes; got != "200 in-flight" {
			t.Errorf("a request in flight when its backend started draining got %q, want 200", got)
		}
	}
}
