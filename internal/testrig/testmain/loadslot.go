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
// user on the machine.
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
func UnderLoad(t testing.TB) {
	t.Helper()
	if holding(t.Name()) {
		return
	}
	start, said := time.Now(), false
	for {
		if l := tryAnySlot(LoadSlots); l != nil {
			slots.Lock()
			slots.held[t.Name()] = true
			slots.Unlock()
			t.Cleanup(func() {
				slots.Lock()
				delete(slots.held, t.Name())
				slots.Unlock()
				_ = l.Unlock()
			})
			if said {
				t.Logf("testmain: waited %s for a slot under load", time.Since(start).Round(time.Millisecond))
			}
			return
		}
		if !said && time.Since(start) > time.Second {
			t.Logf("testmain: all %d slots under load are taken (%s…); waiting", LoadSlots, LoadSlotPath(0))
			said = true
		}
		time.Sleep(slotPoll)
	}
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

// tryAnySlot takes the first free one of n slots, or returns nil when all are taken (or cannot
// be locked: a slot whose file cannot be made is skipped, never waited for).
func tryAnySlot(n int) *flock.Flock {
	for i := range n {
		l := flock.New(LoadSlotPath(i))
		if ok, err := l.TryLock(); err == nil && ok {
			return l
		}
	}
	return nil
}
