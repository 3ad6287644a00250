package hostlock

import (
	"context"
	"errors"
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

func TestTheLockAndItsHolderRecordAreReadableByOtherUsers(t *testing.T) {
	p := filepath.Join(t.TempDir(), "host-a", "deploy.lock")
	l, err := TryAcquire(p, Holder{Who: "deployer", Command: "zero502 deploy"})
	if err != nil {
		t.Fatal(err)
	}
	defer l.Release()
	for _, f := range []string{p, holderPath(p)} {
		fi, err := os.Stat(f)
		if err != nil {
			t.Fatal(err)
		}
		if fi.Mode().Perm() != 0o644 {
			t.Errorf("%s mode %v, want 0644 (flock(1) and a status reader of another user open it)", f, fi.Mode().Perm())
		}
	}
	if h := ReadHolder(p); h.Who != "deployer" {
		t.Fatalf("holder %+v, want the deployer", h)
	}
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
