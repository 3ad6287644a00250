package testmain_test

import (
	"flag"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/gofrs/flock"

	"github.com/zero502/zero502/internal/testrig/poll"
	"github.com/zero502/zero502/internal/testrig/testmain"
)

// childEnv turns TestChildStartsAProcessAndHangs on in the child test binary the tests run.
const childEnv = "ZERO502_TESTMAIN_CHILD_PIDFILE"

func TestMain(m *testing.M) {
	os.Exit(testmain.Run(m, testmain.Options{Parallel: 5}))
}

// In the child only: starts a long sleep the way a test starts a service (Track kills it), then
// hangs past the test binary's -timeout.
func TestChildStartsAProcessAndHangs(t *testing.T) {
	pidFile := os.Getenv(childEnv)
	if pidFile == "" {
		t.Skip("run by TestATimedOutTestBinaryLeavesNoProcessBehind")
	}
	cmd := exec.Command("sleep", "600")
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	testmain.Track(t, func() { _ = cmd.Process.Kill(); _ = cmd.Wait() })
	if err := os.WriteFile(pidFile, []byte(strconv.Itoa(cmd.Process.Pid)), 0o600); err != nil {
		t.Fatal(err)
	}
	select {} // until the -timeout panic ends the binary
}

func TestATimedOutTestBinaryLeavesNoProcessBehind(t *testing.T) {
	pidFile := filepath.Join(t.TempDir(), "pid")
	cmd := exec.Command(os.Args[0], "-test.run", "^TestChildStartsAProcessAndHangs$", "-test.timeout", "3s")
	cmd.Env = append(os.Environ(), childEnv+"="+pidFile)
	out, err := cmd.CombinedOutput()
	if err == nil || !strings.Contains(string(out), "test timed out after 3s") {
		t.Fatalf("the child test binary did not time out: %v\n%s", err, out)
	}
	if !strings.Contains(string(out), "-timeout 3s is near") {
		t.Errorf("the child did not say it stopped what its tests started before the timeout:\n%s", out)
	}
	data, err := os.ReadFile(pidFile)
	if err != nil {
		t.Fatalf("the child never started its process: %v\n%s", err, out)
	}
	pid, _ := strconv.Atoi(string(data))
	poll.UntilNil(t, 5*time.Second, "the timed-out binary's process is gone", func() error {
		if running(pid) {
			return fmt.Errorf("pid %d (sleep 600) still runs", pid)
		}
		return nil
	})
}

// running reports whether pid is a live process (a zombie waiting for its reaper is not).
func running(pid int) bool {
	if syscall.Kill(pid, 0) != nil {
		return false
	}
	stat, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return false
	}
	_, rest, _ := strings.Cut(string(stat), ") ")
	return !strings.HasPrefix(rest, "Z")
}

func TestTrackRunsAtTheTestsEndOnce(t *testing.T) {
	runs := 0
	t.Run("inner", func(t *testing.T) { testmain.Track(t, func() { runs++ }) })
	if runs != 1 {
		t.Fatalf("Track's cleanup ran %d times when its test ended, want 1", runs)
	}
}

func TestParallelIsRaisedWhenNotGiven(t *testing.T) {
	f := flagValue(t, "test.parallel")
	if f != "5" {
		t.Errorf("-test.parallel is %s, want the 5 TestMain asked for", f)
	}
}

func flagValue(t *testing.T, name string) string {
	t.Helper()
	f := flag.Lookup(name)
	if f == nil {
		t.Fatalf("no flag %s", name)
	}
	return f.Value.String()
}

// A test under load waits while every slot is taken (by other test binaries: here, locks of this
// test's own), takes the first one let go, gives it back when it ends, and a subtest of a test
// that holds a slot takes none (it would wait forever on its own parent).
func TestTestsUnderLoadShareTheMachinesSlots(t *testing.T) {
	t.Setenv("TMPDIR", t.TempDir()) // slots of this test alone
	var others []*flock.Flock
	for i := range testmain.LoadSlots {
		l := flock.New(testmain.LoadSlotPath(i))
		if err := l.Lock(); err != nil {
			t.Fatal(err)
		}
		others = append(others, l)
	}
	took, done := make(chan struct{}), make(chan struct{})
	go func() {
		defer close(done)
		t.Run("under load", func(t *testing.T) {
			testmain.UnderLoad(t)
			close(took)
			t.Run("its subtest", func(t *testing.T) { testmain.UnderLoad(t) })
		})
	}()
	select {
	case <-took:
		t.Fatal("took a slot while all were held elsewhere")
	case <-time.After(300 * time.Millisecond):
	}
	if err := others[2].Unlock(); err != nil {
		t.Fatal(err)
	}
	select {
	case <-done:
	case <-time.After(10 * time.Second):
		t.Fatal("no slot taken, or the subtest waited, within 10s of one being let go")
	}
	for i, l := range others {
		if i == 2 {
			mine := flock.New(testmain.LoadSlotPath(i))
			if ok, err := mine.TryLock(); err != nil || !ok {
				t.Fatalf("slot %d is still held after the test under load ended (%v)", i, err)
			}
			_ = mine.Unlock()
			continue
		}
		_ = l.Unlock()
	}
}

// A test under heavy load takes half the slots at once or none: with one free it waits (holding
// nothing), and it goes ahead once a second one is let go.
func TestATestUnderHeavyLoadWaitsForHalfTheSlotsAtOnce(t *testing.T) {
	t.Setenv("TMPDIR", t.TempDir())
	var others []*flock.Flock
	for i := range testmain.LoadSlots {
		l := flock.New(testmain.LoadSlotPath(i))
		if err := l.Lock(); err != nil {
			t.Fatal(err)
		}
		others = append(others, l)
	}
	took, done := make(chan struct{}), make(chan struct{})
	go func() {
		defer close(done)
		t.Run("heavy", func(t *testing.T) {
			testmain.UnderHeavyLoad(t)
			close(took)
		})
	}()
	_ = others[1].Unlock()
	select {
	case <-took:
		t.Fatal("went ahead with one slot free, want two")
	case <-time.After(300 * time.Millisecond):
	}
	free := flock.New(testmain.LoadSlotPath(1)) // the waiter tries it every 25ms, holding it for microseconds
	ok := false
	for range 20 {
		if ok, _ = free.TryLock(); ok {
			break
		}
		time.Sleep(5 * time.Millisecond)
	}
	if !ok {
		t.Fatal("the waiting test holds the one free slot while it waits")
	}
	_ = free.Unlock()
	_ = others[3].Unlock()
	select {
	case <-done:
	case <-time.After(10 * time.Second):
		t.Fatal("not gone ahead within 10s of a second slot being let go")
	}
	_ = others[0].Unlock()
	_ = others[2].Unlock()
}
