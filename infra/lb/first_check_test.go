package lb

import (
	"strings"
	"testing"
)

// The start-first case after an LB restart: the configuration names both ports of a service
// and only one runs. No request may go to a backend whose first check failed, not even the
// first request, which can arrive while the first round of checks is still under way.
func TestConfiguredBackendsEnterRotationByTheirFirstCheck(t *testing.T) {
	live := startBackend(t, "live")
	sick := startBackend(t, "sick") // listens, but its health says 500
	sick.health.Store(500)
	leaving := startBackend(t, "leaving") // its health says 503: it is draining
	leaving.health.Store(503)
	dead := deadAddr(t) // nothing listens: the idle port of a start-first pair
	l := startLB(t, fastSettings(dead, sick.addr(), leaving.addr(), live.addr()), slowChecks())
	c := client()
	for i := 0; i < 20; i++ {
		if code, body, _ := get(t, c, l.url("/")); code != 200 || body != "live" {
			t.Fatalf("GET %d: %d %q, want 200 from live", i, code, body)
		}
		resp, err := c.Post(l.url("/orders"), "application/json", strings.NewReader(`{"n":1}`))
		if err != nil {
			t.Fatalf("POST %d: %v", i, err)
		}
		resp.Body.Close()
		if resp.StatusCode != 201 {
			t.Fatalf("POST %d: %d, want 201 from live", i, resp.StatusCode)
		}
	}
	if n := sick.hits.Load() + sick.posts.Load() + leaving.hits.Load() + leaving.posts.Load(); n != 0 {
		t.Fatalf("%d requests went to backends whose first check failed", n)
	}
	if live.posts.Load() != 20 {
		t.Fatalf("live executed %d POSTs, want 20", live.posts.Load())
	}
	if l.ejections.Load() != 0 || l.retries.Load() != 0 {
		t.Fatalf("ejections %d retries %d, want 0: no request may have been tried on the dead backend", l.ejections.Load(), l.retries.Load())
	}
	for i, want := range []State{Unhealthy, Unhealthy, Draining, Healthy} {
		st := l.Backends()[i].Status()
		if st.State != want || len(st.Transitions) == 0 || !strings.HasPrefix(st.Transitions[0].Reason, "first health check: ") {
			t.Errorf("backend %d (%s): state %s, transitions %+v; want %s by its first check", i, st.Address, st.State, st.Transitions, want)
		}
		if total := st.Requests["2xx"] + st.Requests["5xx"] + st.Requests["errors"]; want != Healthy && total != 0 {
			t.Errorf("backend %d (%s) counted %d requests, want 0", i, st.Address, total)
		}
	}
}

// onlyFirstCheck says ts holds nothing but the transition of the first health check.
func onlyFirstCheck(ts []Transition) bool {
	return len(ts) == 1 && strings.HasPrefix(ts[0].Reason, "first health check: ")
}

// One good check puts a configured backend in rotation at startup, where an admin-added one
// needs healthy_threshold of them.
func TestOneGoodFirstCheckIsEnoughForAConfiguredBackend(t *testing.T) {
	a := startBackend(t, "a")
	set := fastSettings(a.addr())
	set.HealthyThreshold = 5
	l := startLB(t, set, slowChecks())
	if code, body, _ := get(t, client(), l.url("/")); code != 200 || body != "a" {
		t.Fatalf("first request: %d %q, want 200 from a", code, body)
	}
	if st := l.Backends()[0].Status(); st.State != Healthy {
		t.Fatalf("after one good check: %s, want healthy", st.State)
	}
}
