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
// terminal, cmd stays in the terminal's group, so that it can prompt there; then its context's
// end kills it alone.
func Bound(cmd *exec.Cmd) {
	ownGroup(cmd)
	cmd.WaitDelay = WaitDelay
}
