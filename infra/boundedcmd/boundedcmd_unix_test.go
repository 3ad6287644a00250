//go:build unix

package boundedcmd_test

import (
	"bytes"
	"context"
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
