package testmain

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/gofrs/flock"
)

// LoadSlots is how many tests under load run on the machine at once, whichever test binary they
// are in. A test under load judges zero failed requests through real processes with fast
// health checks (a fleet, an LB and a load generator: the deployer's tests, the demo's). go test
// runs packages GOMAXPROCS at a time, so on 2 cores the deployer's deploys and the demo's ran
// side by side, and on a machine already busy five of them starved 100 ms health checks. Four
// at once is what the deployer's suite alone runs and passes with under stress-ng --cpu 2.
const LoadSlots = 4

// slotPoll is how often a test waiting for a slot tries the slots again.
const slotPoll = 25 * time.Millisecond

// LoadSlotPath is the flock of slot i (0 ≤ i < LoadSlots), shared by every test binary of this
// user on the machine; slot -1 is the gate the waiters queue on.
func LoadSlotPath(i int) string {
	return filepath.Join(os.TempDir(), fmt.Sprintf("zero502-tests-under-load-%d-%d.lock", os.Getuid(), i))
}

var slots = struct {
	sync.Mutex
	held map[string]bool // names of the tests holding a slot in this binary
}{held: map[string]bool{}}

// UnderLoad holds one of the LoadSlots machine-wide slots from now until t ends, waiting (polling
// with t's own deadline, the binary's -timeout) while every slot is taken. A test that already
// holds one, or whose parent does, takes none: a test never waits on a slot its own tree holds.
func UnderLoad(t testing.TB) { underLoad(t, 1) }

// UnderHeavyLoad is UnderLoad for a test whose load is heavier than a deploy's own trickle (the
// demo: 400 requests a second through an LB of two event loops): it holds half the slots.
func UnderHeavyLoad(t testing.TB) { underLoad(t, LoadSlots/2) }

// underLoad holds n slots until t ends. Waiters queue on a gate flock, so that one needing two
// slots is not overtaken forever by tests that each need one: whoever holds the gate takes the
// next slots freed.
func underLoad(t testing.TB, n int) {
	t.Helper()
	if holding(t.Name()) {
		return
	}
	start := time.Now()
	held := tryTake(n)
	if held == nil {
		gate := flock.New(LoadSlotPath(-1))
		if err := gate.Lock(); err != nil {
			t.Fatalf("testmain: queue for a slot under load on %s: %v", LoadSlotPath(-1), err)
		}
		for held = tryTake(n); held == nil; held = tryTake(n) {
			time.Sleep(slotPoll)
		}
		_ = gate.Unlock()
		t.Logf("testmain: waited %s for %d slot(s) under load", time.Since(start).Round(time.Millisecond), n)
	}
	slots.Lock()
	slots.held[t.Name()] = true
	slots.Unlock()
	t.Cleanup(func() {
		slots.Lock()
		delete(slots.held, t.Name())
		slots.Unlock()
		for _, l := range held {
			_ = l.Unlock()
		}
	})
}

// holding reports whether the test named name, or one of its parents, holds a slot.
func holding(name string) bool {
	slots.Lock()
	defer slots.Unlock()
	for held := range slots.held {
		if name == held || strings.HasPrefix(name, held+"/") {
			return true
		}
	}
	return false
}

// tryTake takes n free slots at once, or none (nil) when fewer are free: a test never holds some
// while it waits for more, so two waiters cannot hold each other up. A slot whose file cannot be
// locked is skipped, never waited for.
func tryTake(n int) []*flock.Flock {
	var held []*flock.Flock
	for i := 0; i < LoadSlots && len(held) < n; i++ {
		l := flock.New(LoadSlotPath(i))
		if ok, err := l.TryLock(); err == nil && ok {
			held = append(held, l)
		}
	}
	if len(held) < n {
		for _, l := range held {
			_ = l.Unlock()
		}
		return nil
	}
	return held
}
