package lb

import (
	"context"
	"sync"
	"testing"
	"time"

	"github.com/zero502/zero502/infra/clock"
	"github.com/zero502/zero502/infra/standing"
	"github.com/zero502/zero502/internal/testrig/poll"
)

var zeroTime = time.Date(2026, 11, 30, 15, 0, 0, 0, time.UTC)

// TestCheckerRunsOnTheClockAndKeepsCheckingEjectedBackends drives the LB's checker (the state
// machine's own tests are in infra/standing) with a fake clock: one check at start, one per interval, also while the backend is out.
func TestCheckerRunsOnTheClockAndKeepsCheckingEjectedBackends(t *testing.T) {
	fc := clock.NewFake(zeroTime)
	var mu sync.Mutex
	answers := []Verdict{{Status: 500}, {Status: 500}, {Status: 200}, {Status: 200}}
	checks := 0
	var moves []Transition
	c := &checker{
		clock: fc, every: time.Second, th: standing.Thresholds{Unhealthy: 2, Healthy: 2},
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
		poll.Until(t, 5*time.Second, "checker waits on the clock", func() bool { return fc.Waiters() == 1 && count() == want })
		if want == 2 && b.State() != Unhealthy {
			t.Fatalf("after two 500s: %s", b.State())
		}
		fc.Advance(time.Second)
	}
	poll.Until(t, 5*time.Second, "back in rotation", func() bool { return b.State() == Healthy })
	mu.Lock()
	defer mu.Unlock()
	if len(moves) != 2 || moves[0].To != Unhealthy || moves[1].To != Healthy || !moves[1].At.Equal(zeroTime.Add(3*time.Second)) {
		t.Fatalf("transitions: %+v", moves)
	}
}
