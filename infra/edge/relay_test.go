package edge

import (
	"bufio"
	"net"
	"net/netip"
	"testing"
	"time"

	"github.com/zero502/zero502/infra/origin"
	"github.com/zero502/zero502/internal/testrig/poll"
)

func TestEmptyConnectionsAreCountedButNeverLogged(t *testing.T) {
	ch := startChain(t)
	for _, tc := range []struct {
		name, addr string
	}{
		{"through the edge (PROXY header, then nothing)", ch.fwd.Addr().String()},
		{"straight to the origin (nothing at all)", ch.relay.Addr().String()},
	} {
		t.Run(tc.name, func(t *testing.T) {
			fwdBefore, relayBefore := ch.fwd.Counts().Empty, ch.relay.Counts().Empty
			c, err := net.DialTimeout("tcp", tc.addr, deadline)
			if err != nil {
				t.Fatal(err)
			}
			c.Close() // a health check: connect, close
			poll.Until(t, deadline, "the relay to count the empty connection", func() bool { return ch.relay.Counts().Empty == relayBefore+1 })
			if tc.addr == ch.fwd.Addr().String() {
				poll.Until(t, deadline, "the edge to count the empty connection", func() bool { return ch.fwd.Counts().Empty == fwdBefore+1 })
			}
		})
	}
	for _, line := range ch.logs.lines(t) {
		if _, ok := line["measured"]; ok {
			t.Errorf("an empty connection was logged: %v", line)
		}
	}

	// A connection that carries a byte is logged, by both.
	c := dialFrom(t, "127.0.0.1", ch.fwd.Addr().String())
	echoLine(t, c, bufio.NewReader(c), "x")
	c.Close()
	poll.Until(t, deadline, "the two connection lines", func() bool {
		return len(ch.logs.withMsg(t, "edge connection closed")) == 1 && len(ch.logs.withMsg(t, "origin connection closed")) == 1
	})
}

func TestInnerMapGivesEachBackendConnectionItsRealClient(t *testing.T) {
	ch := startChain(t)
	var inners []string
	for _, src := range []string{"127.0.0.2", "127.0.0.3"} {
		c := dialFrom(t, src, ch.fwd.Addr().String())
		who := ask(t, c, bufio.NewReader(c))
		if !who.Found || who.Claimed != mustAddrPort(t, c.LocalAddr()) {
			t.Fatalf("client %s: the backend looked up its peer %s and got %+v", c.LocalAddr(), who.Inner, who)
		}
		inners = append(inners, who.Inner)
		defer c.Close()
	}
	if n := ch.relay.Map.Len(); n != 2 {
		t.Fatalf("%d entries with two connections open", n)
	}
	for _, inner := range inners {
		ap := netip.MustParseAddrPort(inner)
		if _, ok := ch.relay.Map.Lookup(ap); !ok {
			t.Fatalf("no entry for %s while its connection is open", inner)
		}
	}
}

func TestInnerMapEntryLeavesWhenTheConnectionCloses(t *testing.T) {
	ch := startChain(t)
	c := dialFrom(t, "127.0.0.2", ch.fwd.Addr().String())
	who := ask(t, c, bufio.NewReader(c))
	inner := netip.MustParseAddrPort(who.Inner)
	if p, ok := ch.relay.Map.Lookup(inner); !ok || p.Claimed != who.Claimed {
		t.Fatalf("Lookup(%s) = %+v %v, want the client %v", inner, p, ok, who.Claimed)
	}
	c.Close()
	poll.Until(t, deadline, "the entry to leave the map", func() bool {
		_, ok := ch.relay.Map.Lookup(inner)
		return !ok && ch.relay.Map.Len() == 0
	})
}

func TestInnerMapLateRemovalKeepsANewerConnectionOnTheSamePort(t *testing.T) {
	var m innerMap
	port := netip.MustParseAddrPort("127.0.0.1:40000")
	removeOld := m.register(port, origin.Peer{Claimed: netip.MustParseAddrPort("198.51.100.1:1")})
	m.register(port, origin.Peer{Claimed: netip.MustParseAddrPort("198.51.100.2:2"), Since: time.Unix(1, 0)})
	removeOld()
	p, ok := m.Lookup(netip.MustParseAddrPort("[::ffff:127.0.0.1]:40000")) // as a dual-stack backend sees it
	if !ok || p.Claimed.String() != "198.51.100.2:2" {
		t.Fatalf("Lookup = %+v %v, want the newer connection's client", p, ok)
	}
}
