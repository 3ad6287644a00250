package hostlock

import "os"

// alive reports whether a process with pid exists (Windows opens a handle to it).
func alive(pid int) bool {
	p, err := os.FindProcess(pid)
	if err != nil {
		return false
	}
	_ = p.Release()
	return true
}
