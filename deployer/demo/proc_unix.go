//go:build unix

package demo

import "syscall"

// ownProcessGroup starts the demo's LB in its own process group.
func ownProcessGroup() *syscall.SysProcAttr { return &syscall.SysProcAttr{Setpgid: true} }

// killProcess SIGKILLs pid.
func killProcess(pid int) error { return syscall.Kill(pid, syscall.SIGKILL) }

// processAlive reports whether pid is a live process.
func processAlive(pid int) bool { return syscall.Kill(pid, 0) == nil }
