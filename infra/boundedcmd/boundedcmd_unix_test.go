//go:build unix

package boundedcmd_test

import (
	"bytes"
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

	"github.com/zero502/zero502/infra/boundedcmd"
	"github.com/zero502/zero502/internal/testrig/poll"
	"github.com/zero502/zero502/internal/testrig/syncbuffer"
)

// A command whose child keeps its output open (sh -c 'sleep 30; …') ends with its timeout, not
// with the child, and the child does not outlive it.
func TestABoundedCommandEndsWithItsTimeoutChildrenAndAll(t *testing.T) {
	t.Parallel()
	pidFile := filepath.Join(t.TempDir(), "child.pid")
	ctx, cancel := context.WithTimeout(context.Background(), 300*time.Millisecond)
	defer cancel()
	cmd := exec.CommandContext(ctx, "sh", "-c", "sleep 30 & echo $! > "+pidFile+"; wait")
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	boundedcmd.Bound(cmd)
	began := time.Now()
	err := cmd.Run()
	if took := time.Since(began); err == nil || took > 10*time.Second {
		t.Fatalf("Run: %v after %s; want it killed at its 300ms timeout (plus WaitDelay)", err, took)
	}
	data, err := os.ReadFile(pidFile)
	if err != nil {
		t.Fatal(err)
	}
	pid, err := strconv.Atoi(strings.TrimSpace(string(data)))
	if err != nil {
		t.Fatal(err)
	}
	poll.UntilNil(t, 10*time.Second, "the command's child killed with it", func() error {
		if err := syscall.Kill(pid, 0); err == nil {
			return os.ErrExist
		}
		return nil
	})
}

// Run from a terminal (a deploy run by hand), a bounded command can prompt there and be answered:
// in a background process group of its own, a read of the terminal would stop it (SIGTTIN) until
// its timeout. The test runs itself under script(1), which gives it a terminal.
func TestABoundedCommandRunFromATerminalCanPromptThere(t *testing.T) {
	if os.Getenv("BOUNDEDCMD_PROMPT") == "1" {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		cmd := exec.CommandContext(ctx, "sh", "-c", `printf 'passphrase: ' > /dev/tty; read -r x < /dev/tty; echo "answered $x"`)
		boundedcmd.Bound(cmd)
		out, err := cmd.Output()
		fmt.Printf("RESULT %q %v\n", out, err)
		return
	}
	script, err := exec.LookPath("script")
	if err != nil {
		t.Skip("script(1) is not installed (apt-get install bsdutils): no terminal to run under")
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	run := exec.CommandContext(ctx, script, "-qec", os.Args[0]+" -test.run '^TestABoundedCommandRunFromATerminalCanPromptThere$' -test.v", "/dev/null")
	run.Env = append(os.Environ(), "BOUNDEDCMD_PROMPT=1")
	in, err := run.StdinPipe()
	if err != nil {
		t.Fatal(err)
	}
	var out syncbuffer.Buffer
	run.Stdout, run.Stderr = &out, &out
	if err := run.Start(); err != nil {
		t.Fatal(err)
	}
	poll.UntilNil(t, 20*time.Second, "the prompt on the terminal", func() error {
		if !strings.Contains(out.String(), "passphrase:") {
			return os.ErrNotExist
		}
		return nil
	})
	fmt.Fprintln(in, "open-sesame")
	_ = run.Wait()
	if !strings.Contains(out.String(), `RESULT "answered open-sesame\n" <nil>`) {
		t.Fatalf("a bounded command prompting on the terminal was not answered:\n%s", out.String())
	}
}
