package clock

import (
	"testing"
	"time"
)

func TestFakeFiresOnlyWhenDue(t *testing.T) {
	f := NewFake(time.Unix(0, 0))
	ch := f.After(15 * time.Second)
	f.Advance(14 * time.Second)
	select {
	case <-ch:
		t.Fatal("fired at 14s of a 15s wait")
	default:
	}
	f.Advance(time.Second)
	select {
	case at := <-ch:
		if !at.Equal(time.Unix(15, 0)) {
			t.Fatalf("fired at %v, want 15s", at)
		}
	default:
		t.Fatal("did not fire at 15s")
	}
	if f.Waiters() != 0 {
		t.Fatalf("%d waiters left", f.Waiters())
	}
}
