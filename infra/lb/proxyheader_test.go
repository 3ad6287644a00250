package lb

import (
	"bufio"
	"fmt"
	"io"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/pires/go-proxyproto"

	"github.com/zero502/zero502/internal/testrig/poll"
	"github.com/zero502/zero502/internal/testrig/syncbuffer"
)

// dialFrom connects to addr from the loopback address local (127.0.0.2: not the LB's peer
// HAProxy, 127.0.0.1), so a claimed client address can be told from the measured one.
func dialFrom(t *testing.T, local, addr string) net.Conn {
	t.Helper()
	d := net.Dialer{LocalAddr: &net.TCPAddr{IP: net.ParseIP(local)}, Timeout: 5 * time.Second}
	c, err := d.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	_ = c.SetDeadline(time.Now().Add(15 * time.Second))
	return c
}

// forwardedFor sends GET /headers on c and returns the X-Forwarded-For the backend saw.
func forwardedFor(t *testing.T, c net.Conn, br *bufio.Reader) string {
	t.Helper()
	io.WriteString(c, "GET /headers HTTP/1.1\r\nHost: x\r\n\r\n")
	got := readResponses(t, br, 1, "GET")[0]
	for _, line := range strings.Split(got, "\n") {
		if v, ok := strings.CutPrefix(strings.TrimSpace(line), "X-Forwarded-For: "); ok {
			return v
		}
	}
	t.Fatalf("no X-Forwarded-For in %q", got)
	return ""
}

// needHAProxy is the haproxy binary (PATH, then /usr/sbin), or skips the test.
func needHAProxy(t testing.TB) string {
	t.Helper()
	if bin, err := exec.LookPath("haproxy"); err == nil {
		return bin
	}
	if _, err := os.Stat("/usr/sbin/haproxy"); err == nil {
		return "/usr/sbin/haproxy"
	}
	t.Skip("haproxy is not installed (Debian: apt-get install haproxy; .ci/run installs it): skipping the test against an independent PROXY protocol peer")
	return ""
}

// startHAProxy runs haproxy with defaults in mode (tcp or http) and one frontend on front
// whose backend has the server line given, until the test ends.
func startHAProxy(tb testing.TB, bin, mode, front, server string) {
	tb.Helper()
	text := fmt.Sprintf(`global
    maxconn 256
defaults
    mode %s
    timeout connect 5s
    timeout client 30s
    timeout server 30s
    timeout tunnel 1h
frontend clients
    bind %s
    default_backend servers
backend servers
    %s
`, mode, front, server)
	cfg := filepath.Join(tb.TempDir(), "haproxy.cfg")
	if err := os.WriteFile(cfg, []byte(text), 0o644); err != nil {
		tb.Fatal(err)
	}
	var out syncbuffer.Buffer
	cmd := exec.Command(bin, "-db", "-f", cfg)
	cmd.Stdout, cmd.Stderr = &out, &out
	if err := cmd.Start(); err != nil {
		tb.Fatalf("start haproxy: %v", err)
	}
	exited := make(chan struct{})
	go func() { _ = cmd.Wait(); close(exited) }()
	tb.Cleanup(func() { _ = cmd.Process.Kill(); <-exited })
	poll.UntilNil(tb, 10*time.Second, "haproxy does not listen on "+front, func() error {
		select {
		case <-exited:
			tb.Fatalf("haproxy exited:\n%s", out.String())
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

func TestHAProxySendProxyV2SetsTheClientAddress(t *testing.T) {
	haproxy := needHAProxy(t)
	a := startBackend(t, "a")
	set := fastSettings(a.addr())
	set.AcceptProxyFrom = []string{"127.0.0.1/32"}
	set.AccessLog = true
	var access syncbuffer.Buffer
	l := startLB(t, set, WithAccessLogOutput(&access))
	front := deadAddr(t)
	startHAProxy(t, haproxy, "tcp", front, "server lb "+l.Addr()+" send-proxy-v2")

	c := dialFrom(t, "127.0.0.2", front)
	br := bufio.NewReader(c)
	if xff := forwardedFor(t, c, br); xff != "127.0.0.2" {
		t.Fatalf("X-Forwarded-For through HAProxy send-proxy-v2: %q, want the client 127.0.0.2", xff)
	}
	// the connection goes idle (parked, in an event loop on the epoll engine) and keeps its client
	poll.Until(t, 5*time.Second, "the connection is parked", func() bool { return parked(l.Server) > 0 })
	if xff := forwardedFor(t, c, br); xff != "127.0.0.2" {
		t.Fatalf("X-Forwarded-For on the same connection after it idled: %q", xff)
	}
	poll.Until(t, 5*time.Second, "the access log names the client", func() bool {
		return strings.Contains(access.String(), `"client":"127.0.0.2"`)
	})
	// a client straight to the LB, without a header, passes with its own address
	d := dialFrom(t, "127.0.0.3", l.Addr())
	if xff := forwardedFor(t, d, bufio.NewReader(d)); xff != "127.0.0.3" {
		t.Fatalf("X-Forwarded-For without a header: %q", xff)
	}
}

func TestProxyHeaderFromAnUntrustedPeerClosesTheConnection(t *testing.T) {
	a := startBackend(t, "a")
	set := fastSettings(a.addr())
	set.AcceptProxyFrom = []string{"10.0.0.0/8"}
	l := startLB(t, set)
	c := dialFrom(t, "127.0.0.2", l.Addr())
	h := proxyproto.HeaderProxyFromAddrs(2, &net.TCPAddr{IP: net.ParseIP("192.0.2.7"), Port: 5555}, &net.TCPAddr{IP: net.ParseIP("127.0.0.1"), Port: 80})
	if _, err := h.WriteTo(c); err != nil {
		t.Fatal(err)
	}
	io.WriteString(c, "GET / HTTP/1.1\r\nHost: x\r\n\r\n")
	if b, err := io.ReadAll(c); len(b) != 0 {
		t.Fatalf("a PROXY header from an untrusted peer was answered: %q %v", b, err)
	}
	if a.hits.Load() != 0 {
		t.Fatal("the request behind an untrusted header reached the backend")
	}
	if v := metricValue(t, l, "zero502_lb_proxy_headers_refused_total"); v != "1" {
		t.Fatalf("refused headers: %s", v)
	}
}

func TestProxyV1FromATrustedPeerAndMalformedHeaders(t *testing.T) {
	a := startBackend(t, "a")
	set := fastSettings(a.addr())
	set.AcceptProxyFrom = []string{"127.0.0.0/8"}
	l := startLB(t, set)
	c := dialFrom(t, "127.0.0.2", l.Addr())
	io.WriteString(c, "PROXY TCP4 192.0.2.7 127.0.0.1 5555 80\r\n")
	if xff := forwardedFor(t, c, bufio.NewReader(c)); xff != "192.0.2.7" {
		t.Fatalf("X-Forwarded-For after a v1 header: %q", xff)
	}
	out := raw(t, l.Addr(), "PROXY TCP4 not-an-address\r\nGET / HTTP/1.1\r\nHost: x\r\n\r\n", 5*time.Second)
	if out != "" {
		t.Fatalf("a malformed PROXY header was answered: %q", out)
	}
}

func TestAcceptProxyFromIsValidated(t *testing.T) {
	set := fastSettings("127.0.0.1:1")
	set.AcceptProxyFrom = []string{"10.0.0.0/8", "not-a-range"}
	_, err := New(set)
	if err == nil || !strings.Contains(err.Error(), `--accept-proxy-from "not-a-range"`) || !strings.Contains(err.Error(), "CIDR") {
		t.Fatalf("bad --accept-proxy-from: %v", err)
	}
}
