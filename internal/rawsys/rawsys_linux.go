//go:build linux

package rawsys

import (
	"net"
	"net/netip"
	"strconv"
	"syscall"
	"unsafe"

	"golang.org/x/sys/unix"
)

func errnoErr(e syscall.Errno) error {
	if e == 0 {
		return nil
	}
	return e
}

// Read is read(2), for a descriptor that is not a socket (a loop's wake-up eventfd); sockets
// read with Recv.
func Read(fd int, p []byte) (int, error) {
	n, _, e := unix.RawSyscall(unix.SYS_READ, uintptr(fd), uintptr(unsafe.Pointer(unsafe.SliceData(p))), uintptr(len(p)))
	if e != 0 {
		return 0, e
	}
	return int(n), nil
}

// Write is write(2), for a descriptor that is not a socket; sockets write with Send.
func Write(fd int, p []byte) (int, error) {
	n, _, e := unix.RawSyscall(unix.SYS_WRITE, uintptr(fd), uintptr(unsafe.Pointer(unsafe.SliceData(p))), uintptr(len(p)))
	if e != 0 {
		return 0, e
	}
	return int(n), nil
}

// Recv is recvfrom(2) without flags or an address, for a socket: the same bytes read(2) gives,
// without the file layer read(2) passes through first (its position lock, its checks).
func Recv(fd int, p []byte) (int, error) {
	n, _, e := unix.RawSyscall6(unix.SYS_RECVFROM, uintptr(fd), uintptr(unsafe.Pointer(unsafe.SliceData(p))), uintptr(len(p)), 0, 0, 0)
	if e != 0 {
		return 0, e
	}
	return int(n), nil
}

// Send is sendto(2) with MSG_NOSIGNAL, for a socket: write(2) without the file layer, and a
// peer that is gone is EPIPE, not a SIGPIPE to the process as well.
func Send(fd int, p []byte) (int, error) {
	n, _, e := unix.RawSyscall6(unix.SYS_SENDTO, uintptr(fd), uintptr(unsafe.Pointer(unsafe.SliceData(p))), uintptr(len(p)), unix.MSG_NOSIGNAL, 0, 0)
	if e != 0 {
		return 0, e
	}
	return int(n), nil
}

// Close is close(2) of a socket without SO_LINGER: it never waits.
func Close(fd int) {
	_, _, _ = unix.RawSyscall(unix.SYS_CLOSE, uintptr(fd), 0, 0)
}

// ShutdownWrite is shutdown(2) of the sending side: the peer reads EOF.
func ShutdownWrite(fd int) {
	_, _, _ = unix.RawSyscall(unix.SYS_SHUTDOWN, uintptr(fd), unix.SHUT_WR, 0)
}

// NoDelay turns Nagle's algorithm off on fd, as Go does on every TCP connection.
func NoDelay(fd int) {
	one := int32(1)
	_, _, _ = unix.RawSyscall6(unix.SYS_SETSOCKOPT, uintptr(fd), unix.IPPROTO_TCP, unix.TCP_NODELAY, uintptr(unsafe.Pointer(&one)), 4, 0)
}

// SocketError is getsockopt(SO_ERROR): how a non-blocking connect ended.
func SocketError(fd int) error {
	var v int32
	l := uint32(4)
	if _, _, e := unix.RawSyscall6(unix.SYS_GETSOCKOPT, uintptr(fd), unix.SOL_SOCKET, unix.SO_ERROR, uintptr(unsafe.Pointer(&v)), uintptr(unsafe.Pointer(&l)), 0); e != 0 {
		return e
	}
	return errnoErr(syscall.Errno(v))
}

// Accept is accept4(2) on the non-blocking listener lfd, the new descriptor non-blocking and
// close-on-exec, its peer's address in rsa (AddrPort decodes it). unix.Accept4 also asks the
// listener for its protocol with a getsockopt per connection, to tell L2TP from TCP, and
// allocates the address.
func Accept(lfd int, rsa *unix.RawSockaddrAny) (int, error) {
	size := uint32(unix.SizeofSockaddrAny)
	fd, _, e := unix.RawSyscall6(unix.SYS_ACCEPT4, uintptr(lfd), uintptr(unsafe.Pointer(rsa)), uintptr(unsafe.Pointer(&size)),
		unix.SOCK_NONBLOCK|unix.SOCK_CLOEXEC, 0, 0)
	if e != 0 {
		return -1, e
	}
	return int(fd), nil
}

// EpollCtl is epoll_ctl(2); ev may be nil for EPOLL_CTL_DEL.
func EpollCtl(epfd, op, fd int, ev *unix.EpollEvent) error {
	_, _, e := unix.RawSyscall6(unix.SYS_EPOLL_CTL, uintptr(epfd), uintptr(op), uintptr(fd), uintptr(unsafe.Pointer(ev)), 0, 0)
	if e != 0 {
		return e
	}
	return nil
}

// CloseListener takes a loop's copy of the listening socket out of its epoll set and closes
// it: that loop accepts no more (the other copies, and the socket itself, stay open).
func CloseListener(epfd, lfd int) {
	_ = EpollCtl(epfd, unix.EPOLL_CTL_DEL, lfd, nil)
	Close(lfd)
}

// LocalAddr is getsockname(2): the local address of fd.
func LocalAddr(fd int) netip.AddrPort {
	var rsa unix.RawSockaddrAny
	l := uint32(unix.SizeofSockaddrAny)
	if _, _, e := unix.RawSyscall(unix.SYS_GETSOCKNAME, uintptr(fd), uintptr(unsafe.Pointer(&rsa)), uintptr(unsafe.Pointer(&l))); e != 0 {
		return netip.AddrPort{}
	}
	return AddrPort(&rsa)
}

// Connect opens a non-blocking TCP socket with Nagle off and starts its connect to ap; the
// error is nil or EINPROGRESS when the connect is under way.
func Connect(ap netip.AddrPort) (int, error) {
	family := unix.AF_INET
	if !ap.Addr().Is4() {
		family = unix.AF_INET6
	}
	fd, _, e := unix.RawSyscall(unix.SYS_SOCKET, uintptr(family), unix.SOCK_STREAM|unix.SOCK_NONBLOCK|unix.SOCK_CLOEXEC, 0)
	if e != 0 {
		return -1, e
	}
	NoDelay(int(fd))
	port := [2]byte{byte(ap.Port() >> 8), byte(ap.Port())}
	if family == unix.AF_INET {
		sa := unix.RawSockaddrInet4{Family: unix.AF_INET, Addr: ap.Addr().As4()}
		*(*[2]byte)(unsafe.Pointer(&sa.Port)) = port
		_, _, e = unix.RawSyscall(unix.SYS_CONNECT, fd, uintptr(unsafe.Pointer(&sa)), unix.SizeofSockaddrInet4)
	} else {
		sa := unix.RawSockaddrInet6{Family: unix.AF_INET6, Addr: ap.Addr().As16(), Scope_id: ZoneID(ap.Addr().Zone())}
		*(*[2]byte)(unsafe.Pointer(&sa.Port)) = port
		_, _, e = unix.RawSyscall(unix.SYS_CONNECT, fd, uintptr(unsafe.Pointer(&sa)), unix.SizeofSockaddrInet6)
	}
	if e != 0 && e != unix.EINPROGRESS {
		Close(int(fd))
		return -1, e
	}
	return int(fd), errnoErr(e)
}

// ZoneID is the interface index of an IPv6 address's zone ("eth0" or "2" in fe80::1%eth0),
// which a link-local address needs to be reached, as net.Dial passes it; 0 for none (or an
// interface that is gone: the connect fails then, as net.Dial's does).
func ZoneID(zone string) uint32 {
	if zone == "" {
		return 0
	}
	if n, err := strconv.ParseUint(zone, 10, 32); err == nil {
		return uint32(n)
	}
	ifc, err := net.InterfaceByName(zone)
	if err != nil {
		return 0
	}
	return uint32(ifc.Index)
}

// AddrPort decodes an IPv4 or IPv6 socket address (an IPv4-mapped one as IPv4).
func AddrPort(rsa *unix.RawSockaddrAny) netip.AddrPort {
	switch rsa.Addr.Family {
	case unix.AF_INET:
		sa := (*unix.RawSockaddrInet4)(unsafe.Pointer(rsa))
		p := (*[2]byte)(unsafe.Pointer(&sa.Port))
		return netip.AddrPortFrom(netip.AddrFrom4(sa.Addr), uint16(p[0])<<8|uint16(p[1]))
	case unix.AF_INET6:
		sa := (*unix.RawSockaddrInet6)(unsafe.Pointer(rsa))
		p := (*[2]byte)(unsafe.Pointer(&sa.Port))
		return netip.AddrPortFrom(netip.AddrFrom16(sa.Addr).Unmap(), uint16(p[0])<<8|uint16(p[1]))
	}
	return netip.AddrPort{}
}

// EpollPoll is epoll_wait with a zero timeout: it cannot block, so it needs none of the
// scheduler's bookkeeping around a system call. A loop looks with it first, and only waits
// (epoll_wait with a timeout, scheduler-aware) when it found nothing.
func EpollPoll(epfd int, events []unix.EpollEvent) (int, error) {
	n, _, e := unix.RawSyscall6(unix.SYS_EPOLL_PWAIT, uintptr(epfd), uintptr(unsafe.Pointer(&events[0])), uintptr(len(events)), 0, 0, 0)
	if e != 0 {
		return 0, e
	}
	return int(n), nil
}
