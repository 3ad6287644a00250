//go:build unix

package edge

import (
	"context"
	"net"
	"syscall"

	"golang.org/x/sys/unix"
)

// listenReusePort listens on addr with SO_REUSEPORT: the health gate opens and closes its
// listener as the upstreams come and go, on its own socket and never through a listener
// hand-off (a handed-off socket lives on in the hand-off's copy, where a closed gate would still
// complete every TCP check's handshake). During a binary upgrade the old and the new process
// each hold one, and the old one's closes with its drain.
func listenReusePort(addr string) (net.Listener, error) {
	lc := net.ListenConfig{Control: func(_, _ string, c syscall.RawConn) error {
		var serr error
		if err := c.Control(func(fd uintptr) {
			serr = unix.SetsockoptInt(int(fd), unix.SOL_SOCKET, unix.SO_REUSEPORT, 1)
		}); err != nil {
			return err
		}
		return serr
	}}
	return lc.Listen(context.Background(), "tcp", addr)
}
