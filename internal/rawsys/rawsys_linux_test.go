package rawsys

import (
	"fmt"
	"net"
	"net/netip"
	"testing"
	"time"

	"github.com/zero502/zero502/internal/testrig/poll"
	"golang.org/x/sys/unix"
)

// One connection through the raw calls against a real listener: a non-blocking connect, accept
// with the peer's address, bytes both ways, and a half-close the peer reads as EOF.
func TestAConnectionThroughTheRawCalls(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	lf, err := ln.(*net.TCPListener).File() // a blocking duplicate: Accept waits for the connect
	if err != nil {
		t.Fatal(err)
	}
	defer lf.Close()
	target := netip.MustParseAddrPort(ln.Addr().String())

	cfd, err := Connect(target)
	if err != nil && err != unix.EINPROGRESS {
		t.Fatalf("Connect: %v", err)
	}
	defer Close(cfd)
	var rsa unix.RawSockaddrAny
	afd, err := Accept(int(lf.Fd()), &rsa)
	if err != nil {
		t.Fatalf("Accept: %v", err)
	}
	defer Close(afd)
	local := LocalAddr(cfd)
	if peer := AddrPort(&rsa); peer != local || !peer.Addr().Is4() {
		t.Fatalf("accepted peer %v, the connecting socket's local address %v: want the same IPv4 address", peer, local)
	}
	if got := LocalAddr(afd); got != target {
		t.Fatalf("accepted socket's local address %v, want %v", got, target)
	}
	if err := SocketError(cfd); err != nil {
		t.Fatalf("SO_ERROR after the connect: %v", err)
	}
	if n, err := Write(cfd, []byte("ping")); n != 4 || err != nil {
		t.Fatalf("Write: %d %v", n, err)
	}
	buf := make([]byte, 16)
	if got := readWithin(t, afd, buf); string(got) != "ping" {
		t.Fatalf("read %q, want ping", got)
	}
	ShutdownWrite(cfd)
	poll.UntilNil(t, 5*time.Second, "Read after the peer's half-close", func() error {
		n, err := Read(afd, buf)
		if err == nil && n == 0 {
			return nil // EOF: the half-close arrived
		}
		if err != unix.EAGAIN {
			t.Fatalf("Read after the peer's half-close: %d %v, want EOF", n, err)
		}
		return fmt.Errorf("%d %v, want EOF", n, err)
	})
	if _, err := Read(cfd, buf); err != unix.EAGAIN {
		t.Fatalf("Read on an empty non-blocking socket: %v, want EAGAIN", err)
	}
}

func TestConnectToNobodyEndsInSocketError(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	target := netip.MustParseAddrPort(ln.Addr().String())
	ln.Close() // nobody listens there now
	fd, err := Connect(target)
	if err == unix.ECONNREFUSED {
		return // refused at once, as loopback may
	}
	if err != unix.EINPROGRESS {
		t.Fatalf("Connect to a closed port: %v, want EINPROGRESS or ECONNREFUSED", err)
	}
	defer Close(fd)
	poll.UntilNil(t, 5*time.Second, "SO_ERROR of a connect to a closed port", func() error {
		err := SocketError(fd)
		if err == unix.ECONNREFUSED {
			return nil
		}
		if err != nil {
			t.Fatalf("SO_ERROR of a connect to a closed port: %v, want ECONNREFUSED", err)
		}
		return fmt.Errorf("%v, want ECONNREFUSED", err)
	})
}

// Connect reaches an IPv6 link-local address through its zone (fe80::1%eth0), as net.Dial
// does: without the interface's index the kernel cannot route it (EINVAL).
func TestConnectToALinkLocalAddressUsesItsZone(t *testing.T) {
	var ln net.Listener
	var host string
	ifs, _ := net.Interfaces()
	for _, ifc := range ifs {
		addrs, _ := ifc.Addrs()
		for _, a := range addrs {
			if ipn, ok := a.(*net.IPNet); ok && ipn.IP.To4() == nil && ipn.IP.IsLinkLocalUnicast() && ln == nil {
				host = ipn.IP.String() + "%" + ifc.Name
				ln, _ = net.Listen("tcp", net.JoinHostPort(host, "0"))
			}
		}
	}
	if ln == nil {
		t.Skip("no IPv6 link-local address to listen on")
	}
	defer ln.Close()
	target, err := netip.ParseAddrPort(net.JoinHostPort(host, fmt.Sprint(ln.Addr().(*net.TCPAddr).Port)))
	if err != nil {
		t.Fatal(err)
	}
	fd, err := Connect(target)
	if err != nil && err != unix.EINPROGRESS {
		t.Fatalf("Connect to %v: %v, want it under way", target, err)
	}
	defer Close(fd)
	poll.UntilNil(t, 5*time.Second, "SO_ERROR of the connect to "+target.String(), func() error {
		if err := SocketError(fd); err != nil {
			t.Fatalf("SO_ERROR of the connect to %v: %v", target, err)
		}
		if n, err := Write(fd, []byte("x")); n != 1 {
			return fmt.Errorf("not connected yet: %v", err)
		}
		return nil
	})
}

func readWithin(t *testing.T, fd int, buf []byte) []byte {
	t.Helper()
	var n int
	poll.UntilNil(t, 5*time.Second, "Read", func() error {
		var err error
		n, err = Read(fd, buf)
		if err != nil && err != unix.EAGAIN {
			t.Fatalf("Read: %v", err)
		}
		return err
	})
	return buf[:n]
}
