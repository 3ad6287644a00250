package rawsys

import (
	"net"
	"net/netip"
	"testing"
	"time"

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
	deadline := time.Now().Add(5 * time.Second)
	for {
		n, err := Read(afd, buf)
		if err == nil && n == 0 {
			break // EOF: the half-close arrived
		}
		if err != unix.EAGAIN || time.Now().After(deadline) {
			t.Fatalf("Read after the peer's half-close: %d %v, want EOF", n, err)
		}
		time.Sleep(time.Millisecond)
	}
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
	deadline := time.Now().Add(5 * time.Second)
	for {
		err := SocketError(fd)
		if err == unix.ECONNREFUSED {
			return
		}
		if err != nil || time.Now().After(deadline) {
			t.Fatalf("SO_ERROR of a connect to a closed port: %v, want ECONNREFUSED", err)
		}
		time.Sleep(time.Millisecond)
	}
}

func readWithin(t *testing.T, fd int, buf []byte) []byte {
	t.Helper()
	deadline := time.Now().Add(5 * time.Second)
	for {
		n, err := Read(fd, buf)
		if err == nil {
			return buf[:n]
		}
		if err != unix.EAGAIN || time.Now().After(deadline) {
			t.Fatalf("Read: %v", err)
		}
		time.Sleep(time.Millisecond)
	}
}
