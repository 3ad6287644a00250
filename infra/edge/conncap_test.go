package edge

import (
	"bufio"
	"io"
	"net"
	"net/netip"
	"strings"
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

// A negative --max-conns is refused, by the Forwarder and the Relay alike, naming the flag and
// the value, instead of being served as DefaultMaxConns.
func TestNegativeMaxConnsIsRefused(t *testing.T) {
	f := &Forwarder{Listen: "127.0.0.1:0", Origins: []string{"127.0.0.1:1"}, MaxConns: -1}
	if err := f.Validate(); err == nil || !strings.Contains(err.Error(), "--max-conns -1") {
		t.Errorf("Forwarder.Validate with --max-conns -1: %v (served as %d)", err, maxConns(f.MaxConns))
	}
	r := &Relay{Listen: "127.0.0.1:0", Backend: "127.0.0.1:1", MaxConns: -1}
	if err := r.Validate(); err == nil || !strings.Contains(err.Error(), "--max-conns -1") {
		t.Errorf("Relay.Validate with --max-conns -1: %v (served as %d)", err, maxConns(r.MaxConns))
	}
}

// outcome="accepted" is every connection accepted, on both engines: one closed at once over
// --max-conns is accepted too (over_cap is a part of accepted), on the event loops and on the
// goroutine path alike.
func TestOverCapConnectionsCountAsAcceptedOnBothEngines(t *testing.T) {
	for _, goroutines := range []bool{false, true} {
		name := "loops"
		if goroutines {
			name = "goroutines"
		}
		t.Run(name, func(t *testing.T) {
			m := &innerMap{}
			relay := startRelay(t, &Relay{Backend: startBackend(t, m), Map: m, Trusted: []netip.Prefix{loopback}})
			f := &Forwarder{Origins: []string{relay.Addr().String()}, MaxConns: 1}
			f.Listen = "127.0.0.1:0"
			f.Check.Interval = time.Hour
			f.goroutines = goroutines
			if err := f.Open(); err != nil {
				t.Fatal(err)
			}
			serveUntilCleanup(t, f.Serve)
			a, ok := echoed(t, f.Addr().String())
			defer a.Close()
			if !ok {
				t.Fatal("first connection not relayed")
			}
			b, okB := echoed(t, f.Addr().String())
			b.Close()
			if okB {
				t.Fatal("second connection relayed beyond max 1")
			}
			poll.Until(t, 5*time.Second, "over_cap 1", func() bool { return f.Counts().OverCap == 1 })
			if c := f.Counts(); c.Accepted != 2 {
				t.Fatalf("counts %+v: accepted %d, want 2 (both connections were accepted; one closed over cap)", c, c.Accepted)
			}
		})
	}
}
