// Package boundedcmd owns how zero502 bounds a short command it runs for an answer (a hook,
// secrets.command, an alert or mesh check command, a Docker credential helper): when the
// command's context ends, its whole process group is killed, not its first process alone, and
// its output is not waited for past WaitDelay. Without that, a shell's child (a sleep, a password
// manager at a prompt) that keeps the output pipe open holds the caller, and the deploy or
// the alert queue behind it, long past the timeout, and outlives it having seen what it saw.
package boundedcmd

import (
	"os/exec"
	"time"
)

// DefaultTimeout bounds a command asked for a secret when nothing else says how long it may take
// (secrets.command without a timeout, a Docker credential helper): long enough for a password
// manager to answer, short enough that one waiting at a prompt does not hold a deploy's locks.
const DefaultTimeout = 30 * time.Second

// WaitDelay is how long a bounded command's output is still read after its context ended or
// it exited, before the pipes are closed under whatever still holds them.
const WaitDelay = time.Second

// Bound makes cmd (made with exec.CommandContext, not started yet) run in its own process group,
// killed whole when its context ends, with its output waited for at most WaitDelay. Run from a
// terminal, cmd stays in the terminal's foreground group instead: a program of a background group
// that reads the terminal (a passphrase prompt of pass, gpg, sops or op) is stopped by SIGTTIN and
// could never be answered. Its context's end then kills it alone, and WaitDelay still bounds the
// wait for what it left holding the output. A command that never prompts runs with RunGroup.
func Bound(cmd *exec.Cmd) {
	if !hasTerminal() {
		ownGroup(cmd)
	}
	cmd.WaitDelay = WaitDelay
}

// RunGroup runs cmd (made with exec.CommandContext, not started yet) in its own process group,
// terminal or not, and waits for it: the group is killed whole when cmd's context ends and again
// once cmd has exited, and its output is waited for at most WaitDelay. It is for a command that
// never prompts (a hook: its stdin is /dev/null), so nothing it started outlives it: not past its
// timeout (a migration going on after the deploy it belonged to was rolled back), and not past
// its exit either (a child left holding the output would otherwise hold the caller WaitDelay
// and fail it with exec.ErrWaitDelay, and one that let go would run on unseen). Only a process
// that left the group (setsid) escapes, and WaitDelay bounds the wait for its output.
func RunGroup(cmd *exec.Cmd) error {
	ownGroup(cmd)
	cmd.WaitDelay = WaitDelay
	if err := cmd.Start(); err != nil {
		return err
	}
	pid := cmd.Process.Pid
	seen := make(chan bool, 1)
	go func() {
		// Killed as soon as cmd exits, before Wait waits for the output its children hold.
		exited := awaitExit(pid)
		if exited {
			_ = killGroup(pid)
		}
		seen <- exited
	}()
	err := cmd.Wait()
	if !<-seen {
		_ = killGroup(pid) // where the exit cannot be seen before Wait: late, but its children still end with it
	}
	return err
}
