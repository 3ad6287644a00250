package edge

import (
	"bufio"
	"io"
	"net"
	"net/netip"
	"strings"
	"testing"
	"time"

	"github.com/zero502/zero502/infra/origin"
	"github.com/zero502/zero502/internal/testrig/poll"
)

// The header rides with the client's first bytes when they are already there, but never waits
// for them: an origin that reads the header and then speaks first (SMTP, a server greeting)
// must get it while the client is still silent.
func TestForwarderSendsTheHeaderAloneWhenTheServerSpeaksFirst(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	ol := &origin.Listener{Listener: ln, Trusted: []netip.Prefix{loopback}}
	defer ol.Close()
	claimed := make(chan netip.AddrPort, 1)
	go func() {
		for { // the forwarder's upstream checks connect too, and send nothing
			c, err := ol.Accept()
			if err != nil {
				return
			}
			go func() {
				defer c.Close()
				peer := c.(*origin.Conn).Peer() // waits for the header
				if !peer.Claimed.IsValid() {
					return // a check: no header
				}
				claimed <- peer.Claimed
				if _, err := io.WriteString(c, "220 greeting\n"); err != nil {
					return
				}
				_, _ = io.Copy(c, c) // then echo
			}()
		}
	}()
	fwd := startForwarder(t, &Forwarder{Origins: []string{ol.Addr().String()}})
	client := dialFrom(t, "127.0.0.2", fwd.Addr().String())
	defer client.Close()
	_ = client.SetReadDeadline(time.Now().Add(deadline))
	r := bufio.NewReader(client)
	greeting, err := r.ReadString('\n')
	if err != nil || greeting != "220 greeting\n" {
		t.Fatalf("a silent client got %q, %v; want the origin's greeting (the header must not wait for client bytes)", greeting, err)
	}
	if got, want := <-claimed, mustAddrPort(t, client.LocalAddr()); got != want {
		t.Errorf("the origin read Claimed %v from the header, want the client %v", got, want)
	}
	echoLine(t, client, r, "helo")
}

// The bytes that went out together with the header are the client's bytes all the same: the
// log line counts them in up_bytes, and not the header.
func TestForwarderCountsTheBytesSentWithTheHeader(t *testing.T) {
	ch := startChain(t)
	client := dialFrom(t, "127.0.0.2", ch.fwd.Addr().String())
	// Written before the edge has dialled the origin, so they are usually sent with the header.
	const msg = "first bytes\n"
	if _, err := io.WriteString(client, msg); err != nil {
		t.Fatal(err)
	}
	r := bufio.NewReader(client)
	_ = client.SetReadDeadline(time.Now().Add(deadline))
	if got, err := r.ReadString('\n'); err != nil || got != msg {
		t.Fatalf("echo %q, %v; want %q", got, err, msg)
	}
	client.Close()
	poll.Until(t, deadline, "the edge's connection line", func() bool { return len(ch.logs.withMsg(t, "edge connection closed")) == 1 })
	line := ch.logs.withMsg(t, "edge connection closed")[0]
	if up, _ := line["up_bytes"].(float64); int(up) != len(msg) {
		t.Errorf("up_bytes = %v, want %d (the client's bytes, without the header): %v", line["up_bytes"], len(msg),
			strings.TrimSpace(ch.logs.String()))
	}
}
