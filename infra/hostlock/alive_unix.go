//go:build unix

package hostlock

import (
	"errors"
	"syscall"
)

// alive reports whether a process with pid exists (signal 0 probes without signalling).
func alive(pid int) bool {
	err := syscall.Kill(pid, 0)
	return err == nil || errors.Is(err, syscall.EPERM)
}
