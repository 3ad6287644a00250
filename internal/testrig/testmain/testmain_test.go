package testmain_test

import (
	"errors"
	"flag"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
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

// againLogEnv, in a child test binary, names the file TestChildRecordsItsRun appends to, and
// gives the child's TestMain Again: the tests a second time under againEnv=second.
const againLogEnv, againEnv = "ZERO502_TESTMAIN_AGAIN_LOG", "ZERO502_TESTMAIN_AGAIN"

func TestMain(m *testing.M) {
	o := testmain.Options{Parallel: 5}
	if os.Getenv(againLogEnv) != "" {
		o.Again = []string{againEnv + "=second"}
	}
	os.Exit(testmain.Run(m, o))
}

// In the child only: records which run it is ("first", or againEnv's value), and fails in the
// run named by ZERO502_TESTMAIN_AGAIN_FAIL.
func TestChildRecordsItsRun(t *testing.T) {
	log := os.Getenv(againLogEnv)
	if log == "" {
		t.Skip("run by TestAgainRunsTheTestsASecondTimeUnderItsEnvironment")
	}
	run := os.Getenv(againEnv)
	if run == "" {
		run = "first"
	}
	f, err := os.OpenFile(log, os.O_WRONLY|os.O_APPEND|os.O_CREATE, 0o600)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	fmt.Fprintln(f, run)
	if os.Getenv("ZERO502_TESTMAIN_AGAIN_FAIL") == run {
		t.Fatalf("failing in the %s run, as asked", run)
	}
}

// Options.Again runs the tests once more in a child under its environment, after the first
// run, and the binary fails when either run failed.
func TestAgainRunsTheTestsASecondTimeUnderItsEnvironment(t *testing.T) {
	for _, failIn := range []string{"", "first", "second"} {
		log := filepath.Join(t.TempDir(), "runs")
		cmd := exec.Command(os.Args[0], "-test.run", "^TestChildRecordsItsRun$", "-test.count=1")
		cmd.Env = append(os.Environ(), againLogEnv+"="+log, "ZERO502_TESTMAIN_AGAIN_FAIL="+failIn)
		out, err := cmd.CombinedOutput()
		runs, rerr := os.ReadFile(log)
		if rerr != nil || string(runs) != "first\nsecond\n" {
			t.Fatalf("failing in %q: the runs were %q (%v), want first then second\n%s", failIn, runs, rerr, out)
		}
		if (err != nil) != (failIn != "") {
			t.Errorf("failing in %q: the binary ended %v, want an error exactly when a run failed\n%s", failIn, err, out)
		}
	}
}

func TestBothEnginesRunsAgainOnlyWhereTheLoopsExist(t *testing.T) {
	const env = "ZERO502_TEST_LB_ENGINE=goroutines"
	if got := testmain.BothEngines(true, env).Again; !slices.Equal(got, []string{env}) {
		t.Errorf("with event loops: Again %q, want [%s]", got, env)
	}
	if got := testmain.BothEngines(false, env).Again; got != nil {
		t.Errorf("without event loops: Again %q, want none (the tests run once)", got)
	}
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

// A package under load waits for its turn while another holds the flock, and takes it once
// that one lets go.
func TestTheUnderLoadPackagesTakeTurns(t *testing.T) {
	path := filepath.Join(t.TempDir(), "under-load.lock")
	other := flock.New(path)
	if err := other.Lock(); err != nil {
		t.Fatal(err)
	}
	took := make(chan func(), 1)
	go func() {
		release, err := testmain.TakeTurn(path)
		if err != nil {
			t.Error(err)
			release = func() {}
		}
		took <- release
	}()
	select {
	case release := <-took:
		release()
		t.Fatal("took the turn while another package held it")
	case <-time.After(300 * time.Millisecond):
	}
	if err := other.Unlock(); err != nil {
		t.Fatal(err)
	}
	select {
	case release := <-took:
		release()
	case <-time.After(10 * time.Second):
		t.Fatal("the turn was not taken within 10s of the other package letting go")
	}
}

// A test binary started as a program by the code under test (os.Executable() with a command's
// arguments) runs no test, so it starts no more of itself: it exits 2 at once, saying why.
func TestATestBinaryStartedAsAProgramRunsNoTest(t *testing.T) {
	cmd := exec.Command(os.Args[0], "dns", "add", "--zone", "x.zone")
	out, err := cmd.CombinedOutput()
	var exit *exec.ExitError
	if !errors.As(err, &exit) || exit.ExitCode() != 2 || !strings.Contains(string(out), "is a test binary, started as a program") ||
		strings.Contains(string(out), "PASS") || strings.Contains(string(out), "=== RUN") {
		t.Fatalf("the test binary started as `zero502 dns add`: %v\n%s\nwant exit 2 and no test run", err, out)
	}
}
