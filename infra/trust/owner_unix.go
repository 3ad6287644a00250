//go:build unix

package trust

import (
	"os"
	"syscall"
)

// ownerOf is the uid owning fi.
func ownerOf(fi os.FileInfo) (int, bool) {
	st, ok := fi.Sys().(*syscall.Stat_t)
	if !ok {
		return 0, false
	}
	return int(st.Uid), true
}
