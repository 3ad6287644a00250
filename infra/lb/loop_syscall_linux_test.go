package lb

import (
	"bufio"
	"net"
	"os"
	"slices"
	"strconv"
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

// TestUnpollListener: with event loops, the listening socket is in no epoll set of the process
// but the loops' (unpollListener), and the LB still accepts and answers.
func TestUnpollListener(t *testing.T) {
	set := LabSettings("127.0.0.1:0", []string{fastBackend(t)})
	set.slowPathOnly = testSlowPathOnly()
	l := startLB(t, set)
	if l.loops == nil {
		t.Skip("no event loops")
	}
	var st unix.Stat_t
	raw, err := l.ln.(*net.TCPListener).SyscallConn()
	if err != nil {
		t.Fatal(err)
	}
	if err := raw.Control(func(fd uintptr) { err = unix.Fstat(int(fd), &st) }); err != nil {
		t.Fatal(err)
	}
	own := l.loops.group.EpollFDs()
	ents, err := os.ReadDir("/proc/self/fd")
	if err != nil {
		t.Skip("no /proc")
	}
	for _, e := range ents {
		n, _ := strconv.Atoi(e.Name())
		info, err := os.ReadFile("/proc/self/fdinfo/" + e.Name())
		if err != nil || own[n] {
			continue
		}
		if fds := epollTargets(info, st.Ino); len(fds) > 0 {
			t.Errorf("epoll set %d still watches the listener (descriptors %v)", n, fds)
		}
	}
	c, err := net.Dial("tcp", l.Addr())
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	o := &oneConn{c: c, br: bufio.NewReader(c)}
	if err := o.roundTrip(); err != nil {
		t.Fatal(err)
	}
}

func TestEpollTargets(t *testing.T) {
	info := []byte("pos:\t0\nflags:\t02000002\nmnt_id:\t16\nino:\t1057\n" +
		"tfd:        5 events: 8000201d data: 3f9e3370af000003  pos:0 ino:13f03ef sdev:9\n" +
		"tfd:        7 events:       19 data:          1eb8730  pos:0 ino:40e sdev:10\n" +
		"tfd:        8 events: 8000201d data: 3f9e3370ae000001  pos:0 ino:13f03ef sdev:9\n")
	if got := epollTargets(info, 0x13f03ef); !slices.Equal(got, []int{5, 8}) {
		t.Errorf("got %v, want [5 8]", got)
	}
	if got := epollTargets(info, 0x40f); len(got) != 0 {
		t.Errorf("got %v for an inode not watched", got)
	}
}
