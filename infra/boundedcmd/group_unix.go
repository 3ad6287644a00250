//go:build unix

package boundedcmd

import (
	"os"
	"os/exec"
	"syscall"
)

// ownGroup starts cmd in its own process group and has its cancel kill the whole group. With a
// controlling terminal (a deploy run by hand) it leaves cmd in the terminal's foreground group
// instead: a program of a background group that reads the terminal (a passphrase prompt of pass,
// gpg, sops or op) is stopped by SIGTTIN and could never be answered. Its cancel then kills cmd
// alone, and WaitDelay still bounds the wait for what it left holding the output.
func ownGroup(cmd *exec.Cmd) {
	if hasTerminal() {
		return
	}
	if cmd.SysProcAttr == nil {
		cmd.SysProcAttr = &syscall.SysProcAttr{}
	}
	cmd.SysProcAttr.Setpgid = true
	cmd.Cancel = func() error { return syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL) }
}

// hasTerminal reports whether this process has a controlling terminal.
func hasTerminal() bool {
	tty, err := os.OpenFile("/dev/tty", os.O_RDWR, 0)
	if err != nil {
		return false
	}
	tty.Close()
	return true
}
