package runtime

import "syscall"

// Windows has no such signals; the services zero502 stops run on Linux hosts, so these are the
// Linux numbers (a deploy from Windows names them for the host, never signals a local process).
const (
	sigUSR1  = syscall.Signal(0xa)
	sigUSR2  = syscall.Signal(0xc)
	sigWINCH = syscall.Signal(0x1c)
)
