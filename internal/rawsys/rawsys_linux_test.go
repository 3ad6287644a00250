package rawsys

import (
	"fmt"
	"net"
	"net/netip"
	"os"
	"os/signal"
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
	if n, err := Send(cfd, []byte("ping")); n != 4 || err != nil {
		t.Fatalf("Send: %d %v", n, err)
	}
	buf := make([]byte, 16)
	if got := readWithin(t, afd, buf); string(got) != "ping" {
		t.Fatalf("read %q, want ping", got)
	}
	ShutdownWrite(cfd)
	poll.UntilNil(t, 5*time.Second, "Recv after the peer's half-close", func() error {
		n, err := Recv(afd, buf)
		if err == nil && n == 0 {
			return nil // EOF: the half-close arrived
		}
		if err != unix.EAGAIN {
			t.Fatalf("Recv after the peer's half-close: %d %v, want EOF", n, err)
		}
		return fmt.Errorf("%d %v, want EOF", n, err)
	})
	if _, err := Recv(cfd, buf); err != unix.EAGAIN {
		t.Fatalf("Recv on an empty non-blocking socket: %v, want EAGAIN", err)
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
		if n, err := Send(fd, []byte("x")); n != 1 {
			return fmt.Errorf("not connected yet: %v", err)
		}
		return nil
	})
}

// Send to a connection the peer has reset fails with EPIPE and raises no SIGPIPE: the process
// is not interrupted for a client that went away. write(2) raises one (the control that the
// test sees signals at all). SIGWINCH, raised after each call, marks the end: the runtime
// passes pending signals on in the order of their numbers, and SIGPIPE's is lower, so a SIGPIPE
// the call raised is received before the marker.
func TestSendToAResetPeerRaisesNoSIGPIPE(t *testing.T) {
	sigs := make(chan os.Signal, 8)
	signal.Notify(sigs, unix.SIGPIPE, unix.SIGWINCH)
	defer signal.Stop(sigs)
	firstSignalAfter := func(call string, write func(fd int, p []byte) (int, error)) os.Signal {
		t.Helper()
		fds, err := unix.Socketpair(unix.AF_UNIX, unix.SOCK_STREAM, 0)
		if err != nil {
			t.Fatal(err)
		}
		defer Close(fds[0])
		Close(fds[1]) // the peer is gone
		if _, err := write(fds[0], []byte("x")); err != unix.EPIPE {
			t.Fatalf("%s to a closed peer: %v, want EPIPE", call, err)
		}
		if err := unix.Kill(os.Getpid(), unix.SIGWINCH); err != nil {
			t.Fatal(err)
		}
		select {
		case s := <-sigs:
			if s == unix.SIGPIPE {
				<-sigs // the marker, so the next call starts clean
			}
			return s
		case <-time.After(30 * time.Second):
			t.Fatalf("no signal 30 s after %s and the SIGWINCH marker", call)
			return nil
		}
	}
	if s := firstSignalAfter("Write", Write); s != unix.SIGPIPE {
		t.Fatalf("after Write to a closed peer the first signal is %v, want SIGPIPE (the control)", s)
	}
	if s := firstSignalAfter("Send", Send); s != unix.SIGWINCH {
		t.Fatalf("after Send to a closed peer the first signal is %v, want only the SIGWINCH marker", s)
	}
}

func readWithin(t *testing.T, fd int, buf []byte) []byte {
	t.Helper()
	var n int
	poll.UntilNil(t, 5*time.Second, "Recv", func() error {
		var err error
		n, err = Recv(fd, buf)
		if err != nil && err != unix.EAGAIN {
			t.Fatalf("Recv: %v", err)
		}
		return err
	})
	return buf[:n]
}
