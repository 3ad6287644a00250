package standing

import (
	"errors"
	"syscall"
)

// LocalShortage says a connect to a target failed for a reason of the connecting host's own,
// not the target's: out of descriptors (EMFILE, ENFILE), of buffers or memory (ENOBUFS, ENOMEM),
// or of local ports (EADDRNOTAVAIL). Such a failure never counts against the target: a client
// that fills the LB's or the edge's descriptor table must not eject every healthy target.
func LocalShortage(err error) bool {
	for _, errno := range []syscall.Errno{syscall.EMFILE, syscall.ENFILE, syscall.ENOBUFS, syscall.ENOMEM, syscall.EADDRNOTAVAIL} {
		if errors.Is(err, errno) {
			return true
		}
	}
	return false
}
