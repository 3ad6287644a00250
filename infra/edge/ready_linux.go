package edge

import (
	"net"
	"syscall"
)

// readReady reads into p what c has already received, without waiting: 0 when nothing has
// arrived yet, when the peer has closed (the next Read sees the EOF again) or on an error (the
// next Read or Write sees it).
func readReady(c net.Conn, p []byte) int {
	if pc, ok := c.(*pairedConn); ok {
		c = pc.Conn
	}
	tc, ok := c.(*net.TCPConn)
	if !ok {
		return 0
	}
	rc, err := tc.SyscallConn()
	if err != nil {
		return 0
	}
	n := 0
	err = rc.Read(func(fd uintptr) bool {
		k, rerr := syscall.Read(int(fd), p)
		if rerr == nil && k > 0 {
			n = k
		}
		return true // one try: never wait
	})
	if err != nil {
		return 0
	}
	return n
}
