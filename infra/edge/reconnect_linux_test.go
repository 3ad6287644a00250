package edge

import (
	"bufio"
	"io"
	"net"
	"strings"
	"syscall"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"github.com/zero502/zero502/infra/adminapi"
	"github.com/zero502/zero502/internal/testrig/poll"
)

// startVanishingUpstream is an upstreamServer whose listen backlog is 0 (one connection waits
// to be accepted, at most): vanish stops its accepting and fills that backlog, so from then on
// the kernel drops every SYN to it and a connect hangs, as to a host dropped off the network.
func startVanishingUpstream(t *testing.T, name string) (u *upstreamServer, vanish func()) {
	t.Helper()
	u = startUpstream(t, name)
	tl := u.ln.(*net.TCPListener)
	raw, err := tl.SyscallConn()
	if err != nil {
		t.Fatal(err)
	}
	var lerr error
	if err := raw.Control(func(fd uintptr) { lerr = unix.Listen(int(fd), 0) }); err != nil || lerr != nil {
		t.Fatalf("listen backlog 0: %v %v", err, lerr)
	}
	return u, func() {
		_ = tl.SetDeadline(time.Unix(1, 0)) // its accept loop ends (after the accept under way, if any)
		<-u.served
		// A connection the kernel has not queued yet (its handshake's last ACK still on its way
		// over loopback) does not fill the queue: a SYN sent meanwhile is answered. So fill it
		// until the listener itself says its queue is full (TCP_INFO of a listening socket: the
		// queued connections in tcpi_unacked).
		poll.Until(t, deadline, "the accept queue of "+u.addr+" to be full", func() bool {
			if acceptQueue(t, raw) >= 1 {
				return true
			}
			if c, err := net.DialTimeout("tcp", u.addr, 100*time.Millisecond); err == nil {
				t.Cleanup(func() { c.Close() })
			}
			return acceptQueue(t, raw) >= 1
		})
	}
}

// acceptQueue is the number of connections waiting in the accept queue of the listener raw.
func acceptQueue(t *testing.T, raw syscall.RawConn) int {
	t.Helper()
	var info *unix.TCPInfo
	var ierr error
	if err := raw.Control(func(fd uintptr) { info, ierr = unix.GetsockoptTCPInfo(int(fd), unix.IPPROTO_TCP, unix.TCP_INFO) }); err != nil || ierr != nil {
		t.Fatalf("TCP_INFO of a listener: %v %v", err, ierr)
	}
	return int(info.Unacked)
}

// A connect in progress to an upstream that drops off the network is abandoned as soon as the
// checks take the upstream out, and the client's connection is served by the other upstream,
// long before the connect timeout; it is counted once.
func TestConnectToAnEjectedUpstreamIsAbandonedForTheOtherAtOnce(t *testing.T) {
	h, vanish := startVanishingUpstream(t, "h")
	g := startUpstream(t, "g")
	fwd := startForwarder(t, &Forwarder{Origins: []string{h.addr, g.addr}, Metrics: "127.0.0.1:0",
		ConnectTimeout: 30 * time.Second,
		// a vanished upstream is out after five failed checks (about 1.2 s), the healthy one
		// never on a loaded machine
		Check: UpstreamCheck{Interval: 150 * time.Millisecond, Timeout: 120 * time.Millisecond, HealthyThreshold: 2, UnhealthyThreshold: 5}})
	edge := fwd.Addr().String()

	// a connection held open on g: the next one goes to h (least connections)
	for i := 0; ; i++ {
		if i == 10 {
			t.Fatal("no connection reached g in 10 tries")
		}
		c := dialFrom(t, "127.0.0.1", edge)
		br := bufio.NewReader(c)
		if _, err := io.WriteString(c, "hello\n"); err != nil {
			t.Fatal(err)
		}
		line, err := br.ReadString('\n')
		if err != nil {
			t.Fatalf("through the edge: %v", err)
		}
		if strings.HasPrefix(line, "g:") {
			break
		}
		c.Close()
		poll.Until(t, deadline, "the edge to see the connection to h end", func() bool { return upstreamState(fwd, h.addr).InFlight == 0 })
	}

	vanish()
	t0 := time.Now()
	c := dialFrom(t, "127.0.0.1", edge)
	if _, err := io.WriteString(c, "hello\n"); err != nil {
		t.Fatal(err)
	}
	line, err := bufio.NewReader(c).ReadString('\n')
	if took := time.Since(t0); err != nil || line != "g:hello\n" || took >= fwd.ConnectTimeout {
		t.Fatalf("after h vanished: %q %v after %s; want g's echo before the connect timeout (%s)", line, err, took, fwd.ConnectTimeout)
	}
	st := upstreamState(fwd, h.addr)
	if last := st.Transitions[len(st.Transitions)-1]; st.State != adminapi.Unhealthy || !strings.Contains(last.Reason, "consecutive failed checks") {
		t.Fatalf("h: %s, last transition %+v; want unhealthy by its checks", st.State, last)
	}
	if got := scrape(t, fwd.MetricsAddr()); !strings.Contains(got, "\nzero502_edge_reconnected_after_eject_total 1\n") {
		t.Fatalf("/metrics lacks zero502_edge_reconnected_after_eject_total 1:\n%s", got)
	}
	if n := fwd.Counts().Unreachable; n != 0 {
		t.Fatalf("%d client connections found no upstream", n)
	}
}
