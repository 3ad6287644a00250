package startgc

import (
	"os"
	"os/exec"
	"runtime/debug"
	"strconv"
	"testing"
	"time"

	"github.com/zero502/zero502/internal/testrig/poll"
)

// percent is the collector's GOGC now (set back as it was).
func percent() int {
	p := debug.SetGCPercent(-1)
	debug.SetGCPercent(p)
	return p
}

// The package's init raised GOGC to initPercent, and restoring gives back exactly the GOGC the
// process was started with: the environment's (GOGC=off included), 100 when unset. Each case
// runs in a child test binary started with that environment, since init runs once per process.
func TestInitRaisesGOGCAndRestoreGivesBackTheEnvironments(t *testing.T) {
	if want := os.Getenv("STARTGC_TEST_WANT"); want != "" {
		if got := percent(); got != initPercent {
			t.Fatalf("GOGC after init %d, want %d", got, initPercent)
		}
		restoreIn(0)
		w, _ := strconv.Atoi(want)
		poll.Until(t, 10*time.Second, "GOGC given back", func() bool { return percent() == w })
		return
	}
	for _, c := range []struct{ env, want string }{{"", "100"}, {"50", "50"}, {"off", "-1"}, {"250", "250"}} {
		cmd := exec.Command(os.Args[0], "-test.run=^TestInitRaisesGOGCAndRestoreGivesBackTheEnvironments$", "-test.count=1")
		cmd.Env = append(os.Environ(), "STARTGC_TEST_WANT="+c.want, "GOGC="+c.env) // "": as unset
		if out, err := cmd.CombinedOutput(); err != nil {
			t.Errorf("GOGC=%q: %v\n%s", c.env, err, out)
		}
	}
}
