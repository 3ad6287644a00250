//go:build unix

package docker

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/zero502/zero502/internal/testrig/poll"
)

// A credential helper that does not answer (one waiting at a keychain prompt) is killed at its
// own timeout, with the child it started, and refused naming it and the timeout: a pull's
// context has no deadline, and the pull holds the host's lock.
func TestImageCredentialsGiveUpOnAHelperThatDoesNotAnswerInTime(t *testing.T) {
	if _, err := os.Stat("/bin/sh"); err != nil {
		t.Skip("no /bin/sh for the helper script")
	}
	dir := t.TempDir() // 0700: the helper passes infra/trust's program rule
	pidFile := filepath.Join(t.TempDir(), "child.pid")
	script := "#!/bin/sh\nsleep 30 & echo $! > " + pidFile + "\nwait\n"
	if err := os.WriteFile(filepath.Join(dir, "docker-credential-ztslow"), []byte(script), 0o755); err != nil {
		t.Fatal(err)
	}
	t.Setenv("PATH", dir+string(os.PathListSeparator)+os.Getenv("PATH"))
	was := helperTimeout
	helperTimeout = 300 * time.Millisecond
	t.Cleanup(func() { helperTimeout = was })

	path := writeConfig(t, `{"credsStore": "ztslow"}`)
	began := time.Now()
	ac, err := Credentials(context.Background(), path, "127.0.0.1:5000")
	if took := time.Since(began); took > 10*time.Second {
		t.Fatalf("Credentials took %s with a helper that does not answer; want it given up at its 300ms timeout", took)
	}
	for _, want := range []string{path, `credsStore "ztslow"`, "docker-credential-ztslow", "no answer within 300ms", "prompt"} {
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("Credentials with a helper that does not answer = %+v, %v\nwant an error with %q", ac, err, want)
		}
	}
	if !errors.Is(err, context.DeadlineExceeded) {
		t.Errorf("Credentials = %v, want it to wrap context.DeadlineExceeded", err)
	}
	if tty, err := os.OpenFile("/dev/tty", os.O_RDWR, 0); err == nil {
		tty.Close()
		t.Skip("run from a terminal: the helper stays in its group, so that it could prompt there, and its child is not killed with it (boundedcmd)")
	}
	data, err := os.ReadFile(pidFile)
	if err != nil {
		t.Fatal(err)
	}
	pid, err := strconv.Atoi(strings.TrimSpace(string(data)))
	if err != nil {
		t.Fatal(err)
	}
	poll.UntilNil(t, 10*time.Second, "the helper's child killed with it", func() error {
		if err := syscall.Kill(pid, 0); err == nil {
			return os.ErrExist
		}
		return nil
	})
}
