package deployer

import (
	"fmt"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/zero502/zero502/infra/hostlock"
)

// The lock host keeps the record of a deployer on another machine: that deployer's pid means
// nothing there (here: a process that has exited), so the record names it in the command and
// carries the pid of the process holding the lock on the lock host; without that, the holder
// reads "an unknown process".
func TestRemoteDeployersHolderRecordSurvivesOnTheLockHost(t *testing.T) {
	t.Parallel()
	gone := exec.Command("true")
	if err := gone.Run(); err != nil {
		t.Fatal(err)
	}
	there := hostlock.Holder{Who: "ci@runner-7", Command: "zero502 deploy --version v2", PID: gone.Process.Pid, Since: time.Now()}
	path := filepath.Join(t.TempDir(), "fleet.lock")
	l, err := hostlock.TryAcquire(path, HeldHereFor(there))
	if err != nil {
		t.Fatal(err)
	}
	defer l.Release()
	held, h, err := hostlock.Held(path)
	if err != nil || !held {
		t.Fatalf("Held = %v, %v; want the lock held", held, err)
	}
	for _, want := range []string{"ci@runner-7", "zero502 deploy --version v2", fmt.Sprintf("pid %d on its machine", there.PID)} {
		if !strings.Contains(h.String(), want) {
			t.Errorf("holder on the lock host reads %q; want it to say %q", h, want)
		}
	}
}
