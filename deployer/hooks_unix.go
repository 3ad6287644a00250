//go:build unix

package deployer

import (
	"os/exec"
	"syscall"
)

// ownGroup starts cmd in its own process group and has its cancel kill the whole group: a hook's
// children (a shell's commands) die with it.
func ownGroup(cmd *exec.Cmd) {
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	cmd.Cancel = func() error { return syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL) }
}
