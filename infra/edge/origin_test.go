package edge

import (
	"bufio"
	"crypto/tls"
	"io"
	"net"
	"net/netip"
	"strings"
	"testing"
	"time"

	"github.com/pires/go-proxyproto"

	"github.com/zero502/zero502/infra/origin"
	"github.com/zero502/zero502/internal/testrig/poll"
	"github.com/zero502/zero502/internal/testrig/tcpserver"
	"github.com/zero502/zero502/internal/testrig/testpki"
)

// originEcho serves an origin.Listener on 127.0.0.1:0 with a line echo (through TLS when cfg is
// set), reporting the origin.Peer of every connection once it has read its first line.
type originEcho struct {
	ln    *origin.Listener
	peers chan origin.Peer
}

func startOriginEcho(t *testing.T, ol *origin.Listener, cfg *tls.Config) *originEcho {
	t.Helper()
	ol.Listener = tcpserver.Listen(t)
	e := &originEcho{ln: ol, peers: make(chan origin.Peer, 16)}
	tcpserver.ServeOn(t, ol, func(c net.Conn) {
		oc := c.(*origin.Conn)
		var rw io.ReadWriter = oc
		if cfg != nil {
			rw = tls.Server(oc, cfg)
		}
		r := bufio.NewReader(rw)
		for first := true; ; first = false {
			line, err := r.ReadString('\n')
			if err != nil {
				return
			}
			if first {
				e.peers <- oc.Peer()
			}
			if _, err := io.WriteString(rw, line); err != nil {
				return
			}
		}
	})
	return e
}

func (e *originEcho) addr() string { return e.ln.Addr().String() }

func (e *originEcho) nextPeer(t *testing.T) origin.Peer {
	t.Helper()
	select {
	case p := <-e.peers:
		return p
	case <-time.After(deadline):
		t.Fatal("the origin saw no connection")
	}
	return origin.Peer{}
}

func TestOriginPassesConnectionsWithoutAHeaderThroughUntouched(t *testing.T) {
	for _, tc := range []struct {
		name, first string
	}{
		{"plain text", "hello origin"},
		{"starts like the v2 signature, then is not", "\r\n\r\n\x00\r\nQUIZ: not a header"},
		{"starts like a v1 line, then is not", "PROXIMITY alert"},
		{"a single byte", "x"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			e := startOriginEcho(t, &origin.Listener{Trusted: []netip.Prefix{loopback}}, nil)
			c := dialFrom(t, "127.0.0.2", e.addr())
			r := bufio.NewReader(c)
			if _, err := io.WriteString(c, tc.first+"\n"); err != nil {
				t.Fatal(err)
			}
			got := make([]byte, len(tc.first)+1)
			if _, err := io.ReadFull(r, got); err != nil || string(got) != tc.first+"\n" {
				t.Fatalf("echo of %q = %q, %v", tc.first, got, err)
			}
			p := e.nextPeer(t)
			if p.Header != origin.HeaderNone || p.Claimed.IsValid() {
				t.Errorf("Peer = %+v, want no header and no claim", p)
			}
			if want := mustAddrPort(t, c.LocalAddr()); p.Measured != want {
				t.Errorf("Measured = %v, want the client's socket address %v", p.Measured, want)
			}
			echoLine(t, c, r, "and the rest of the stream")
			if got := e.ln.Counts(); got.PassedThrough != 1 || got.Headers != 0 {
				t.Errorf("counts %+v, want one passed through", got)
			}
		})
	}
}

func TestOriginPassesTLSThroughUntouchedAndBehindTheEdge(t *testing.T) {
	serverCfg, clientCfg := selfSignedTLS(t)
	e := startOriginEcho(t, &origin.Listener{Trusted: []netip.Prefix{loopback}}, serverCfg)

	t.Run("a TLS client straight to the origin", func(t *testing.T) {
		raw := dialFrom(t, "127.0.0.2", e.addr())
		c := tls.Client(raw, clientCfg)
		r := bufio.NewReader(c)
		echoLine(t, c, r, "over TLS, no header")
		if p := e.nextPeer(t); p.Header != origin.HeaderNone || p.Claimed.IsValid() || p.Measured != mustAddrPort(t, raw.LocalAddr()) {
			t.Errorf("Peer = %+v, want no header, no claim, measured %v", p, raw.LocalAddr())
		}
	})
	t.Run("a TLS client through the edge", func(t *testing.T) {
		fwd := startForwarder(t, &Forwarder{Origins: []string{e.addr()}})
		raw := dialFrom(t, "127.0.0.2", fwd.Addr().String())
		c := tls.Client(raw, clientCfg)
		r := bufio.NewReader(c)
		echoLine(t, c, r, "over TLS, behind a PROXY v2 header")
		p := e.nextPeer(t)
		if p.Header != origin.HeaderV2 || p.Claimed != mustAddrPort(t, raw.LocalAddr()) || p.Measured.Addr().String() != "127.0.0.1" {
			t.Errorf("Peer = %+v, want v2, claimed %v, measured the edge on 127.0.0.1", p, raw.LocalAddr())
		}
	})
}

func TestOriginClosesAMalformedHeaderAndOthersGoOn(t *testing.T) {
	v2 := string(proxyproto.SIGV2)
	// The header timeout runs from the server's first read, before the client has written: only
	// the case about the timeout gets a short one (still far above loopback latency, since its
	// bytes must arrive within it); the others get one no scheduling hiccup can reach, so a slow
	// write on a loaded machine cannot turn their bad header into a pass-through.
	for _, tc := range []struct {
		name, bytes   string
		headerTimeout time.Duration
	}{
		{"unknown version and command", v2 + "\x99\x11\x00\x0cjunkjunkjunk", time.Minute},
		{"PROXY over UNSPEC", v2 + "\x21\x00\x00\x00", time.Minute},
		{"length too short for TCP over IPv4", v2 + "\x21\x11\x00\x04\x7f\x00\x00\x01", time.Minute},
		{"v1 line without CRLF", "PROXY TCP4 1.2.3.4 5.6.7.8 1 2\n", time.Minute},
		{"signature then silence past the header timeout", v2 + "\x21\x11", time.Second},
	} {
		t.Run(tc.name, func(t *testing.T) {
			log, lines := newLogs()
			e := startOriginEcho(t, &origin.Listener{Logger: log, HeaderTimeout: tc.headerTimeout}, nil)
			bad := dialFrom(t, "127.0.0.1", e.addr())
			good := dialFrom(t, "127.0.0.1", e.addr())
			goodR := bufio.NewReader(good)
			if _, err := io.WriteString(bad, tc.bytes); err != nil {
				t.Fatal(err)
			}
			echoLine(t, good, goodR, "unaffected")
			if !closedByPeer(bad) {
				t.Fatal("the connection with a malformed header was not closed")
			}
			echoLine(t, good, goodR, "still unaffected")
			poll.Until(t, deadline, "the malformed count", func() bool { return e.ln.Counts().Malformed == 1 })
			got := lines.withMsg(t, "edge origin: malformed PROXY header; connection closed")
			if len(got) != 1 || got[0]["measured"] != bad.LocalAddr().String() || !strings.Contains(got[0]["error"].(string), "malformed PROXY header") {
				t.Fatalf("want one clear line with the measured address, got:\n%s", lines)
			}
		})
	}
}

func TestOriginSlowClientDoesNotBlockAcceptForOthers(t *testing.T) {
	relay := startRelay(t, &Relay{Backend: startBackend(t, nil), HeaderTimeout: time.Minute})
	dialFrom(t, "127.0.0.1", relay.Addr().String()) // connects, sends nothing
	slowPartial := dialFrom(t, "127.0.0.1", relay.Addr().String())
	if _, err := slowPartial.Write(proxyproto.SIGV2[:7]); err != nil { // half a signature, then nothing
		t.Fatal(err)
	}
	poll.Until(t, deadline, "both slow connections accepted", func() bool { return relay.Counts().Accepted == 2 })
	for range 3 {
		c := dialFrom(t, "127.0.0.1", relay.Addr().String())
		echoLine(t, c, bufio.NewReader(c), "not held up by the slow ones")
		c.Close()
	}
	if got := relay.Counts(); got.PassedThrough != 3 {
		t.Fatalf("counts %+v: want the three quick ones passed through while the slow ones still wait", got)
	}
}

func TestOriginRejectsAHeaderFromAnUntrustedPeer(t *testing.T) {
	log, lines := newLogs()
	e := startOriginEcho(t, &origin.Listener{Logger: log, Trusted: []netip.Prefix{netip.MustParsePrefix("10.0.0.0/8")}}, nil)

	forged := dialFrom(t, "127.0.0.1", e.addr())
	h := proxyproto.HeaderProxyFromAddrs(2, &net.TCPAddr{IP: net.IPv4(203, 0, 113, 9), Port: 4711}, forged.RemoteAddr())
	if _, err := h.WriteTo(forged); err != nil {
		t.Fatal(err)
	}
	if _, err := io.WriteString(forged, "hello\n"); err != nil {
		t.Fatal(err)
	}
	if !closedByPeer(forged) {
		t.Fatal("a header from outside the trusted edges was accepted")
	}
	poll.Until(t, deadline, "the untrusted count", func() bool { return e.ln.Counts().Untrusted == 1 })
	got := lines.withMsg(t, "edge origin: PROXY header from a peer outside the trusted edge ranges; connection closed")
	if len(got) != 1 || got[0]["claimed"] != "203.0.113.9:4711" || got[0]["measured"] != forged.LocalAddr().String() {
		t.Fatalf("want one line with the forged claim and the measured peer, got:\n%s", lines)
	}

	plain := dialFrom(t, "127.0.0.1", e.addr()) // no header: passed on from anyone
	echoLine(t, plain, bufio.NewReader(plain), "no claim, no problem")
}

func TestOriginAcceptsV1AndV2LocalHeaders(t *testing.T) {
	e := startOriginEcho(t, &origin.Listener{Trusted: []netip.Prefix{loopback}}, nil)

	v1 := dialFrom(t, "127.0.0.1", e.addr())
	if _, err := io.WriteString(v1, "PROXY TCP4 198.51.100.7 127.0.0.1 5555 443\r\n"); err != nil {
		t.Fatal(err)
	}
	echoLine(t, v1, bufio.NewReader(v1), "after a v1 line")
	if p := e.nextPeer(t); p.Header != origin.HeaderV1 || p.Claimed.String() != "198.51.100.7:5555" {
		t.Errorf("v1: origin.Peer = %+v, want claimed 198.51.100.7:5555", p)
	}

	local := dialFrom(t, "127.0.0.1", e.addr())
	if _, err := local.Write(append(append([]byte{}, proxyproto.SIGV2...), 0x20, 0x00, 0x00, 0x00)); err != nil {
		t.Fatal(err)
	}
	echoLine(t, local, bufio.NewReader(local), "after a v2 LOCAL header")
	if p := e.nextPeer(t); p.Header != origin.HeaderV2 || p.Claimed.IsValid() {
		t.Errorf("v2 LOCAL: origin.Peer = %+v, want v2 and no claim", p)
	}
}

// selfSignedTLS is a server config with a fresh certificate for 127.0.0.1 and a client config
// that trusts exactly its CA.
func selfSignedTLS(t *testing.T) (server, client *tls.Config) {
	t.Helper()
	ca := testpki.New(t, "zero502 edge test CA")
	return ca.Server(t, "127.0.0.1"), ca.Client("127.0.0.1")
}
