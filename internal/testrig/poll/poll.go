// Package poll is the tests' one wait for a condition that another goroutine, a child process or
// a server makes true in its own time: it asks the condition again every few milliseconds until
// it holds, and fails the test with what it waited for once a deadline of the caller's passes.
// A test that waits this way never sleeps a fixed time hoping the state has arrived.
//
// A wait that needs more — a duration it returns, an interval the test picks, a fake clock —
// stays with its test.
package poll

import (
	"testing"
	"time"
)

// Interval is how long a wait sleeps between two asks of its condition: short enough that a test
// goes on soon after the state arrives, long enough that the wait is not a busy loop stealing the
// core from the goroutine it waits for.
const Interval = 5 * time.Millisecond

// Until asks cond until it returns true, and fails the test with t.Fatalf("after <within>:
// <what>") if it is still false once within has passed. cond is asked at least once, and once
// more after the deadline, so a state that arrives while the wait sleeps still counts. Like every
// Fatal, Until must be called from the goroutine running the test.
func Until(t testing.TB, within time.Duration, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(within)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("after %s: %s", within, what)
		}
		time.Sleep(Interval)
	}
}

// UntilNil is Until for a condition that explains itself: it asks check until it returns nil, and
// fails the test with t.Fatalf("after <within>: <what>: <check's last error>") if it still returns
// an error once within has passed, so the failure says what the state was, not only that it was
// wrong.
func UntilNil(t testing.TB, within time.Duration, what string, check func() error) {
	t.Helper()
	deadline := time.Now().Add(within)
	for {
		err := check()
		if err == nil {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("after %s: %s: %v", within, what, err)
		}
		time.Sleep(Interval)
	}
}
