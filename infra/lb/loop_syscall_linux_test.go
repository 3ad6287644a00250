package lb

import (
	"testing"
	"unsafe"

	"golang.org/x/sys/unix"
)

// TestPeerNames: the loops' client address text is what net.IP prints (an IPv4-mapped IPv6
// address as IPv4), one shared slice per address, and the cache starts over when full.
func TestPeerNames(t *testing.T) {
	v4 := func(a [4]byte) *unix.RawSockaddrAny {
		var rsa unix.RawSockaddrAny
		sa := (*unix.RawSockaddrInet4)(unsafe.Pointer(&rsa))
		sa.Family, sa.Addr = unix.AF_INET, a
		return &rsa
	}
	v6 := func(a [16]byte) *unix.RawSockaddrAny {
		var rsa unix.RawSockaddrAny
		sa := (*unix.RawSockaddrInet6)(unsafe.Pointer(&rsa))
		sa.Family, sa.Addr = unix.AF_INET6, a
		return &rsa
	}
	var p peerNames
	first := p.name(v4([4]byte{10, 0, 0, 7}))
	if string(first) != "10.0.0.7" {
		t.Fatalf("IPv4: %q", first)
	}
	if again := p.name(v4([4]byte{10, 0, 0, 7})); &again[0] != &first[0] {
		t.Error("the same address made a new slice")
	}
	if got := p.name(v6([16]byte{0: 0x20, 1: 0x01, 2: 0x0d, 3: 0xb8, 15: 1})); string(got) != "2001:db8::1" {
		t.Errorf("IPv6: %q", got)
	}
	if got := p.name(v6([16]byte{10: 0xff, 11: 0xff, 12: 192, 13: 0, 14: 2, 15: 1})); string(got) != "192.0.2.1" {
		t.Errorf("IPv4-mapped: %q", got)
	}
	var unix4 unix.RawSockaddrAny
	unix4.Addr.Family = unix.AF_UNIX
	if got := p.name(&unix4); string(got) != "unknown" {
		t.Errorf("AF_UNIX: %q", got)
	}
	for i := 0; i < peerNamesMax+10; i++ {
		p.name(v4([4]byte{10, 1, byte(i >> 8), byte(i)}))
	}
	if len(p.names) > peerNamesMax {
		t.Errorf("%d addresses remembered, at most %d wanted", len(p.names), peerNamesMax)
	}
}
