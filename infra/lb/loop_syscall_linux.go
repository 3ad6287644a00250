package lb

import (
	"net"
	"unsafe"

	"golang.org/x/sys/unix"
)

// The event loops' system calls on their non-blocking descriptors, made raw. None of them can
// block, so none needs the scheduler's bookkeeping around a system call (entersyscall and
// exitsyscall, about a tenth of a microsecond each way, and a P the runtime's monitor may take
// from a loop in the middle of a call); a loop makes four to seven of them per request. The
// only blocking call of a loop, epoll_wait with a timeout, stays a scheduler-aware one (run).

// sysRead is read(2) on a non-blocking descriptor.
func sysRead(fd int, p []byte) (int, error) {
	n, _, errno := unix.RawSyscall(unix.SYS_READ, uintptr(fd), uintptr(unsafe.Pointer(unsafe.SliceData(p))), uintptr(len(p)))
	if errno != 0 {
		return 0, errno
	}
	return int(n), nil
}

// sysWrite is write(2) on a non-blocking descriptor.
func sysWrite(fd int, p []byte) (int, error) {
	n, _, errno := unix.RawSyscall(unix.SYS_WRITE, uintptr(fd), uintptr(unsafe.Pointer(unsafe.SliceData(p))), uintptr(len(p)))
	if errno != 0 {
		return 0, errno
	}
	return int(n), nil
}

// sysClose is close(2) of a socket without SO_LINGER: the kernel sends the FIN (or a reset for
// unread bytes) without waiting.
func sysClose(fd int) {
	_, _, _ = unix.RawSyscall(unix.SYS_CLOSE, uintptr(fd), 0, 0)
}

// epollCtl is epoll_ctl(2); ev may be nil for EPOLL_CTL_DEL.
func epollCtl(epfd, op, fd int, ev *unix.EpollEvent) error {
	_, _, errno := unix.RawSyscall6(unix.SYS_EPOLL_CTL, uintptr(epfd), uintptr(op), uintptr(fd), uintptr(unsafe.Pointer(ev)), 0, 0)
	if errno != 0 {
		return errno
	}
	return nil
}

// sysAccept is accept4(2) on the non-blocking listener, the new descriptor non-blocking and
// close-on-exec, its peer's address in rsa. (unix.Accept4 also asks the listener for its
// protocol with a getsockopt per connection, to tell L2TP from TCP, and allocates the address.)
func sysAccept(lfd int, rsa *unix.RawSockaddrAny) (int, error) {
	size := uint32(unix.SizeofSockaddrAny)
	fd, _, errno := unix.RawSyscall6(unix.SYS_ACCEPT4, uintptr(lfd), uintptr(unsafe.Pointer(rsa)), uintptr(unsafe.Pointer(&size)),
		unix.SOCK_NONBLOCK|unix.SOCK_CLOEXEC, 0, 0)
	if errno != 0 {
		return -1, errno
	}
	return int(fd), nil
}

// peerNames turns the peer addresses accept returns into the client IP as text, the form
// X-Forwarded-For and the access log want, remembering the last few: a loop serves the same
// clients (or the same few proxies in front of it) over and over, and the text is read-only
// once made, so connections from one address share it and a new connection allocates nothing.
type peerNames struct {
	names map[[16]byte][]byte // by IPv6 (or IPv4-mapped) address
}

// peerNamesMax bounds the remembered addresses; past it the map starts over.
const peerNamesMax = 1024

// name is the text of rsa's IP address ("unknown" for a family other than IPv4 and IPv6).
func (p *peerNames) name(rsa *unix.RawSockaddrAny) []byte {
	var key [16]byte
	switch rsa.Addr.Family {
	case unix.AF_INET:
		a := (*unix.RawSockaddrInet4)(unsafe.Pointer(rsa)).Addr
		key = [16]byte{10: 0xff, 11: 0xff, 12: a[0], 13: a[1], 14: a[2], 15: a[3]}
	case unix.AF_INET6:
		key = (*unix.RawSockaddrInet6)(unsafe.Pointer(rsa)).Addr
	default:
		return []byte("unknown")
	}
	if ip, ok := p.names[key]; ok {
		return ip
	}
	if p.names == nil || len(p.names) >= peerNamesMax {
		p.names = make(map[[16]byte][]byte)
	}
	ip := []byte(net.IP(key[:]).String()) // an IPv4-mapped address prints as IPv4
	p.names[key] = ip
	return ip
}
