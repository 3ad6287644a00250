//go:build unix

package ssh

import (
	"os/exec"
	"syscall"
)

// ownGroup puts c in a process group of its own: a Ctrl-C at the deployer's terminal reaches
// the deployer, which ends each session by closing its input and waits for the host's report
// (a rollback too, under the fleet lock), not the ssh clients, whose death would end the lock's
// session at once. ssh runs with BatchMode=yes, so it never reads the terminal.
func ownGroup(c *exec.Cmd) { c.SysProcAttr = &syscall.SysProcAttr{Setpgid: true} }
