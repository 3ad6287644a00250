package hostlock

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"
)

func TestSecondTakerIsRefusedAndToldTheHolder(t *testing.T) {
	p := filepath.Join(t.TempDir(), "deploy.lock")
	l, err := TryAcquire(p, Holder{Who: "deployer", Command: "zero502 deploy --version v2"})
	if err != nil {
		t.Fatal(err)
	}
	_, err = TryAcquire(p, Holder{Who: "watchdog"})
	if !errors.Is(err, ErrHeld) || !strings.Contains(err.Error(), "zero502 deploy --version v2") {
		t.Fatalf("second taker: %v, want ErrHeld naming the deployer", err)
	}
	if err := l.Release(); err != nil {
		t.Fatal(err)
	}
	if err := l.Release(); err != nil { // a second release does nothing (a deferred one after an early one)
		t.Fatalf("second Release: %v", err)
	}
	l2, err := TryAcquire(p, Holder{Who: "watchdog"})
	if err != nil {
		t.Fatalf("after release: %v", err)
	}
	l2.Release()
}

// The lock is the same lock a bootstrap script takes with flock(1).
func TestFlockCommandHoldsTheSameLock(t *testing.T) {
	if _, err := exec.LookPath("flock"); err != nil {
		t.Skip("flock(1) not installed (util-linux)")
	}
	p := filepath.Join(t.TempDir(), "deploy.lock")
	cmd := exec.Command("flock", p, "sh", "-c", "echo locked; exec sleep 30")
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true} // the child inherits the lock's fd
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	killGroup := func() { syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL) }
	defer killGroup()
	line := make([]byte, 7)
	if _, err := io.ReadFull(out, line); err != nil || string(line) != "locked\n" {
		t.Fatalf("flock(1) did not take the lock: %q %v", line, err)
	}
	if _, err := TryAcquire(p, Holder{Who: "watchdog"}); !errors.Is(err, ErrHeld) {
		t.Fatalf("TryAcquire while flock(1) holds the lock: %v, want ErrHeld", err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 150*time.Millisecond)
	defer cancel()
	var told []Holder
	if _, err := Acquire(ctx, p, Holder{Who: "deployer"}, 20*time.Millisecond, func(h Holder) { told = append(told, h) }); err == nil {
		t.Fatal("Acquire got a lock flock(1) holds")
	}
	if len(told) != 1 || !strings.Contains(told[0].String(), "flock(1)") {
		t.Fatalf("waiting was told %v, want once, about a holder without a record", told)
	}
	killGroup()
	cmd.Wait()
	ctx2, cancel2 := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel2()
	l, err := Acquire(ctx2, p, Holder{Who: "deployer"}, 20*time.Millisecond, nil)
	if err != nil {
		t.Fatalf("the kernel did not release the lock when flock(1) died: %v", err)
	}
	l.Release()
}

// The lock is its owner's alone (0600): flock(2) needs only read access, so another user who
// could read it could hold it for ever, turning the watchdog off and refusing every deploy. A
// 0644 lock an earlier version made is narrowed when taken. The holder record stays readable
// (0644): a status reader of another user says who holds the lock.
func TestOnlyItsOwnerCanHoldTheLockAndAnyoneCanReadItsHolder(t *testing.T) {
	dir, err := os.MkdirTemp("", "hostlock-")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(dir) })
	if err := os.Chmod(dir, 0o755); err != nil { // other users may look in (as /run/lock)
		t.Fatal(err)
	}
	p := filepath.Join(dir, "deploy.lock")
	if err := os.WriteFile(p, nil, 0o644); err != nil { // as an earlier version left it
		t.Fatal(err)
	}
	l, err := TryAcquire(p, Holder{Who: "deployer", Command: "zero502 deploy"})
	if err != nil {
		t.Fatal(err)
	}
	for f, want := range map[string]os.FileMode{p: 0o600, holderPath(p): 0o644} {
		if fi, err := os.Stat(f); err != nil || fi.Mode().Perm() != want {
			t.Errorf("%s: %v, %v; want mode %v", f, fi.Mode().Perm(), err, want)
		}
	}
	if h := ReadHolder(p); h.Who != "deployer" {
		t.Fatalf("holder %+v, want the deployer", h)
	}
	if err := l.Release(); err != nil {
		t.Fatal(err)
	}
	setpriv, err := exec.LookPath("setpriv")
	if _, ferr := exec.LookPath("flock"); err != nil || ferr != nil || os.Geteuid() != 0 {
		t.Skip("the other-user half needs root, setpriv(1) and flock(1) (util-linux)")
	}
	out, err := exec.Command(setpriv, "--reuid=65534", "--regid=65534", "--clear-groups", "flock", "-n", p, "true").CombinedOutput()
	if err == nil {
		t.Fatalf("user nobody took the free lock with flock(1) (%s); want it refused", out)
	}
	if !strings.Contains(string(out), "Permission denied") {
		t.Errorf("flock(1) as nobody: %v %s; want permission denied", err, out)
	}

	// A status reader of another user, who may not open the lock, still sees it held, and by
	// whom, from the holder record (this test binary, run as nobody: Held's answer on stdout).
	bin := filepath.Join(dir, "hostlock.test")
	data, err := os.ReadFile(os.Args[0])
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(bin, data, 0o755); err != nil {
		t.Fatal(err)
	}
	heldAs := func() string {
		cmd := exec.Command(setpriv, "--reuid=65534", "--regid=65534", "--clear-groups", bin, "-test.run=^TestHeldHelperProcess$")
		cmd.Env = append(os.Environ(), heldEnv+"="+p)
		out, err := cmd.Output()
		if err != nil {
			t.Fatalf("Held as nobody: %v %s", err, out)
		}
		return strings.TrimSpace(string(out))
	}
	if got := heldAs(); got != "free" {
		t.Errorf("Held of the free lock, as nobody: %q; want free", got)
	}
	l, err = TryAcquire(p, Holder{Who: "deployer", Command: "zero502 deploy"})
	if err != nil {
		t.Fatal(err)
	}
	defer l.Release()
	if got := heldAs(); got != "held by deployer" {
		t.Errorf("Held of the taken lock, as nobody: %q; want held by deployer", got)
	}
}

// heldEnv makes the test binary print Held of the lock it names and exit (run as another user).
const heldEnv = "ZERO502_HOSTLOCK_HELD"

func TestHeldHelperProcess(t *testing.T) {
	p := os.Getenv(heldEnv)
	if p == "" {
		t.Skip("the helper of TestOnlyItsOwnerCanHoldTheLockAndAnyoneCanReadItsHolder")
	}
	held, h, err := Held(p)
	switch {
	case err != nil:
		fmt.Println("error:", err)
	case held:
		fmt.Println("held by", h.Who)
	default:
		fmt.Println("free")
	}
	os.Exit(0)
}

// A lock another user could write, or one in a directory they could write, is refused naming
// the path and its mode, before it is taken: they could hold it for ever or swap it.
func TestALockAnotherUserCouldWriteIsRefused(t *testing.T) {
	dir := t.TempDir()
	p := filepath.Join(dir, "deploy.lock")
	if err := os.WriteFile(p, nil, 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.Chmod(p, 0o666); err != nil {
		t.Fatal(err)
	}
	if l, err := TryAcquire(p, Holder{Who: "deployer"}); err == nil || !strings.Contains(err.Error(), p) || !strings.Contains(err.Error(), "0666") {
		if l != nil {
			_ = l.Release()
		}
		t.Fatalf("a 0666 lock file: %v; want refused naming %s and mode 0666", err, p)
	}

	open := filepath.Join(dir, "open")
	if err := os.Mkdir(open, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.Chmod(open, 0o777); err != nil {
		t.Fatal(err)
	}
	if l, err := TryAcquire(filepath.Join(open, "deploy.lock"), Holder{Who: "deployer"}); err == nil || !strings.Contains(err.Error(), open) {
		if l != nil {
			_ = l.Release()
		}
		t.Fatalf("a lock in a 0777 directory: %v; want refused naming the directory", err)
	}

	if err := os.Chmod(p, 0o644); err != nil {
		t.Fatal(err)
	}
	l, err := TryAcquire(p, Holder{Who: "deployer"})
	if err != nil {
		t.Fatalf("the same lock made 0644: %v; want taken", err)
	}
	_ = l.Release()
}
