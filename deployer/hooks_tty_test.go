//go:build unix

package deployer

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

	"github.com/zero502/zero502/infra/config"
	"github.com/zero502/zero502/internal/testrig/poll"
	"github.com/zero502/zero502/internal/testrig/syncbuffer"
	"github.com/zero502/zero502/internal/testrig/terminal"
)

// A deploy run by hand has a terminal, and a hook must still die whole at its timeout: were it
// left in the terminal's process group (as a command that may prompt is), its timeout would kill
// its first process alone, and a migration it started would go on after the deploy failed. The
// test runs the real binary under script(1), which gives it a terminal.
func TestHookChildrenDieAtItsTimeoutWhenTheDeployRunsFromATerminal(t *testing.T) {
	t.Parallel()
	script := terminal.Script(t)
	f := newFleet(t, 2)
	cfg := f.load(f.config("fleet.yaml", defaultValues()))
	f.startLB(f.write("fleet.yaml", cfg))
	pidFile := filepath.Join(f.dir, "sleeper.pid")
	cfg.Hooks.PreDeploy = config.Hook{Command: []string{"sh", "-c", "sleep 60 & echo $! > '" + pidFile + "'; wait"}, Timeout: 300 * time.Millisecond}
	path := f.write("hooked.yaml", cfg)
	// The terminal's shell stays after the deploy, as an operator's does, for longer than the wait
	// for the child below: a terminal that closed would hang up the child and hide a survivor.
	ctx, cancel := context.WithTimeout(context.Background(), 120*time.Second)
	defer cancel()
	cmd := exec.CommandContext(ctx, script, "-qec", "'"+bin+"' deploy --config '"+path+"' --version v1; echo DEPLOY-EXIT=$?; sleep 60", "/dev/null")
	var out syncbuffer.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	defer func() { _ = cmd.Process.Kill(); _ = cmd.Wait() }()
	poll.Until(t, 60*time.Second, "the deploy ended", func() bool { return strings.Contains(out.String(), "DEPLOY-EXIT=") })
	if !strings.Contains(out.String(), "did not finish within hooks.pre_deploy.timeout 300ms") {
		t.Fatalf("zero502 deploy with a pre_deploy past its timeout, from a terminal:\n%s\nwant the hook's timeout named", out.String())
	}
	data, rerr := os.ReadFile(pidFile)
	pid, perr := strconv.Atoi(strings.TrimSpace(string(data)))
	if rerr != nil || perr != nil {
		t.Fatalf("the hook's child wrote no pid: %v %v", rerr, perr)
	}
	t.Cleanup(func() { _ = syscall.Kill(pid, syscall.SIGKILL) })
	poll.UntilNil(t, 10*time.Second, fmt.Sprintf("the timed-out pre_deploy hook's child %d gone after a deploy run from a terminal", pid),
		func() error {
			if syscall.Kill(pid, 0) == nil {
				return fmt.Errorf("it still runs; the deploy said:\n%s", out.String())
			}
			return nil
		})
}
