//go:build unix

package runtime

import "syscall"

const (
	sigUSR1  = syscall.SIGUSR1
	sigUSR2  = syscall.SIGUSR2
	sigWINCH = syscall.SIGWINCH
)
