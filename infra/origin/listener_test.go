package origin

import (
	"io"
	"net"
	"net/netip"
	"testing"
	"time"

	"github.com/pires/go-proxyproto"
)

// acceptOne listens on 127.0.0.1 through l, connects, writes out from the client and returns the
// accepted connection (sniffed) and the client's end.
func acceptOne(t *testing.T, l *Listener, out []byte) (*Conn, net.Conn) {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	l.Listener = ln
	t.Cleanup(func() { _ = l.Close() })
	client, err := net.Dial("tcp", ln.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = client.Close() })
	if _, err := client.Write(out); err != nil {
		t.Fatal(err)
	}
	c, err := l.Accept()
	if err != nil {
		t.Fatal(err)
	}
	oc := c.(*Conn)
	t.Cleanup(func() { _ = oc.Close() })
	_ = oc.Sniff()
	return oc, client
}

// closedByPeer says the other end closed c (a read sees EOF or a reset rather than a timeout).
func closedByPeer(t *testing.T, c net.Conn) bool {
	t.Helper()
	_ = c.SetReadDeadline(time.Now().Add(10 * time.Second))
	_, err := c.Read(make([]byte, 1))
	if ne, ok := err.(net.Error); ok && ne.Timeout() {
		return false
	}
	return err != nil
}

// forgedHeader is a v2 header claiming the client 203.0.113.66:4711, then a first line.
func forgedHeader(t *testing.T) []byte {
	t.Helper()
	h := proxyproto.HeaderProxyFromAddrs(2, &net.TCPAddr{IP: net.IPv4(203, 0, 113, 66), Port: 4711},
		&net.TCPAddr{IP: net.IPv4(127, 0, 0, 1), Port: 443})
	b, err := h.Format()
	if err != nil {
		t.Fatal(err)
	}
	return append(b, "hello\n"...)
}

// With no trusted edges a PROXY header is no one's to send, as for the agent (no --trusted) and
// the LB (no accept_proxy_from): it is not believed and its connection is closed.
func TestListenerWithoutTrustedEdgesBelievesNoHeader(t *testing.T) {
	l := &Listener{HeaderTimeout: 10 * time.Second}
	c, client := acceptOne(t, l, forgedHeader(t))
	if err := c.Sniff(); err == nil {
		t.Errorf("Sniff = nil: a header from %v was believed with no trusted edges", c.Peer().Measured)
	}
	if p := c.Peer(); p.Claimed.IsValid() {
		t.Errorf("Peer().Claimed = %v, want no claim: the forged address must not reach a log line", p.Claimed)
	}
	if got := l.Counts(); got.Headers != 0 || got.Untrusted != 1 {
		t.Errorf("counts %+v, want Headers:0 Untrusted:1", got)
	}
	if !closedByPeer(t, client) {
		t.Error("the connection with an unbelieved header was not closed")
	}
}

func TestListenerBelievesAHeaderOnlyFromATrustedEdge(t *testing.T) {
	loopback := netip.MustParsePrefix("127.0.0.0/8")
	t.Run("from a trusted edge", func(t *testing.T) {
		l := &Listener{HeaderTimeout: 10 * time.Second, Trusted: []netip.Prefix{loopback}}
		c, _ := acceptOne(t, l, forgedHeader(t))
		if err := c.Sniff(); err != nil {
			t.Fatal(err)
		}
		if p := c.Peer(); p.Header != HeaderV2 || p.Claimed.String() != "203.0.113.66:4711" {
			t.Errorf("Peer = %+v, want v2 claimed 203.0.113.66:4711", p)
		}
		if line, _ := io.ReadAll(io.LimitReader(c, 6)); string(line) != "hello\n" {
			t.Errorf("the stream after the header is %q", line)
		}
		if got := l.Counts(); got.Headers != 1 || got.Untrusted != 0 {
			t.Errorf("counts %+v, want Headers:1", got)
		}
	})
	t.Run("no header from anyone is passed on", func(t *testing.T) {
		l := &Listener{HeaderTimeout: 10 * time.Second}
		c, _ := acceptOne(t, l, []byte("hello\n"))
		if err := c.Sniff(); err != nil {
			t.Fatal(err)
		}
		if line, _ := io.ReadAll(io.LimitReader(c, 6)); string(line) != "hello\n" {
			t.Errorf("the stream is %q, want it untouched", line)
		}
		if got := l.Counts(); got.PassedThrough != 1 {
			t.Errorf("counts %+v, want PassedThrough:1", got)
		}
	})
}

// A trusted edge written as the IPv4-mapped form a dual-stack socket shows it in
// (::ffff:127.0.0.1, as an address or as a range) is that IPv4 edge: the single address already
// counted as IPv4, and a range of the same edge must not silently trust no one.
func TestListenerTrustsAnEdgeGivenInItsIPv4MappedForm(t *testing.T) {
	for _, entry := range []string{"::ffff:127.0.0.1", "::ffff:127.0.0.1/128", "::ffff:127.0.0.0/104"} {
		t.Run(entry, func(t *testing.T) {
			trusted, err := ParseTrusted([]string{entry})
			if err != nil {
				t.Fatal(err)
			}
			l := &Listener{HeaderTimeout: 10 * time.Second, Trusted: trusted}
			c, _ := acceptOne(t, l, forgedHeader(t))
			if err := c.Sniff(); err != nil {
				t.Fatalf("Sniff = %v: --trusted %s refused the header of the edge it names", err, entry)
			}
			if p := c.Peer(); p.Claimed.String() != "203.0.113.66:4711" {
				t.Errorf("Peer = %+v, want claimed 203.0.113.66:4711", p)
			}
		})
	}
}
