package demo

import (
	"os"
	"syscall"
)

// ownProcessGroup: Windows has no process groups to start the demo's LB in.
func ownProcessGroup() *syscall.SysProcAttr { return &syscall.SysProcAttr{} }

// killProcess ends pid.
func killProcess(pid int) error {
	p, err := os.FindProcess(pid)
	if err != nil {
		return err
	}
	return p.Kill()
}

// processAlive reports whether pid is a live process.
func processAlive(pid int) bool {
	p, err := os.FindProcess(pid)
	if err != nil {
		return false
	}
	_ = p.Release()
	return true
}
