package backoff

import (
	"testing"
	"time"
)

func TestBackoffIsExponentialWithFullJitterAndACap(t *testing.T) {
	b := Backoff{Base: 100 * time.Millisecond, Cap: time.Second, Rand: maxRand{}}
	for failure, want := range []time.Duration{100, 200, 400, 800, 1000, 1000} {
		if got := b.Delay(failure); got != want*time.Millisecond {
			t.Errorf("failure %d: the longest wait is %s, want %s", failure, got, want*time.Millisecond)
		}
	}
	if got := b.Delay(1000); got != time.Second {
		t.Errorf("failure 1000: %s, want the cap", got)
	}
	if got := (Backoff{Base: 100 * time.Millisecond, Cap: time.Second, Rand: zeroRand{}}).Delay(3); got != 0 {
		t.Errorf("full jitter starts at 0, got %s", got)
	}
}

// maxRand draws the top of every range, zeroRand the bottom.
type maxRand struct{}

func (maxRand) Int64N(n int64) int64 { return n - 1 }

type zeroRand struct{}

func (zeroRand) Int64N(int64) int64 { return 0 }

func TestAcceptPauseDoublesFrom5msToASecondAndResets(t *testing.T) {
	var p AcceptPause
	for i, want := range []time.Duration{5, 10, 20, 40, 80, 160, 320, 640, 1000, 1000} {
		if got := p.Next(); got != want*time.Millisecond {
			t.Fatalf("failure %d: %s, want %s", i, got, want*time.Millisecond)
		}
	}
	p.Reset()
	if got := p.Next(); got != 5*time.Millisecond {
		t.Fatalf("after Reset: %s, want 5ms", got)
	}
}
