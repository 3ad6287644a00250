package edge

import (
	"bytes"
	"io"
	"math/rand/v2"
	"net"
	"net/netip"
	"strings"
	"testing"
	"time"

	"github.com/zero502/zero502/internal/testrig/tcpserver"
)

// Megabytes each way at once, through an echo backend that reads and writes in small pieces:
// both directions fill their socket buffers, so the forwarder keeps bytes a destination did not
// take yet and waits for it (backpressure), and every byte still arrives once, in order.
func TestForwarderMovesMegabytesBothWaysUnderBackpressure(t *testing.T) {
	backend := tcpserver.Serve(t, func(c net.Conn) {
		defer c.Close()
		buf := make([]byte, 1000)
		for {
			n, err := c.Read(buf)
			if n > 0 {
				if _, werr := c.Write(buf[:n]); werr != nil {
					return
				}
			}
			if err != nil {
				closeWrite(c)
				return
			}
		}
	})
	relay := startRelay(t, &Relay{Backend: backend, Trusted: []netip.Prefix{loopback}})
	fwd := startForwarder(t, &Forwarder{Origins: []string{relay.Addr().String()}})
	client := dialFrom(t, "127.0.0.1", fwd.Addr().String())
	_ = client.SetDeadline(time.Now().Add(deadline))
	want := make([]byte, 8<<20)
	for i := range want {
		want[i] = byte(rand.Uint32())
	}
	wrote := make(chan error, 1)
	go func() {
		_, err := client.Write(want)
		if err == nil {
			err = client.CloseWrite()
		}
		wrote <- err
	}()
	got, err := io.ReadAll(client)
	if err != nil {
		t.Fatalf("read the echo: %v after %d bytes", err, len(got))
	}
	if err := <-wrote; err != nil {
		t.Fatalf("write: %v", err)
	}
	if !bytes.Equal(got, want) {
		t.Fatalf("echo: %d bytes back, want the %d sent, in order", len(got), len(want))
	}
}

// An upstream given by name is resolved (off the event loops) and connected to.
func TestForwarderConnectsToAnUpstreamByName(t *testing.T) {
	relay := startRelay(t, &Relay{Backend: startBackend(t, nil), Trusted: []netip.Prefix{loopback}})
	_, port, _ := net.SplitHostPort(relay.Addr().String())
	fwd := startForwarder(t, &Forwarder{Origins: []string{"localhost:" + port}})
	client := dialFrom(t, "127.0.0.1", fwd.Addr().String())
	defer client.Close()
	_ = client.SetDeadline(time.Now().Add(deadline))
	if _, err := io.WriteString(client, "by name\n"); err != nil {
		t.Fatal(err)
	}
	line := make([]byte, len("by name\n"))
	if _, err := io.ReadFull(client, line); err != nil || !strings.HasPrefix(string(line), "by name") {
		t.Fatalf("echo through an upstream by name: %q, %v", line, err)
	}
}
