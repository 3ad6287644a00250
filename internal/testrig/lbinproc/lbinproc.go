// Package lbinproc is the tests' one rig for an in-house load balancer inside the test process
// (lb.Server, for packages that drive it as a library or need its admin API at hand): built from
// settings with a silent logger, listening, running until the test ends. Tests that want the
// real `zero502 lb` binary use lbprocess.
package lbinproc

import (
	"context"
	"log/slog"
	"sync"
	"testing"
	"time"

	"github.com/zero502/zero502/infra/lb"
)

// stopWait bounds how long the test's end waits for a stopped LB's drain and shutdown.
const stopWait = 15 * time.Second

// LB is a running lb.Server and its stop.
type LB struct {
	*lb.Server
	cancel context.CancelFunc
	once   sync.Once
	// Done receives Run's result once the LB has stopped (its drain and shutdown done).
	Done <-chan error
}

// Stop stops the LB as SIGTERM would: its health answers 503 for the drain window while it
// still proxies, then it shuts down and Done receives Run's result. Stopping twice is harmless.
func (l *LB) Stop() { l.once.Do(l.cancel) }

// Start builds the LB of set (a silent logger before opts), listens and runs it; the test's end
// stops it and waits for it (at most stopWait), failing the test when Run ended in an error.
func Start(t testing.TB, set lb.Settings, opts ...lb.Option) *LB {
	t.Helper()
	opts = append([]lb.Option{lb.WithLogger(slog.New(slog.DiscardHandler))}, opts...)
	s, err := lb.New(set, opts...)
	if err != nil {
		t.Fatal(err)
	}
	if err := s.Listen(); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	result := make(chan error, 1)
	go func() {
		err := s.Run(ctx)
		done <- err
		result <- err
	}()
	l := &LB{Server: s, cancel: cancel, Done: done}
	t.Cleanup(func() {
		l.Stop()
		select {
		case err := <-result:
			if err != nil {
				t.Errorf("lb Run: %v", err)
			}
		case <-time.After(stopWait):
			t.Errorf("the LB did not stop within %s", stopWait)
		}
	})
	return l
}
