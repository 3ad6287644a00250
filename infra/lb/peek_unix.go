//go:build unix

package lb

import (
	"errors"
	"syscall"
)

// alive peeks at u without blocking: EAGAIN means open and quiet; EOF, an error or unexpected
// bytes mean it must not be used.
func (u *upstream) alive() bool {
	ok := false
	err := u.raw.Control(func(fd uintptr) { ok = peekAlive(int(fd)) })
	return err == nil && ok
}

// peekAlive peeks at fd without blocking: EAGAIN means open and quiet; EOF, an error or
// unexpected bytes mean the connection must not be used (both paths' pool probe).
func peekAlive(fd int) bool {
	var b [1]byte
	n, _, err := syscall.Recvfrom(fd, b[:], syscall.MSG_PEEK|syscall.MSG_DONTWAIT)
	return n < 0 && errors.Is(err, syscall.EAGAIN)
}

// waitReadable blocks until conn has data or EOF to read (or its read deadline passes) without
// holding a buffer: an idle keep-alive client costs no read buffer.
func waitReadable(raw syscall.RawConn) error {
	return raw.Read(func(fd uintptr) bool {
		var b [1]byte
		n, _, err := syscall.Recvfrom(int(fd), b[:], syscall.MSG_PEEK|syscall.MSG_DONTWAIT)
		return !(n < 0 && errors.Is(err, syscall.EAGAIN))
	})
}

// awaitReadable waits for the next request of an idle client connection without its read
// buffer (released here), so an idle keep-alive client costs no buffer. A TLS client (no raw
// socket: a readable socket may hold no whole record) reads into its buffer.
func awaitReadable(cc *clientConn, max int) error {
	if cc.raw == nil {
		return cc.in.fill(max)
	}
	cc.in.release()
	return waitReadable(cc.raw)
}
