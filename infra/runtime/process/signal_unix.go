//go:build unix

package process

import (
	"errors"
	"syscall"
)

// ownSession starts a service in its own session and process group, so stopping it reaches
// whatever it forked.
func ownSession() *syscall.SysProcAttr { return &syscall.SysProcAttr{Setsid: true} }

// signal sends sig to the process pid.
func signal(pid int, sig syscall.Signal) error { return syscall.Kill(pid, sig) }

// killGroup SIGKILLs the process group led by pid.
func killGroup(pid int) error { return syscall.Kill(-pid, syscall.SIGKILL) }

// signalGroup sends sig to every process of the group led by pid.
func signalGroup(pid int, sig syscall.Signal) error { return syscall.Kill(-pid, sig) }

// groupExists says whether any process (a zombie too) is in the group led by pid.
func groupExists(pid int) bool { return !errors.Is(syscall.Kill(-pid, 0), syscall.ESRCH) }

// noFollow opens a service's log without following a symlink at its path: another user who
// planted one cannot have zero502 append to (or create) a file of their choosing.
const noFollow = syscall.O_NOFOLLOW
