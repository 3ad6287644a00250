//go:build unix

package stopsignal

import (
	"context"
	"errors"
	"os"
	"syscall"
	"testing"
	"time"
)

// The test sends the signals to its own process: a handler that is not installed would kill it.
func TestContextEndsOnEachStopSignal(t *testing.T) {
	for _, tc := range []struct {
		name string
		sig  syscall.Signal
		also []os.Signal
	}{
		{"SIGTERM", syscall.SIGTERM, nil},
		{"interrupt", syscall.SIGINT, nil},
		{"an extra signal", syscall.SIGHUP, []os.Signal{syscall.SIGHUP}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ctx, stop := Context(context.Background(), tc.also...)
			defer stop()
			if err := syscall.Kill(os.Getpid(), tc.sig); err != nil {
				t.Fatal(err)
			}
			select {
			case <-ctx.Done():
			case <-time.After(10 * time.Second):
				t.Fatalf("%s did not end the context", tc.sig)
			}
		})
	}
}

// The context derives from its parent: a command's own context (a test's, cobra's) still ends it.
func TestContextEndsWithItsParent(t *testing.T) {
	parent, cancel := context.WithCancel(context.Background())
	ctx, stop := Context(parent)
	defer stop()
	if ctx.Err() != nil {
		t.Fatal("done before anything happened")
	}
	cancel()
	<-ctx.Done()
	if !errors.Is(ctx.Err(), context.Canceled) {
		t.Fatalf("ctx.Err() = %v, want context.Canceled", ctx.Err())
	}
}
