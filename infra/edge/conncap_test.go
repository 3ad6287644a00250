package edge

import (
	"bufio"
	"io"
	"net"
	"net/netip"
	"testing"
	"time"

	"github.com/zero502/zero502/internal/testrig/poll"
)

// echoed dials addr and says whether a line sent comes back (the connection is relayed);
// the connection is left open for the caller to close.
func echoed(t *testing.T, addr string) (net.Conn, bool) {
	t.Helper()
	c, err := net.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	_ = c.SetDeadline(time.Now().Add(5 * time.Second))
	if _, err := io.WriteString(c, "ping\n"); err != nil {
		return c, false
	}
	line, err := bufio.NewReader(c).ReadString('\n')
	return c, err == nil && line == "ping\n"
}

// capHolds checks a listener capped at 2: two relayed connections, a third closed at once and
// counted, and room again once one of the two closes.
func capHolds(t *testing.T, addr string, overCap func() uint64) {
	t.Helper()
	a, okA := echoed(t, addr)
	defer a.Close()
	b, okB := echoed(t, addr)
	defer b.Close()
	if !okA || !okB {
		t.Fatalf("the first two connections were not relayed (%v, %v)", okA, okB)
	}
	c, okC := echoed(t, addr)
	c.Close()
	if okC {
		t.Fatal("a third connection beyond max 2 was relayed")
	}
	if got := overCap(); got != 1 {
		t.Fatalf("over_cap %d, want 1", got)
	}
	a.Close()
	poll.Until(t, 5*time.Second, "room again after one of the two closed", func() bool {
		d, ok := echoed(t, addr)
		d.Close()
		return ok
	})
}

// The forwarder holds at most MaxConns client connections, on either engine.
func TestForwarderClosesConnectionsBeyondMaxConns(t *testing.T) {
	m := &innerMap{}
	relay := startRelay(t, &Relay{Backend: startBackend(t, m), Map: m, Trusted: []netip.Prefix{loopback}})
	fwd := startForwarder(t, &Forwarder{Origins: []string{relay.Addr().String()}, MaxConns: 2})
	capHolds(t, fwd.Addr().String(), func() uint64 { return fwd.Counts().OverCap })
}

// The origin relay holds at most MaxConns connections.
func TestRelayClosesConnectionsBeyondMaxConns(t *testing.T) {
	m := &innerMap{}
	relay := startRelay(t, &Relay{Backend: startBackend(t, m), Map: m, Trusted: []netip.Prefix{loopback}, MaxConns: 2})
	capHolds(t, relay.Addr().String(), func() uint64 { return relay.Counts().OverCap })
}
