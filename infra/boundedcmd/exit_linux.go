package boundedcmd

import "golang.org/x/sys/unix"

// awaitExit blocks until the child pid has exited, and reports true. It leaves the child to
// cmd.Wait to reap: while it is a zombie its pid, and so its group's id, cannot be given to
// another process, so the group killed after it is its own. A child already reaped returns at once.
func awaitExit(pid int) bool {
	var info unix.Siginfo
	for unix.Waitid(unix.P_PID, pid, &info, unix.WEXITED|unix.WNOWAIT, nil) == unix.EINTR {
	}
	return true
}
