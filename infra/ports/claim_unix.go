//go:build unix

package ports

import (
	"errors"
	"os"
	"syscall"
)

// alive reports whether process pid exists (signal 0 reaches it, or it exists as another user's).
func alive(pid int) bool {
	err := syscall.Kill(pid, 0)
	return err == nil || errors.Is(err, syscall.EPERM)
}

// ownedByMe reports whether fi belongs to this process's user.
func ownedByMe(fi os.FileInfo) bool {
	st, ok := fi.Sys().(*syscall.Stat_t)
	return ok && int(st.Uid) == os.Getuid()
}

// exclusively runs f holding flock(2) on dir: one claimant at a time, across processes, takes
// over a stale claim there. When dir cannot be locked f runs anyway (the claim is then as good
// as this process's own).
func exclusively(dir string, f func()) {
	d, err := os.Open(dir)
	if err != nil {
		f()
		return
	}
	defer d.Close()
	if syscall.Flock(int(d.Fd()), syscall.LOCK_EX) == nil {
		defer syscall.Flock(int(d.Fd()), syscall.LOCK_UN) // closing releases it too
	}
	f()
}
