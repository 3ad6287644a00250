package lb

import (
	"strings"
	"testing"
	"time"
)

// The budget allows the floor per second of its window plus the share of the requests of the
// window, and forgets what is older than the window.
func TestTheResendBudgetIsAShareOfTheRequestsOfItsWindow(t *testing.T) {
	b := newResendBudget(10*time.Second, 0.2, 0.5) // a floor of 5 over the window
	t0 := time.Unix(1_000_000, 0)
	take := func(at time.Time) int {
		n := 0
		for b.withdraw(at) {
			n++
		}
		return n
	}
	if n := take(t0); n != 5 {
		t.Fatalf("with no requests, %d resends; want the floor, 5", n)
	}
	for range 100 {
		b.deposit(t0.Add(time.Second))
	}
	if n := take(t0.Add(2 * time.Second)); n != 20 {
		t.Fatalf("after 100 requests, %d more resends; want 20 (20%% of them)", n)
	}
	if n := take(t0.Add(9 * time.Second)); n != 0 {
		t.Fatalf("9s on, %d more resends; want none (the window's budget is spent)", n)
	}
	// 10s on, the first second (its 5 resends) left the window; 11s on, the requests did too
	if n := take(t0.Add(10 * time.Second)); n != 5 {
		t.Fatalf("once the first second's resends left the window, %d resends; want 5", n)
	}
	if n := take(t0.Add(11 * time.Second)); n != 0 {
		t.Fatalf("once the requests left the window with their resends still in it, %d resends; want 0", n)
	}
}

// A GET waiting on an ejected backend that the budget cannot pay for is not resent: it waits
// where it is (header_timeout, 504, as before there were resends), and is counted as over the
// budget.
func TestAResendOverTheBudgetWaitsWhereItIs(t *testing.T) {
	h, a := startCutHost(t, false), startBackend(t, "a")
	set := resendSettings(h, a, 4*time.Second)
	l := startLB(t, set, func(s *Server) { s.budget = newResendBudget(10*time.Second, 0, 0) })
	got := cutWhileTwoWait(t, l, h, "GET", "/", "")
	if got[0].code != 200 || got[0].body != "a" || got[1].code != 504 {
		t.Fatalf("GETs: %d %q and %d; want 200 from a and 504 (no budget to resend the other)", got[0].code, got[0].body, got[1].code)
	}
	if at := ejectedByChecks(t, l, h.addr); !at.Before(got[1].at) {
		t.Fatalf("the cut host left rotation at %s, after the 504 (%s): the test proves nothing", at, got[1].at)
	}
	if m := resentMetric(t, l); m != "zero502_lb_resent_after_eject_total 0" {
		t.Fatalf("%s, want 0", m)
	}
	_, body, _ := get(t, client(), "http://"+l.AdminAddr()+"/metrics")
	if !strings.Contains(body, "\nzero502_lb_resends_over_budget_total 1\n") {
		t.Fatalf("/metrics lacks zero502_lb_resends_over_budget_total 1:\n%s", body)
	}
}
