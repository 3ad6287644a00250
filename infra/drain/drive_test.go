package drain

import (
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/zero502/zero502/infra/clock"
	"github.com/zero502/zero502/internal/testrig/poll"
)

// steps is a Server that records what Drive asked of it.
type steps struct {
	mu   sync.Mutex
	got  []string
	idle chan struct{}
}

func (s *steps) note(w string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.got = append(s.got, w)
}

func (s *steps) Draining()             { s.note("draining") }
func (s *steps) StopAccepting()        { s.note("stop accepting") }
func (s *steps) Idle() <-chan struct{} { return s.idle }
func (s *steps) Cut() int              { s.note("cut"); return 2 }

func (s *steps) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return joinSteps(s.got)
}

func joinSteps(p []string) string { return strings.Join(p, ", ") }

// Drive keeps the window and the budget on the handshake's clock, in order, and cuts only what
// is still open when the budget ran out.
func TestDriveRunsThePhasesInOrder(t *testing.T) {
	for _, finishes := range []bool{true, false} {
		clk := clock.NewFake(t0)
		srv := &steps{idle: make(chan struct{})}
		var phases []string
		var mu sync.Mutex
		hs := Handshake{Window: 15 * time.Second, Shutdown: 10 * time.Second, Clock: clk,
			OnPhase: func(p Phase, _ time.Time) { mu.Lock(); phases = append(phases, string(p)); mu.Unlock() }}
		done := make(chan error, 1)
		go func() { done <- Drive("test", srv, hs) }()
		poll.Until(t, deadline, "the window waits on the clock", func() bool { return clk.Waiters() == 1 })
		if got := srv.String(); got != "draining" {
			t.Fatalf("during the window: %q", got)
		}
		clk.Advance(15 * time.Second)
		poll.Until(t, deadline, "the budget waits on the clock", func() bool { return clk.Waiters() == 1 })
		if finishes {
			close(srv.idle)
		} else {
			clk.Advance(10 * time.Second)
		}
		if err := <-done; err != nil {
			t.Fatal(err)
		}
		want := "draining, stop accepting"
		if !finishes {
			want += ", cut"
		}
		if got := srv.String(); got != want {
			t.Fatalf("steps (connections finish: %v): %q, want %q", finishes, got, want)
		}
		mu.Lock()
		if got := joinSteps(phases); got != "draining, stopped_accepting, done" {
			t.Fatalf("phases: %q", got)
		}
		mu.Unlock()
	}
}
