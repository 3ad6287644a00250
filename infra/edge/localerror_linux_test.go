package edge

import (
	"net"
	"net/netip"
	"os"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/zero502/zero502/infra/standing"
	"github.com/zero502/zero502/internal/testrig/fdlimit"
	"github.com/zero502/zero502/internal/testrig/poll"
)

// A connect that fails for a reason of the edge's own (socket(): EMFILE, the edge out of
// descriptors) is not the upstream's failure: every healthy upstream stays in rotation, so a
// client that fills the descriptor table (--max-conns × 2 descriptors) cannot eject them all,
// close the health listener and take the edge out of the A set.
func TestLocalDescriptorExhaustionDoesNotEjectHealthyUpstreams(t *testing.T) {
	// upstreams that complete handshakes in the kernel and are never accepted: no descriptor here
	var ups []string
	for range 2 {
		ln, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { ln.Close() })
		ups = append(ups, ln.Addr().String())
	}
	log, lines := newLogs()
	f := startForwarder(t, &Forwarder{Origins: ups, Health: "127.0.0.1:0", Logger: log})
	poll.Until(t, deadline, "both upstreams in rotation", func() bool { return f.ups.inRotation() == 2 })

	restore := fdlimit.Lower(t, 2)
	// one free slot for the client's socket, one for the edge's accept; the upstream dial gets none
	c, err := net.DialTimeout("tcp", f.Addr().String(), 2*time.Second)
	time.Sleep(500 * time.Millisecond)
	restore()
	if err == nil {
		c.Close()
	}
	for _, l := range lines.withMsg(t, "edge: upstream unreachable; ejected, trying the next") {
		t.Logf("edge log: origin %v error %v", l["origin"], l["error"])
	}
	for _, u := range f.ups.all() {
		if st := u.State(); st != standing.Healthy {
			t.Errorf("upstream %s is %s after the edge ran out of descriptors (%v): ejected for the edge's own failure; in rotation now: %d",
				u.addr, st, u.status().LastError, f.ups.inRotation())
		}
	}
}

// A connect that fails with EMFILE, ENFILE, ENOBUFS, ENOMEM or EADDRNOTAVAIL failed for the
// edge's own lack of descriptors, memory, buffers or local ports: the upstream stays in rotation,
// the client connection is closed (no other upstream tried), counted as local_error and logged
// at warn level once; any other failure (ECONNREFUSED) ejects the upstream and tries the next.
func TestLocalDialErrorsAreCountedAndLoggedNotEjected(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { ln.Close() })
	log, lines := newLogs()
	f := startForwarder(t, &Forwarder{Origins: []string{ln.Addr().String()}, Logger: log})
	u := f.ups.all()[0]
	local := []syscall.Errno{syscall.EMFILE, syscall.ENFILE, syscall.ENOBUFS, syscall.ENOMEM, syscall.EADDRNOTAVAIL}
	for _, errno := range local {
		if f.dialFailed(netip.AddrPort{}, u, dialError(u.addr, os.NewSyscallError("socket", errno))) {
			t.Errorf("%v: dialFailed says try the next upstream, want the client connection closed", errno)
		}
		if st := u.State(); st != standing.Healthy {
			t.Fatalf("%v: upstream %s, want healthy: ejected for the edge's own failure", errno, st)
		}
	}
	if c := f.Counts(); c.LocalError != uint64(len(local)) || c.Unreachable != 0 {
		t.Errorf("counts %+v: want local_error %d, unreachable 0", c, len(local))
	}
	warned := lines.withMsg(t, "edge: cannot connect for lack of this host's own resources; upstream kept in rotation, client connection closed: "+
		"raise the descriptor limit (LimitNOFILE, ulimit -n) above twice --max-conns, or lower --max-conns")
	if len(warned) != len(local) || warned[0]["level"] != "WARN" {
		t.Errorf("%d lines for %d local errors (%v), want one each at WARN:\n%s", len(warned), len(local), warned, lines)
	}
	if !f.dialFailed(netip.AddrPort{}, u, dialError(u.addr, os.NewSyscallError("connect", syscall.ECONNREFUSED))) || u.State() == standing.Healthy {
		t.Errorf("ECONNREFUSED: upstream %s, want ejected and the next one tried", u.State())
	}
}

// An accept that fails for the origin relay's own lack of descriptors is retried after a pause,
// and said at warn level, as the forwarder's event loops say theirs: clients waiting in the
// backlog while nothing in the log says why is the fault no one can find.
func TestRelaySaysWhenAcceptFailsForLackOfDescriptors(t *testing.T) {
	log, lines := newLogs()
	r := startRelay(t, &Relay{Backend: startBackend(t, nil), Logger: log})

	// The client's socket exists before the limit drops to nothing, and connecting it takes no
	// descriptor: the relay's accept is the only one that needs a slot, and finds none whatever
	// else in this process opens or closes meanwhile.
	fd, err := syscall.Socket(syscall.AF_INET, syscall.SOCK_STREAM|syscall.SOCK_CLOEXEC, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer syscall.Close(fd)
	port := r.Addr().(*net.TCPAddr).Port
	restore := fdlimit.Lower(t, 0)
	func() {
		defer restore()
		if err := syscall.Connect(fd, &syscall.SockaddrInet4{Port: port, Addr: [4]byte{127, 0, 0, 1}}); err != nil {
			t.Fatalf("connect to the relay: %v", err)
		}
		poll.Until(t, deadline, "a warning that accepting failed", func() bool {
			for _, l := range lines.lines(t) {
				if msg, _ := l["msg"].(string); l["level"] == "WARN" && strings.Contains(msg, "accept failed") {
					return true
				}
			}
			return false
		})
	}()
}
