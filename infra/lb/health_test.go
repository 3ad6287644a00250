package lb

import (
	"context"
	"errors"
	"sync"
	"testing"
	"time"

	"github.com/zero502/zero502/infra/clock"
)

var zeroTime = time.Date(2026, 11, 30, 15, 0, 0, 0, time.UTC)

func TestHealthStateMachine(t *testing.T) {
	ok := Verdict{Status: 200}
	s503 := Verdict{Status: 503}
	s500 := Verdict{Status: 500}
	refused := Verdict{Err: errors.New("connect: connection refused")}
	th := thresholds{unhealthy: 2, healthy: 2}
	for _, tc := range []struct {
		name     string
		verdicts []Verdict
		want     State
	}{
		{"healthy stays healthy", []Verdict{ok, ok}, Healthy},
		{"one failure is not enough", []Verdict{refused}, Healthy},
		{"two failures take it out", []Verdict{refused, s500}, Unhealthy},
		{"a success resets the streak", []Verdict{refused, ok, refused}, Healthy},
		{"503 drains at once", []Verdict{s503}, Draining},
		{"503 keeps draining", []Verdict{s503, s503, s503}, Draining},
		{"draining then refused twice is unhealthy", []Verdict{s503, refused, refused}, Unhealthy},
		{"one 200 is not enough to come back", []Verdict{refused, refused, ok}, Unhealthy},
		{"two 200 bring it back", []Verdict{refused, refused, ok, ok}, Healthy},
		{"drained backend comes back after two 200", []Verdict{s503, ok, ok}, Healthy},
		{"unhealthy then 503 is draining", []Verdict{refused, refused, s503}, Draining},
	} {
		t.Run(tc.name, func(t *testing.T) {
			b := newBackend("x", 0, zeroTime)
			now := zeroTime
			for _, v := range tc.verdicts {
				now = now.Add(time.Second)
				b.record(v, now, th)
			}
			if got := b.State(); got != tc.want {
				t.Fatalf("after %v: %s, want %s", tc.verdicts, got, tc.want)
			}
			if b.healthy.Load() != (tc.want == Healthy) {
				t.Fatalf("rotation flag disagrees with state %s", tc.want)
			}
		})
	}
}

func TestPassiveEjectionNeedsHealthyThresholdToReturn(t *testing.T) {
	b := newBackend("x", 0, zeroTime)
	th := thresholds{unhealthy: 2, healthy: 2}
	tr, moved := b.eject("connect failed", zeroTime.Add(time.Second))
	if !moved || tr.To != Unhealthy || tr.Reason != "passive: connect failed" {
		t.Fatalf("eject: %+v %v", tr, moved)
	}
	b.record(Verdict{Status: 200}, zeroTime.Add(2*time.Second), th)
	if b.State() != Unhealthy {
		t.Fatal("one 200 after a passive ejection must not be enough")
	}
	b.record(Verdict{Status: 200}, zeroTime.Add(3*time.Second), th)
	st := b.Status()
	if st.State != Healthy || !st.InRotation || len(st.Transitions) != 2 || !st.Since.Equal(zeroTime.Add(3*time.Second)) {
		t.Fatalf("status after recovery: %+v", st)
	}
}

func TestTransitionsKeepTheLastTwenty(t *testing.T) {
	b := newBackend("x", 0, zeroTime)
	th := thresholds{unhealthy: 1, healthy: 1}
	now := zeroTime
	for i := 0; i < 30; i++ {
		now = now.Add(time.Second)
		b.record(Verdict{Status: 500}, now, th)
		now = now.Add(time.Second)
		b.record(Verdict{Status: 200}, now, th)
	}
	st := b.Status()
	if len(st.Transitions) != 20 || !st.Transitions[19].At.Equal(now) {
		t.Fatalf("transitions: %d, last %v", len(st.Transitions), st.Transitions[len(st.Transitions)-1])
	}
}

// TestCheckerRunsOnTheClockAndKeepsCheckingEjectedBackends drives the checker loop with a fake
// clock: one check at start, one per interval, also while the backend is out.
func TestCheckerRunsOnTheClockAndKeepsCheckingEjectedBackends(t *testing.T) {
	fc := clock.NewFake(zeroTime)
	var mu sync.Mutex
	answers := []Verdict{{Status: 500}, {Status: 500}, {Status: 200}, {Status: 200}}
	checks := 0
	var moves []Transition
	c := &checker{
		clock: fc, every: time.Second, th: thresholds{unhealthy: 2, healthy: 2},
		probe: func(ctx context.Context, b *Backend) Verdict {
			mu.Lock()
			defer mu.Unlock()
			v := answers[min(checks, len(answers)-1)]
			checks++
			return v
		},
		changed: func(b *Backend, tr Transition) {
			mu.Lock()
			defer mu.Unlock()
			moves = append(moves, tr)
		},
	}
	b := newBackend("x", 0, zeroTime)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	go c.run(ctx, b)
	count := func() int { mu.Lock(); defer mu.Unlock(); return checks }
	for want := 1; want <= 4; want++ {
		eventually(t, 5*time.Second, "checker waits on the clock", func() bool { return fc.Waiters() == 1 && count() == want })
		if want == 2 && b.State() != Unhealthy {
			t.Fatalf("after two 500s: %s", b.State())
		}
		fc.Advance(time.Second)
	}
	eventually(t, 5*time.Second, "back in rotation", func() bool { return b.State() == Healthy })
	mu.Lock()
	defer mu.Unlock()
	if len(moves) != 2 || moves[0].To != Unhealthy || moves[1].To != Healthy || !moves[1].At.Equal(zeroTime.Add(3*time.Second)) {
		t.Fatalf("transitions: %+v", moves)
	}
}
