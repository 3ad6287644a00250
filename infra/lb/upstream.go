package lb

import (
	"net"
	"syscall"
)

// upstream is one connection of the goroutine path from the LB to a backend, with its own read
// buffer.
type upstream struct {
	conn    *net.TCPConn
	raw     syscall.RawConn
	in      reader
	backend *Backend
	// reused is true when the connection came from the pool (it may have been closed by the
	// backend while it sat idle).
	reused bool
}

func (u *upstream) close() {
	_ = u.conn.Close()
	u.in.buf = nil
}

func (u *upstream) target() *Backend { return u.backend }

// peerClosed is false: the goroutine path learns of a close only by reading (alive).
func (u *upstream) peerClosed() bool { return false }

func (u *upstream) unread() bool { return u.in.r != u.in.w }

// mayHoldMore is false: the goroutine path probes every reuse instead (reuseProbe), which also
// sees bytes that came after the connection was parked.
func (u *upstream) mayHoldMore() bool { return false }
