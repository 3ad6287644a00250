//go:build unix

package lb

import "syscall"

// descriptorLimit is the soft RLIMIT_NOFILE.
func descriptorLimit() (uint64, bool) {
	var lim syscall.Rlimit
	if err := syscall.Getrlimit(syscall.RLIMIT_NOFILE, &lim); err != nil {
		return 0, false
	}
	return uint64(lim.Cur), true
}
