package handoff

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"
)

// A pid file in a directory another user owns, or one others may write, is refused before
// anything is signalled, with the path, the owner or mode and what to do; the process it names
// is left alone. Writing a pid file there is refused too.
func TestPIDFileInAnUntrustedDirectoryIsRefused(t *testing.T) {
	if runtime.GOOS == "windows" {
		t.Skip("no hand-off on Windows")
	}
	victim := exec.Command("sleep", "30")
	if err := victim.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = victim.Process.Kill(); _ = victim.Wait() })
	pid := []byte(strconv.Itoa(victim.Process.Pid) + "\n")

	root := t.TempDir()
	open := filepath.Join(root, "open")
	if err := os.Mkdir(open, 0o700); err != nil {
		t.Fatal(err)
	}
	if err := os.Chmod(open, 0o777); err != nil { // as another user's mkdir -m 777 would leave it
		t.Fatal(err)
	}
	cases := []struct {
		name, dir string
		wants     []string
	}{{"world-writable directory", open, []string{open, "mode 0777", "chmod go-w", "--pid-file"}}}
	if os.Geteuid() == 0 { // root can hand a directory to another user, as that user's mkdir would
		other := filepath.Join(root, "zero502-1000")
		if err := os.Mkdir(other, 0o700); err != nil {
			t.Fatal(err)
		}
		if err := os.Chown(other, 4242, 4242); err != nil {
			t.Fatal(err)
		}
		cases = append(cases, struct {
			name, dir string
			wants     []string
		}{"directory of another user", other, []string{other, "owned by uid 4242", "--pid-file"}})
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			file := filepath.Join(tc.dir, "lb.pid")
			if err := os.WriteFile(file, pid, 0o644); err != nil {
				t.Fatal(err)
			}
			_, err := Request{PIDFile: file, Timeout: 2 * time.Second}.Do(context.Background())
			if err == nil {
				t.Fatal("the pid file was believed")
			}
			for _, w := range tc.wants {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("error %q does not say %q", err, w)
				}
			}
			if err := writePID(file, os.Getpid()); err == nil || !strings.Contains(err.Error(), "not trusted") {
				t.Errorf("writing a pid file there: %v, want it refused", err)
			}
			if err := victim.Process.Signal(syscall.Signal(0)); err != nil {
				t.Fatalf("the process the pid file named: %v", err)
			}
		})
	}
}

// A pid file left by a server that died without removing it names a pid the system may give to
// any later process: one that started after the file was written is refused, and not signalled.
func TestAPIDReusedSinceThePIDFileWasWrittenIsNotSignalled(t *testing.T) {
	if runtime.GOOS != "linux" {
		t.Skip("start times are read from /proc")
	}
	later := exec.Command("sleep", "30")
	if err := later.Start(); err != nil {
		t.Fatal(err)
	}
	exited := make(chan error, 1)
	go func() { exited <- later.Wait() }()
	t.Cleanup(func() { _ = later.Process.Kill(); <-exited })
	pidFile := filepath.Join(t.TempDir(), "lb.pid")
	if err := os.WriteFile(pidFile, []byte(strconv.Itoa(later.Process.Pid)+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	written := time.Now().Add(-time.Minute) // the dead server wrote it a minute before this process started
	if err := os.Chtimes(pidFile, written, written); err != nil {
		t.Fatal(err)
	}
	_, err := Request{PIDFile: pidFile, Timeout: 5 * time.Second}.Do(context.Background())
	if err == nil || !strings.Contains(err.Error(), "its pid was reused; nothing was signalled") {
		t.Fatalf("upgrade through a pid file older than the process it names: %v, want it refused as a reused pid", err)
	}
	select {
	case err := <-exited:
		t.Fatalf("the process the stale pid file names was signalled: %v", err)
	case <-time.After(200 * time.Millisecond):
	}
}

// A pid file whose directory is to be made inside another user's directory (a --pid-file of
// /tmp/zero502-1000/run/lb.pid, where another user made /tmp/zero502-1000 first) is refused
// before anything is made there: the rule of every directory zero502 creates.
func TestWritingAPIDFileMakesNothingInAnotherUsersDirectory(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("needs root to make a directory of another user")
	}
	other := filepath.Join(t.TempDir(), "zero502-1000")
	if err := os.Mkdir(other, 0o700); err != nil {
		t.Fatal(err)
	}
	if err := os.Chown(other, 4242, 4242); err != nil {
		t.Fatal(err)
	}
	file := filepath.Join(other, "run", "lb.pid")
	if err := writePID(file, os.Getpid()); err == nil || !strings.Contains(err.Error(), "owned by uid 4242") {
		t.Fatalf("writing %s: %v, want it refused naming the other user's directory", file, err)
	}
	if _, err := os.Lstat(filepath.Dir(file)); err == nil {
		t.Fatalf("%s was made inside the directory of uid 4242 before the pid file was refused", filepath.Dir(file))
	}
}
