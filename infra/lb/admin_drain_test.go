package lb

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"net/http"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/zero502/zero502/internal/testrig/poll"
)

// load is a few client goroutines sending GET and POST through the LB until stopped, on
// keep-alive and on new connections, counting every answer that is not a 2xx.
type load struct {
	ok, bad atomic.Int64
	mu      sync.Mutex
	errs    []string
	cancel  context.CancelFunc
	wg      sync.WaitGroup
}

func startLoad(t *testing.T, url string, workers int) *load {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	ld := &load{cancel: cancel}
	for w := 0; w < workers; w++ {
		tr := &http.Transport{DisableCompression: true, DisableKeepAlives: w%2 == 1}
		c := &http.Client{Timeout: 10 * time.Second, Transport: tr}
		ld.wg.Add(1)
		go func() {
			defer ld.wg.Done()
			defer tr.CloseIdleConnections()
			for i := 0; ctx.Err() == nil; i++ {
				var resp *http.Response
				var err error
				if i%2 == 0 {
					resp, err = c.Get(url + "/")
				} else {
					resp, err = c.Post(url+"/orders", "text/plain", strings.NewReader("order"))
				}
				if err == nil {
					_, _ = io.Copy(io.Discard, resp.Body)
					resp.Body.Close()
				}
				switch {
				case err != nil:
					ld.fail(fmt.Sprintf("worker %d request %d: %v", w, i, err))
				case resp.StatusCode/100 != 2:
					ld.fail(fmt.Sprintf("worker %d request %d: status %d", w, i, resp.StatusCode))
				default:
					ld.ok.Add(1)
				}
			}
		}()
	}
	t.Cleanup(ld.stop)
	return ld
}

func (ld *load) fail(msg string) {
	ld.bad.Add(1)
	ld.mu.Lock()
	if len(ld.errs) < 5 {
		ld.errs = append(ld.errs, msg)
	}
	ld.mu.Unlock()
}

func (ld *load) stop() {
	ld.cancel()
	ld.wg.Wait()
}

// loadSettings are fastSettings whose health checks tolerate a few slow answers: on a busy
// machine under the race detector an 80 ms check can time out, and these tests are about the
// admin drain, not about ejection.
func loadSettings(backends ...string) Settings {
	s := fastSettings(backends...)
	s.UnhealthyThreshold = 10
	return s
}

// served is how many requests b executed (GET / and POST /orders).
func (b *testBackend) served() int64 { return b.hits.Load() + b.posts.Load() }

func TestAdminDrainUnderLoadLosesNothing(t *testing.T) {
	a, b := startBackend(t, "a"), startBackend(t, "b")
	l := startLB(t, loadSettings(a.addr(), b.addr()))
	admin := l.AdminAddr()
	const workers = 4
	ld := startLoad(t, "http://"+l.Addr(), workers)
	poll.Until(t, 5*time.Second, "b serving under load with pooled connections", func() bool {
		return b.served() > 50 && l.Backends()[1].idleConns() > 0
	})

	code, body := adminCall(t, admin, "POST", "/admin/backends/"+b.addr()+"/drain", "")
	atDrain := b.served()
	if code != 200 {
		t.Fatalf("drain: %d %s", code, body)
	}
	// Requests picked before the drain answered finish; at most one per worker.
	poll.Until(t, 5*time.Second, "b's in_flight at 0", func() bool {
		st, _ := statusOf(t, admin, b.addr())
		return st.InFlight == 0
	})
	afterInFlight := b.served()
	if late := afterInFlight - atDrain; late > workers {
		t.Errorf("b executed %d requests after the drain answered, want at most %d (one in flight per worker)", late, workers)
	}
	poll.Until(t, 5*time.Second, "b's idle pooled connections closed", func() bool { return l.Backends()[1].idleConns() == 0 })
	servedA := a.served()
	poll.Until(t, 5*time.Second, "more load through a alone", func() bool { return a.served() > servedA+100 })
	if n := b.served(); n != afterInFlight {
		t.Errorf("b executed %d new requests after its drain and in_flight 0", n-afterInFlight)
	}

	if code, body := adminCall(t, admin, "DELETE", "/admin/backends/"+b.addr(), ""); code != 204 {
		t.Fatalf("DELETE: %d %s", code, body)
	}
	servedA = a.served()
	poll.Until(t, 5*time.Second, "more load after the removal", func() bool { return a.served() > servedA+100 })
	ld.stop()
	if n := b.served(); n != afterInFlight {
		t.Errorf("b executed %d requests after its drain", n-afterInFlight)
	}
	if ld.bad.Load() != 0 || ld.ok.Load() == 0 {
		t.Fatalf("%d requests failed of %d, want none: %v", ld.bad.Load(), ld.ok.Load()+ld.bad.Load(), ld.errs)
	}
	t.Logf("%d requests, none lost; b got %d before the drain, %d in flight at it", ld.ok.Load(), atDrain, afterInFlight-atDrain)
}

// TestRemovedIndexIsReusedSafely adds a backend in the place (index) of a removed one while
// the loops may still hold pooled connections to the old one: no request reaches the old one.
func TestRemovedIndexIsReusedSafely(t *testing.T) {
	a, b, c := startBackend(t, "a"), startBackend(t, "b"), startBackend(t, "c")
	l := startLB(t, loadSettings(a.addr(), b.addr()))
	admin := l.AdminAddr()
	ld := startLoad(t, "http://"+l.Addr(), 2)
	poll.Until(t, 5*time.Second, "b serving", func() bool { return b.served() > 20 })
	adminCall(t, admin, "POST", "/admin/backends/"+b.addr()+"/drain", "")
	// In flight 0, and b's count unchanged for 100ms: a request picked just before the drain (its
	// in-flight count taken a moment after the pick, on a busy CI machine) still belongs to it.
	last, since := int64(-1), time.Now()
	poll.Until(t, 5*time.Second, "b's in_flight at 0 and its count settled", func() bool {
		st, _ := statusOf(t, admin, b.addr())
		if n := b.served(); n != last || st.InFlight != 0 {
			last, since = n, time.Now()
			return false
		}
		return time.Since(since) >= 100*time.Millisecond
	})
	if code, body := adminCall(t, admin, "DELETE", "/admin/backends/"+b.addr(), ""); code != 204 {
		t.Fatalf("DELETE: %d %s", code, body)
	}
	stopped := b.served()
	if code, body := adminCall(t, admin, "PUT", "/admin/backends/"+c.addr(), ""); code != 201 {
		t.Fatalf("PUT: %d %s", code, body)
	}
	if idx := l.Backends()[1].index; idx != 1 {
		t.Fatalf("the added backend has index %d, want 1 (the removed one's)", idx)
	}
	poll.Until(t, 5*time.Second, "c serving", func() bool { return c.served() > 50 })
	ld.stop()
	if n := b.served(); n != stopped {
		t.Errorf("the removed backend got %d requests after its removal", n-stopped)
	}
	if ld.bad.Load() != 0 {
		t.Fatalf("%d requests failed: %v", ld.bad.Load(), ld.errs)
	}
}

func TestRemovedBackendFinishesItsInFlightRequest(t *testing.T) {
	a, b := startBackend(t, "a"), startBackend(t, "b")
	l := startLB(t, loadSettings(a.addr(), b.addr()))
	admin := l.AdminAddr()
	// Two slow requests at once: strict rotation gives one to each backend.
	answers := make(chan string, 2)
	for i := 0; i < 2; i++ {
		go func() {
			resp, err := client().Get(l.url("/slow"))
			if err != nil {
				answers <- err.Error()
				return
			}
			body, _ := io.ReadAll(resp.Body)
			resp.Body.Close()
			answers <- fmt.Sprintf("%d %s", resp.StatusCode, body)
		}()
	}
	poll.Until(t, 5*time.Second, "a slow request in flight at b", func() bool {
		st, _ := statusOf(t, admin, b.addr())
		return st.InFlight == 1
	})
	adminCall(t, admin, "POST", "/admin/backends/"+b.addr()+"/drain", "")
	if code, body := adminCall(t, admin, "DELETE", "/admin/backends/"+b.addr(), ""); code != 204 {
		t.Fatalf("DELETE a drained backend with a request in flight: %d %s, want 204", code, body)
	}
	for i := 0; i < 2; i++ {
		if got := <-answers; got != "200 slow" {
			t.Errorf("a request in flight at the removal got %q, want 200 slow", got)
		}
	}
}

// max_idle_per_backend bounds the idle connections kept to a backend, on either engine and
// however many event loops share the work: eight requests at once through four loops leave at
// most two connections idle, not two per loop.
func TestIdleConnectionsToABackendAreCappedAcrossLoops(t *testing.T) {
	a := startBackend(t, "a")
	set := fastSettings(a.addr())
	set.Loops = 4
	set.MaxIdlePerBackend = 2
	l := startLB(t, set)
	var wg sync.WaitGroup
	for range 8 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			c := dialLB(t, l.Addr(), 10*time.Second)
			_, _ = io.WriteString(c, "GET /slow HTTP/1.1\r\nHost: x\r\n\r\n")
			resp, err := http.ReadResponse(bufio.NewReader(c), nil)
			if err != nil || resp.StatusCode != 200 {
				t.Errorf("GET /slow: %v %v", resp, err)
				return
			}
			_, _ = io.Copy(io.Discard, resp.Body)
		}()
	}
	wg.Wait()
	b := l.Backends()[0]
	poll.Until(t, 5*time.Second, "idle connections to the backend", func() bool { return b.idleConns() >= 2 })
	if n := b.idleConns(); n > 2 {
		t.Errorf("%d idle connections to the backend, want at most max_idle_per_backend (2)", n)
	}
}
