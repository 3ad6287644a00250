//go:build unix

package handoff

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"
)

// helperRequest, set to a pid file, makes the test binary a `zero502 lb upgrade` of its own
// (Request.Do), run by a test as another user: it prints the error and exits.
const helperRequest = "ZERO502_HANDOFF_REQUEST"

func TestHandoffRequestHelperProcess(t *testing.T) {
	pidFile := os.Getenv(helperRequest)
	if pidFile == "" {
		t.Skip("the other user's upgrade request of TestARequestByAnotherUserSaysSoNotThatTheServerIsGone")
	}
	_, err := Request{PIDFile: pidFile, Timeout: 2 * time.Second}.Do(context.Background())
	fmt.Print(err)
	os.Exit(0)
}

// An upgrade asked for by a user who may not signal the server (it runs as root, or as another
// user) is refused naming that, not as a server that is gone: the operator is never told to
// remove the pid file of a server that runs.
func TestARequestByAnotherUserSaysSoNotThatTheServerIsGone(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("needs root to run the request as another user")
	}
	server := exec.Command("sleep", "30") // root's server
	if err := server.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = server.Process.Kill(); _ = server.Wait() })
	dir := t.TempDir()
	for d := dir; d != os.TempDir(); d = filepath.Dir(d) { // the other user reaches the binary and the pid file
		if err := os.Chmod(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	bin := filepath.Join(dir, "handoff.test")
	data, err := os.ReadFile(os.Args[0])
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(bin, data, 0o755); err != nil {
		t.Fatal(err)
	}
	pidFile := filepath.Join(dir, "lb.pid")
	if err := os.WriteFile(pidFile, []byte(strconv.Itoa(server.Process.Pid)+"\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	req := exec.Command(bin, "-test.run=^TestHandoffRequestHelperProcess$")
	req.Env = append(os.Environ(), helperRequest+"="+pidFile)
	req.SysProcAttr = &syscall.SysProcAttr{Credential: &syscall.Credential{Uid: 4242, Gid: 4242}}
	got, err := req.Output()
	if err != nil {
		t.Fatalf("the request as uid 4242: %v (%s)", err, got)
	}
	msg := string(got)
	if strings.Contains(msg, "not running") || strings.Contains(msg, "remove the stale pid file") {
		t.Errorf("a request by a user who may not signal the running server says %q: the server runs", msg)
	}
	for _, w := range []string{strconv.Itoa(server.Process.Pid), pidFile, "operation not permitted", "as the server's user"} {
		if !strings.Contains(msg, w) {
			t.Errorf("error %q does not say %q", msg, w)
		}
	}
	if err := server.Process.Signal(syscall.Signal(0)); err != nil {
		t.Fatalf("the server: %v", err)
	}
}
