package standing

import (
	"errors"
	"testing"
	"time"
)

// A configured target whose first check failed (a slow start, a busy host) enters rotation at
// its first good check, not after healthy_threshold of them; once in rotation, the thresholds
// apply as always.
func TestAConfiguredTargetThatFailedItsFirstCheckEntersAtItsFirstGoodOne(t *testing.T) {
	now := time.Unix(1e9, 0)
	var b Standing
	b.StartAwaitingFirstCheck(now)
	if b.InRotation() || b.State() != Unhealthy {
		t.Fatalf("before its first check: %s, in rotation %v; want unhealthy, out", b.State(), b.InRotation())
	}
	th := Thresholds{Unhealthy: 2, Healthy: 3}
	refused := Verdict{Err: errors.New("connect: connection refused")}
	steps := []struct {
		v    Verdict
		want State
	}{
		{refused, Unhealthy},            // the first check: out
		{refused, Unhealthy},            // still out
		{Verdict{Status: 200}, Healthy}, // its first good check puts it in
		{refused, Healthy},              // in rotation now: unhealthy_threshold counts
		{refused, Unhealthy},
		{Verdict{Status: 200}, Unhealthy}, // and healthy_threshold to come back
		{Verdict{Status: 200}, Unhealthy},
		{Verdict{Status: 200}, Healthy},
	}
	for i, st := range steps {
		now = now.Add(time.Second)
		b.Record(st.v, now, th)
		if got := b.State(); got != st.want {
			t.Fatalf("step %d (%+v): %s, want %s", i, st.v, got, st.want)
		}
	}
}

// A configured target's first 503 makes it draining at once: it asked to leave.
func TestAConfiguredTargetWhoseFirstCheckIs503StartsDraining(t *testing.T) {
	var b Standing
	now := time.Unix(1e9, 0)
	b.StartAwaitingFirstCheck(now)
	if tr, ok := b.Record(Verdict{Status: 503}, now.Add(time.Second), Thresholds{Unhealthy: 2, Healthy: 2}); !ok || tr.To != Draining {
		t.Fatalf("first check 503: %+v %v, want a transition to draining", tr, ok)
	}
	if tr, ok := b.Record(Verdict{Status: 200}, now.Add(2*time.Second), Thresholds{Unhealthy: 2, Healthy: 2}); !ok || tr.To != Healthy {
		t.Fatalf("then a 200: %+v %v, want in rotation at its first good check", tr, ok)
	}
}
