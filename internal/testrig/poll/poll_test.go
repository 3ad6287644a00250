package poll

import (
	"errors"
	"fmt"
	"runtime"
	"sync/atomic"
	"testing"
	"time"
)

// recorder is a testing.TB whose Fatalf records the message and ends its goroutine, as the real
// one does, so a test can watch a wait fail without failing itself.
type recorder struct {
	testing.TB
	failed string
}

func (r *recorder) Helper() {}

func (r *recorder) Fatalf(format string, args ...any) {
	r.failed = fmt.Sprintf(format, args...)
	runtime.Goexit()
}

// run calls wait with a recorder in a goroutine of its own, the way the testing package runs a
// test, and returns what the wait failed with ("" if it returned).
func run(wait func(testing.TB)) string {
	r := &recorder{}
	done := make(chan struct{})
	go func() {
		defer close(done)
		wait(r)
	}()
	<-done
	return r.failed
}

// TestBothWaitsReturnOnceTheConditionHolds runs Until and UntilNil on a condition that first holds
// at its third ask: each returns there, without failing and without asking again.
func TestBothWaitsReturnOnceTheConditionHolds(t *testing.T) {
	waits := map[string]func(tb testing.TB, holds func() bool){
		"Until": func(tb testing.TB, holds func() bool) { Until(tb, 5*time.Second, "the third ask", holds) },
		"UntilNil": func(tb testing.TB, holds func() bool) {
			UntilNil(tb, 5*time.Second, "the third ask", func() error {
				if !holds() {
					return errors.New("not yet")
				}
				return nil
			})
		},
	}
	for name, wait := range waits {
		t.Run(name, func(t *testing.T) {
			var asks atomic.Int32
			failed := run(func(tb testing.TB) { wait(tb, func() bool { return asks.Add(1) == 3 }) })
			if failed != "" {
				t.Fatalf("failed with %q", failed)
			}
			if n := asks.Load(); n != 3 {
				t.Fatalf("asked %d times, want 3", n)
			}
		})
	}
}

func TestUntilSeesAStateAnotherGoroutineMakes(t *testing.T) {
	var ready atomic.Bool
	time.AfterFunc(20*time.Millisecond, func() { ready.Store(true) })
	Until(t, 5*time.Second, "the timer's flag", ready.Load)
}

func TestUntilFailsWithWhatItWaitedForAfterTheDeadline(t *testing.T) {
	start := time.Now()
	failed := run(func(tb testing.TB) {
		Until(tb, 30*time.Millisecond, "a state that never comes", func() bool { return false })
	})
	if want := "after 30ms: a state that never comes"; failed != want {
		t.Fatalf("failed with %q, want %q", failed, want)
	}
	if took := time.Since(start); took < 30*time.Millisecond {
		t.Fatalf("gave up after %s, before its deadline", took)
	}
}

func TestUntilSleepsBetweenAsks(t *testing.T) {
	var asks atomic.Int32
	run(func(tb testing.TB) {
		Until(tb, 50*time.Millisecond, "never", func() bool { asks.Add(1); return false })
	})
	// 50 ms at one ask per Interval is about 11 asks; a busy loop would make thousands.
	if n := asks.Load(); n > 50 {
		t.Fatalf("asked %d times in 50ms: a busy loop", n)
	}
}

func TestUntilNilFailsWithTheChecksLastError(t *testing.T) {
	var asks atomic.Int32
	failed := run(func(tb testing.TB) {
		UntilNil(tb, 30*time.Millisecond, "the count", func() error {
			return fmt.Errorf("ask %d", asks.Add(1))
		})
	})
	want := fmt.Sprintf("after 30ms: the count: ask %d", asks.Load())
	if failed != want {
		t.Fatalf("failed with %q, want %q", failed, want)
	}
}
