//go:build unix

package boundedcmd

import (
	"os"
	"os/exec"
	"syscall"
)

// ownGroup starts cmd in its own process group and has its cancel kill the whole group.
func ownGroup(cmd *exec.Cmd) {
	if cmd.SysProcAttr == nil {
		cmd.SysProcAttr = &syscall.SysProcAttr{}
	}
	cmd.SysProcAttr.Setpgid = true
	cmd.Cancel = func() error { return killGroup(cmd.Process.Pid) }
}

// killGroup SIGKILLs every process of the group pgid (ownGroup's: its leader's pid).
func killGroup(pgid int) error { return syscall.Kill(-pgid, syscall.SIGKILL) }

// hasTerminal reports whether this process has a controlling terminal.
func hasTerminal() bool {
	tty, err := os.OpenFile("/dev/tty", os.O_RDWR, 0)
	if err != nil {
		return false
	}
	tty.Close()
	return true
}
