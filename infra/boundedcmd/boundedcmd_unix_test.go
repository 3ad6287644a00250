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
	"github.com/zero502/zero502/internal/testrig/terminal"
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

// A command run as a group (a hook, which never prompts) is killed whole when its time is up even from
// a terminal, where Bound leaves a command in the terminal's group to prompt there. The test runs
// itself under script(1), which gives it a terminal, and the child is looked for while the
// terminal is still open: its hangup would kill a survivor in the terminal's group and hide it.
func TestACommandRunAsAGroupEndsWithItsTimeoutChildrenAndAllFromATerminal(t *testing.T) {
	if os.Getenv("BOUNDEDCMD_GROUP_TIMEOUT") == "1" {
		pidFile := filepath.Join(t.TempDir(), "child.pid")
		// The command's time is up once its child exists (a fixed timeout could end it first,
		// on a busy machine, before sh has started the child), or after 20 s if it never does.
		ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
		defer cancel()
		go func() {
			for ctx.Err() == nil {
				if data, err := os.ReadFile(pidFile); err == nil && strings.HasSuffix(string(data), "\n") {
					cancel()
					return
				}
				time.Sleep(poll.Interval)
			}
		}()
		cmd := exec.CommandContext(ctx, "sh", "-c", "sleep 30 & echo $! > "+pidFile+"; wait")
		err := boundedcmd.RunGroup(cmd)
		data, rerr := os.ReadFile(pidFile)
		pid, perr := strconv.Atoi(strings.TrimSpace(string(data)))
		if rerr != nil || perr != nil {
			fmt.Printf("RESULT no pid: %v %v\n", rerr, perr)
			return
		}
		deadline := time.Now().Add(5 * time.Second)
		for syscall.Kill(pid, 0) == nil && time.Now().Before(deadline) {
			time.Sleep(poll.Interval)
		}
		if syscall.Kill(pid, 0) == nil {
			_ = syscall.Kill(pid, syscall.SIGKILL)
			fmt.Printf("RESULT child %d outlived its command's timeout (%v)\n", pid, err)
			return
		}
		fmt.Printf("RESULT child gone (%v)\n", err)
		return
	}
	script := terminal.Script(t)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	run := exec.CommandContext(ctx, script, "-qec", os.Args[0]+" -test.run '^TestACommandRunAsAGroupEndsWithItsTimeoutChildrenAndAllFromATerminal$' -test.v", "/dev/null")
	run.Env = append(os.Environ(), "BOUNDEDCMD_GROUP_TIMEOUT=1")
	out, err := run.CombinedOutput()
	if !strings.Contains(string(out), "RESULT child gone (signal: killed)") {
		t.Fatalf("a command run as a group past its timeout, from a terminal: %v\n%s\nwant it and its child killed", err, out)
	}
}

// A command run as a group takes what it left in the background with it when it exits: a child
// holding its output does not hold the caller WaitDelay and fail it, and one that let go of the
// output does not run on unseen.
func TestACommandRunAsAGroupTakesItsChildrenWithItWhenItExits(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	holding, quiet := filepath.Join(dir, "holding.pid"), filepath.Join(dir, "quiet.pid")
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	cmd := exec.CommandContext(ctx, "sh", "-c", "sleep 30 & echo $! > "+holding+"; sleep 30 >/dev/null 2>&1 & echo $! > "+quiet+"; echo done")
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	if err := boundedcmd.RunGroup(cmd); err != nil || out.String() != "done\n" {
		t.Fatalf("RunGroup: %v, output %q; want nil and \"done\\n\", its exit's, not the wait for a child's output", err, out.String())
	}
	for _, file := range []string{holding, quiet} {
		data, err := os.ReadFile(file)
		if err != nil {
			t.Fatal(err)
		}
		pid, err := strconv.Atoi(strings.TrimSpace(string(data)))
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { _ = syscall.Kill(pid, syscall.SIGKILL) })
		poll.Until(t, 10*time.Second, fmt.Sprintf("the child %s (%d) killed once its command exited", filepath.Base(file), pid),
			func() bool { return syscall.Kill(pid, 0) != nil })
	}
}
