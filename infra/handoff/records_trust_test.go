package handoff

import (
	"context"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"syscall"
	"testing"
	"time"
)

// The pid file may sit in a sticky directory (trust.Check accepts one, as /tmp), where another
// user can create the upgrade record beside it (pid file + ".handoff.json") first; the server
// cannot replace it there. Its NewPID is not believed: it would be written to the pid file
// (successor, then writePID), and the next `zero502 lb upgrade` would send SIGHUP to a process
// the other user chose.
func TestAnotherUsersUpgradeRecordIsNotBelieved(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("needs root to create a file owned by another user")
	}
	victim := exec.Command("sleep", "30")
	if err := victim.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = victim.Process.Kill(); _ = victim.Wait() })

	shared := filepath.Join(t.TempDir(), "shared")
	if err := os.Mkdir(shared, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.Chmod(shared, os.ModeSticky|0o777); err != nil { // like /tmp
		t.Fatal(err)
	}
	pidFile := filepath.Join(shared, "edge.pid")
	if err := writePID(pidFile, os.Getpid()); err != nil {
		t.Fatalf("the pid file in a sticky directory is trusted by design: %v", err)
	}
	// the other user's attempt file, as it stands when the old process asks for its successor
	forged, _ := json.Marshal(Attempt{Seq: 7, PID: os.Getpid(), State: Starting, NewPID: victim.Process.Pid})
	path := attemptPath(pidFile)
	if err := os.WriteFile(path, forged, 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.Chown(path, 4242, 4242); err != nil {
		t.Fatal(err)
	}
	u := &Upgrader{opts: Options{PIDFile: pidFile}}
	if got := u.successor(path, 7); got != 0 {
		// what upgrade() does next with it:
		_ = writePID(pidFile, got)
		pid, _ := ReadPID(pidFile)
		t.Fatalf("successor() believed an attempt file owned by uid 4242: new pid %d (victim %d); the pid file now names %s",
			got, victim.Process.Pid, strconv.Itoa(pid))
	}
}

// Another user's FIFO at the upgrade record's path is refused unread: `zero502 lb upgrade`
// (Request.Do) read it before its --timeout started and hung for ever, as did the server's
// upgrade on SIGHUP.
func TestUpgradeRequestRefusesAnotherUsersFIFOAsItsRecord(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("needs root to create a file owned by another user")
	}
	server := exec.Command("sh", "-c", `trap "" HUP; sleep 30`)
	if err := server.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = server.Process.Kill(); _ = server.Wait() })
	shared := filepath.Join(t.TempDir(), "shared")
	if err := os.Mkdir(shared, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.Chmod(shared, os.ModeSticky|0o777); err != nil {
		t.Fatal(err)
	}
	pidFile := filepath.Join(shared, "edge.pid")
	if err := writePID(pidFile, server.Process.Pid); err != nil {
		t.Fatal(err)
	}
	fifo := attemptPath(pidFile)
	if err := syscall.Mkfifo(fifo, 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.Chown(fifo, 4242, 4242); err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() {
		_, err := Request{PIDFile: pidFile, Timeout: time.Second}.Do(context.Background())
		done <- err
	}()
	select {
	case err := <-done:
		t.Logf("Do returned: %v", err)
	case <-time.After(5 * time.Second):
		// release the reader so the test binary can exit
		if w, err := os.OpenFile(fifo, os.O_WRONLY, 0); err == nil {
			_ = w.Close()
		}
		t.Fatal("Request.Do with a 1s timeout still hangs after 5s, reading another user's FIFO at the attempt path")
	}
}

// ReadPID judges the pid file before it reads it: another user's FIFO at the pid file's path in a
// sticky directory hung `zero502 lb upgrade` and the server's own Close (which reads the pid
// file as it exits).
func TestReadPIDRefusesAnotherUsersFIFO(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("needs root to create a file owned by another user")
	}
	shared := filepath.Join(t.TempDir(), "shared")
	if err := os.Mkdir(shared, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.Chmod(shared, os.ModeSticky|0o777); err != nil {
		t.Fatal(err)
	}
	pidFile := filepath.Join(shared, "edge.pid")
	if err := syscall.Mkfifo(pidFile, 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.Chown(pidFile, 4242, 4242); err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() { _, err := ReadPID(pidFile); done <- err }()
	select {
	case err := <-done:
		if err == nil {
			t.Fatal("ReadPID believed another user's FIFO")
		}
	case <-time.After(3 * time.Second):
		if w, err := os.OpenFile(pidFile, os.O_WRONLY, 0); err == nil {
			_ = w.Close()
		}
		t.Fatal("ReadPID still blocks after 3s on another user's FIFO: it reads before it checks trust")
	}
}
