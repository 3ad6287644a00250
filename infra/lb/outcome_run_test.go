package lb

import (
	"testing"
)

// A target's counters say when they started (adminapi.Outcomes.CountingSince): the same in
// every snapshot while it stays, another once it was removed and added again, so a window over
// both runs is refused (adminapi.Window) rather than diffed as one.
func TestATargetsCountersSayWhenTheyStarted(t *testing.T) {
	stable, canary := startBackend(t, "stable"), startBackend(t, "canary")
	l := startLB(t, fastSettings(stable.addr()))
	admin := l.AdminAddr()
	if code, body := adminCall(t, admin, "PUT", "/admin/backends/"+canary.addr(), ""); code != 201 {
		t.Fatalf("PUT canary: %d %s", code, body)
	}
	inRotation(t, admin, stable.addr(), canary.addr())
	first, _ := statusOf(t, admin, canary.addr())
	sequence(t, l, 10)
	again, _ := statusOf(t, admin, canary.addr())
	if first.Outcomes.CountingSince.IsZero() || !again.Outcomes.CountingSince.Equal(first.Outcomes.CountingSince) {
		t.Fatalf("counting since %v, then %v: want one start, kept while the target stays", first.Outcomes.CountingSince, again.Outcomes.CountingSince)
	}
	adminCall(t, admin, "POST", "/admin/backends/"+canary.addr()+"/drain", "")
	if code, body := adminCall(t, admin, "DELETE", "/admin/backends/"+canary.addr(), ""); code/100 != 2 {
		t.Fatalf("DELETE canary: %d %s", code, body)
	}
	if code, body := adminCall(t, admin, "PUT", "/admin/backends/"+canary.addr(), ""); code != 201 {
		t.Fatalf("PUT canary again: %d %s", code, body)
	}
	readded, _ := statusOf(t, admin, canary.addr())
	if !readded.Outcomes.CountingSince.After(first.Outcomes.CountingSince) {
		t.Fatalf("added again: counting since %v, want after the first run's %v", readded.Outcomes.CountingSince, first.Outcomes.CountingSince)
	}
}
