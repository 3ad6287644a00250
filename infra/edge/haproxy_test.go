package edge

import (
	"bufio"
	"fmt"
	"net"
	"net/netip"
	"os"
	"os/exec"
	"path/filepath"
	"testing"
	"time"

	"github.com/zero502/zero502/infra/origin"
	"github.com/zero502/zero502/internal/testrig/poll"
	"github.com/zero502/zero502/internal/testrig/syncbuffer"
	"github.com/zero502/zero502/internal/testrig/tcpserver"
)

// HAProxy is the independent PROXY protocol peer (Debian package haproxy; .ci/run installs it).
// These tests install nothing: without haproxy in PATH they skip.

func TestHAProxySendProxyV2ReachesOurOriginListener(t *testing.T) {
	haproxy := needHAProxy(t)
	m := &innerMap{}
	relay := startRelay(t, &Relay{Backend: startBackend(t, m), Map: m, Trusted: []netip.Prefix{loopback}})
	front := tcpserver.FreeAddr(t)
	startHAProxy(t, haproxy, front, fmt.Sprintf(`
frontend clients
    bind %s
    default_backend origin
backend origin
    server origin %s send-proxy-v2
`, front, relay.Addr()))

	client := dialFrom(t, "127.0.0.2", front)
	who := ask(t, client, bufio.NewReader(client))
	if !who.Found || who.Header != origin.HeaderV2 {
		t.Fatalf("the origin did not parse HAProxy's header: %+v", who)
	}
	if want := mustAddrPort(t, client.LocalAddr()); who.Claimed != want {
		t.Errorf("Claimed = %v, want the client HAProxy saw, %v", who.Claimed, want)
	}
	if who.Measured.Addr().String() != "127.0.0.1" {
		t.Errorf("Measured = %v, want HAProxy's own address on 127.0.0.1", who.Measured)
	}
}

func TestHAProxyAcceptProxyTakesOurForwardersHeader(t *testing.T) {
	haproxy := needHAProxy(t)
	m := &innerMap{}
	relay := startRelay(t, &Relay{Backend: startBackend(t, m), Map: m, Trusted: []netip.Prefix{loopback}})
	front := tcpserver.FreeAddr(t)
	startHAProxy(t, haproxy, front, fmt.Sprintf(`
frontend edges
    bind %s accept-proxy
    default_backend origin
backend origin
    server origin %s send-proxy-v2
`, front, relay.Addr()))
	fwd := startForwarder(t, &Forwarder{Origins: []string{front}})

	// client → our forwarder (PROXY v2) → HAProxy accept-proxy → HAProxy send-proxy-v2 → our origin.
	client := dialFrom(t, "127.0.0.2", fwd.Addr().String())
	who := ask(t, client, bufio.NewReader(client))
	if !who.Found {
		t.Fatalf("no entry in the inner map: %+v", who)
	}
	if want := mustAddrPort(t, client.LocalAddr()); who.Claimed != want {
		t.Fatalf("Claimed = %v, want the original client %v: HAProxy did not take our header", who.Claimed, want)
	}
}

// needHAProxy is the haproxy binary in PATH, or skips the test.
func needHAProxy(t *testing.T) string {
	t.Helper()
	bin, err := exec.LookPath("haproxy")
	if err != nil {
		t.Skip("haproxy is not in PATH (Debian: apt-get install haproxy; .ci/run installs it): " +
			"skipping the test against an independent PROXY protocol peer")
	}
	return bin
}

// startHAProxy runs bin -db with the given frontends and backends (plus tcp-mode defaults) until
// the test ends, once its frontend answers on front.
func startHAProxy(t *testing.T, bin, front, sections string) {
	t.Helper()
	cfg := filepath.Join(t.TempDir(), "haproxy.cfg")
	text := `global
    maxconn 256
defaults
    mode tcp
    timeout connect 5s
    timeout client 30s
    timeout server 30s
` + sections
	if err := os.WriteFile(cfg, []byte(text), 0o644); err != nil {
		t.Fatal(err)
	}
	var out syncbuffer.Buffer
	cmd := exec.Command(bin, "-db", "-f", cfg)
	cmd.Stdout, cmd.Stderr = &out, &out
	if err := cmd.Start(); err != nil {
		t.Fatalf("start haproxy: %v", err)
	}
	exited := make(chan struct{})
	go func() { _ = cmd.Wait(); close(exited) }()
	t.Cleanup(func() {
		_ = cmd.Process.Kill()
		<-exited
	})
	poll.UntilNil(t, deadline, "haproxy did not listen on "+front, func() error {
		select {
		case <-exited:
			t.Fatalf("haproxy exited before listening on %s:\n%s\nconfig:\n%s", front, out.String(), text)
		default:
		}
		c, err := net.DialTimeout("tcp", front, time.Second)
		if err != nil {
			return fmt.Errorf("%w\n%s", err, out.String())
		}
		c.Close()
		return nil
	})
}
