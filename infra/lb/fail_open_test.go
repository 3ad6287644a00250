package lb

import (
	"strings"
	"testing"
	"time"

	"github.com/zero502/zero502/internal/testrig/poll"
)

// When every backend that served fails its checks at once (a stalled host fails them all), the
// LB fails open: requests go to those backends rather than get 503, while a backend that asked
// to leave (health 503), one the admin API holds and one that never passed a check still get
// nothing. The first backend healthy again ends it.
func TestNoBackendHealthyFailsOpenToTheOnesThatLeftByChecks(t *testing.T) {
	a, b := startBackend(t, "a"), startBackend(t, "b")
	leaving := startBackend(t, "leaving")
	never := startBackend(t, "never")
	never.health.Store(500) // never passes a check
	l := startLB(t, fastSettings(a.addr(), b.addr(), leaving.addr(), never.addr()))
	states := func(want ...State) func() bool {
		return func() bool {
			for i, w := range want {
				if l.Backends()[i].State() != w {
					return false
				}
			}
			return true
		}
	}
	poll.Until(t, 5*time.Second, "a, b, leaving in rotation, never out", states(Healthy, Healthy, Healthy, Unhealthy))
	leaving.health.Store(503)
	poll.Until(t, 5*time.Second, "leaving draining", states(Healthy, Healthy, Draining, Unhealthy))
	a.health.Store(500)
	b.health.Store(500)
	poll.Until(t, 10*time.Second, "a and b out by failed checks", states(Unhealthy, Unhealthy, Draining, Unhealthy))
	// the rotation follows the states a moment later
	poll.Until(t, 5*time.Second, "no backend healthy, two left by checks: the rotation fails open", l.rot.failingOpen)
	_, metrics := adminCall(t, l.AdminAddr(), "GET", "/metrics", "")
	if !strings.Contains(metrics, "zero502_lb_failing_open 1") {
		t.Errorf("/metrics lacks zero502_lb_failing_open 1")
	}

	c := client()
	before := leaving.served() + never.served()
	for i := 0; i < 20; i++ {
		if code, body, _ := get(t, c, l.url("/")); code != 200 || (body != "a" && body != "b") {
			t.Fatalf("GET %d while failing open: %d %q, want 200 from a or b", i, code, body)
		}
		resp, err := c.Post(l.url("/orders"), "application/json", strings.NewReader(`{"n":1}`))
		if err != nil {
			t.Fatalf("POST %d: %v", i, err)
		}
		resp.Body.Close()
		if resp.StatusCode != 201 {
			t.Fatalf("POST %d while failing open: %d, want 201", i, resp.StatusCode)
		}
	}
	if a.served() == 0 || b.served() == 0 {
		t.Errorf("failing open went round a (%d requests) and b (%d)? want both", a.served(), b.served())
	}
	if n := leaving.served() + never.served() - before; n != 0 {
		t.Fatalf("%d requests went to the draining or never-healthy backend while failing open", n)
	}

	// the admin API's drain holds a backend out of the fail-open set too
	if code, body := adminCall(t, l.AdminAddr(), "POST", "/admin/backends/"+b.addr()+"/drain", ""); code != 200 {
		t.Fatalf("drain b: %d %s", code, body)
	}
	bBefore := b.served()
	for i := 0; i < 6; i++ {
		if code, body, _ := get(t, c, l.url("/")); code != 200 || body != "a" {
			t.Fatalf("GET %d with b drained: %d %q, want 200 from a", i, code, body)
		}
	}
	if b.served() != bBefore {
		t.Fatalf("b got %d requests after its admin drain", b.served()-bBefore)
	}

	// a healthy again: the rotation is a alone, the fail-open set is done with
	a.health.Store(200)
	// (the rotation follows a's state change a moment later: both are waited for)
	poll.Until(t, 10*time.Second, "a back in rotation and the fail-open set done with", func() bool {
		return l.Backends()[0].InRotation() && !l.rot.failingOpen()
	})

	// every backend that served dead: a refused connect to one that fails open is what the checks
	// said, no backend healthy: 503 with Retry-After, a POST too (not 502)
	a.health.Store(500)
	poll.Until(t, 10*time.Second, "a out again", states(Unhealthy))
	a.srv.CloseClientConnections()
	a.srv.Close()
	code, _, h := get(t, c, l.url("/"))
	if code != 503 || h.Get("Retry-After") == "" {
		t.Fatalf("GET with the only fail-open backend dead: %d (Retry-After %q), want 503 with Retry-After", code, h.Get("Retry-After"))
	}
	resp, err := c.Post(l.url("/orders"), "application/json", strings.NewReader(`{"n":1}`))
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != 503 {
		t.Fatalf("POST with the only fail-open backend dead: %d, want 503", resp.StatusCode)
	}
}
