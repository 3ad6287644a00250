package lb

import (
	"bufio"
	"bytes"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/zero502/zero502/infra/config"
	"github.com/zero502/zero502/infra/lb/tlscert"
	"github.com/zero502/zero502/internal/testrig/poll"
	"github.com/zero502/zero502/internal/testrig/testpki"
)

// tlsPair writes a certificate of ca for names and its key (0600) into dir as name.crt/.key.
func tlsPair(t *testing.T, ca *testpki.CA, dir, name string, names ...string) config.TLSCertificate {
	t.Helper()
	c, k := testpki.WritePair(t, ca.Issue(t, x509.ExtKeyUsageServerAuth, names...),
		filepath.Join(dir, name+".crt"), filepath.Join(dir, name+".key"))
	return config.TLSCertificate{Cert: c, Key: k}
}

// tlsGet sends one GET over conn (a TLS connection to the LB) and returns the response.
func tlsGet(t *testing.T, conn *tls.Conn, br *bufio.Reader, path, extra string) (int, string) {
	t.Helper()
	_ = conn.SetDeadline(time.Now().Add(10 * time.Second))
	fmt.Fprintf(conn, "GET %s HTTP/1.1\r\nHost: a.test\r\n%s\r\n", path, extra)
	resp, err := http.ReadResponse(br, &http.Request{Method: "GET"})
	if err != nil {
		t.Fatalf("GET %s over TLS: %v", path, err)
	}
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	return resp.StatusCode, string(body)
}

func servedSerial(t *testing.T, addr, serverName string, roots *x509.CertPool) (string, string) {
	t.Helper()
	c, err := tls.Dial("tcp", addr, &tls.Config{ServerName: serverName, RootCAs: roots, MinVersion: tls.VersionTLS12})
	if err != nil {
		t.Fatalf("TLS to %s as %s: %v", addr, serverName, err)
	}
	defer c.Close()
	leaf := c.ConnectionState().PeerCertificates[0]
	return leaf.SerialNumber.String(), leaf.Subject.CommonName
}

// HTTPS at the LB: the certificate by SNI (exact and wildcard names, the first for any other),
// the same request path as plain HTTP (X-Forwarded-Proto: https, a client's own dropped;
// WebSockets), a replaced certificate file served to new connections while an open one keeps
// working, the redirect listener, curl, and a failed handshake counted.
func TestTLSServesBySNIReloadsAndRedirects(t *testing.T) {
	a := startBackend(t, "a")
	dir := t.TempDir()
	ca := testpki.New(t, "zero502 test CA")
	set := fastSettings(a.addr())
	first := tlsPair(t, ca, dir, "a", "a.test")
	set.TLS = config.BalancerTLS{Listen: "127.0.0.1:0", RedirectHTTP: "127.0.0.1:0", HandshakeTimeout: 2 * time.Second,
		Certificates: []config.TLSCertificate{first, tlsPair(t, ca, dir, "w", "b.test", "*.w.test")}}
	l := startLB(t, set)
	addr := l.TLSAddr()

	for _, c := range []struct{ sni, cn string }{{"a.test", "a.test"}, {"b.test", "b.test"}, {"x.w.test", "b.test"}, {"A.TEST", "a.test"}} {
		if _, cn := servedSerial(t, addr, c.sni, ca.Pool()); cn != c.cn {
			t.Errorf("SNI %s: served %s, want %s", c.sni, cn, c.cn)
		}
	}
	// a name no file serves gets the first certificate (which the client then refuses)
	if c, err := tls.Dial("tcp", addr, &tls.Config{ServerName: "other.test", RootCAs: ca.Pool()}); err == nil {
		c.Close()
		t.Error("a client asking for other.test accepted a certificate for it")
	} else if !strings.Contains(err.Error(), "a.test") {
		t.Errorf("other.test: %v, want the first certificate (a.test) refused by the client", err)
	}

	conn, err := tls.Dial("tcp", addr, &tls.Config{ServerName: "a.test", RootCAs: ca.Pool()})
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	br := bufio.NewReader(conn)
	code, body := tlsGet(t, conn, br, "/headers", "X-Forwarded-Proto: http\r\n")
	if code != 200 || !strings.Contains(body, "X-Forwarded-Proto: https\r\n") || strings.Contains(body, "X-Forwarded-Proto: http\r\n") ||
		!strings.Contains(body, "X-Forwarded-For: 127.0.0.1") {
		t.Fatalf("GET /headers over TLS: %d\n%s\nwant X-Forwarded-Proto: https alone and X-Forwarded-For", code, body)
	}
	before, _ := servedSerial(t, addr, "a.test", ca.Pool())

	// replace a.test's files: new connections get the new certificate, the open one goes on
	tlsPair(t, ca, dir, "a", "a.test")
	poll.Until(t, 10*time.Second, "the replaced certificate served to a new connection", func() bool {
		now, _ := servedSerial(t, addr, "a.test", ca.Pool())
		return now != before
	})
	if code, body := tlsGet(t, conn, br, "/", ""); code != 200 || body != "a" {
		t.Errorf("the connection opened before the reload: %d %q, want 200 from a", code, body)
	}
	if l.CertReloads() == 0 {
		t.Error("no reload counted")
	}
	// a key file others may read is refused on a reload, and the last good set kept
	if err := os.Chmod(first.Key, 0o644); err != nil {
		t.Fatal(err)
	}
	reloads := l.CertReloads()
	time.Sleep(3 * certReload)
	if l.CertReloads() != reloads {
		t.Error("a world-readable key was loaded")
	}
	if _, cn := servedSerial(t, addr, "a.test", ca.Pool()); cn != "a.test" {
		t.Errorf("after a refused reload: served %s", cn)
	}

	// WebSockets over TLS
	wc, err := tls.Dial("tcp", addr, &tls.Config{ServerName: "a.test", RootCAs: ca.Pool()})
	if err != nil {
		t.Fatal(err)
	}
	ws, err := wsHandshake(wc)
	if err != nil {
		t.Fatalf("WebSocket over TLS: %v", err)
	}
	if got, err := ws.echo([]byte("over tls")); err != nil || !bytes.Equal(got, []byte("over tls")) {
		t.Errorf("WebSocket echo over TLS: %q %v", got, err)
	}
	_ = ws.close()

	// the redirect listener: 308 to the same URL over HTTPS on the TLS port
	_, port, _ := net.SplitHostPort(addr)
	noFollow := &http.Client{CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }, Timeout: 5 * time.Second}
	req, _ := http.NewRequest("POST", "http://"+l.RedirectAddr()+"/orders?id=7", strings.NewReader("x"))
	req.Host = "a.test"
	resp, err := noFollow.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if want := "https://a.test:" + port + "/orders?id=7"; resp.StatusCode != 308 || resp.Header.Get("Location") != want {
		t.Errorf("redirect: %d Location %q, want 308 %s", resp.StatusCode, resp.Header.Get("Location"), want)
	}

	// curl, trusting the CA alone
	if curl, err := exec.LookPath("curl"); err == nil {
		caFile := ca.WriteCert(t, filepath.Join(dir, "ca.pem"))
		out, err := exec.Command(curl, "-sS", "--cacert", caFile, "--resolve", "a.test:"+port+":127.0.0.1", "https://a.test:"+port+"/").CombinedOutput()
		if err != nil || string(out) != "a" {
			t.Errorf("curl over TLS: %v %q, want a", err, out)
		}
	} else {
		t.Log("no curl here: the curl check is skipped (.ci/run installs curl)")
	}

	// plain HTTP on the TLS port is a failed handshake, counted (as was other.test's, which
	// the client refused)
	failed := metricValue(t, l, "zero502_lb_tls_handshake_failures_total")
	_ = raw(t, addr, "GET / HTTP/1.1\r\nHost: a.test\r\n\r\n", 5*time.Second)
	poll.Until(t, 5*time.Second, "the failed handshake counted", func() bool {
		return metricValue(t, l, "zero502_lb_tls_handshake_failures_total") != failed
	})
	if failed != "1" {
		t.Errorf("handshake failures before the plain request: %s, want 1 (other.test's)", failed)
	}
}

// Bad certificate files are refused before anything listens, naming the key, the file and the fix:
// a certificate another user may write among them (they could serve a chain of their own for
// the key, with the names they choose).
func TestTLSRefusesBadFilesBeforeListening(t *testing.T) {
	dir := t.TempDir()
	ca := testpki.New(t, "zero502 test CA")
	good := tlsPair(t, ca, dir, "good", "a.test")
	other := tlsPair(t, ca, dir, "other", "b.test")
	open := tlsPair(t, ca, dir, "open", "c.test")
	if err := os.Chmod(open.Key, 0o644); err != nil {
		t.Fatal(err)
	}
	writable := tlsPair(t, ca, dir, "writable", "d.test")
	if err := os.Chmod(writable.Cert, 0o666); err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		name string
		cert config.TLSCertificate
		want []string
	}{
		{"a key others may read", open, []string{"balancer.tls.certificates[0].key", open.Key, "chmod 600"}},
		{"a certificate others may write", writable, []string{"balancer.tls.certificates[0].cert", writable.Cert, "chmod go-w"}},
		{"a key of another certificate", config.TLSCertificate{Cert: good.Cert, Key: other.Key}, []string{"balancer.tls.certificates[0]", good.Cert, other.Key, "private key does not match"}},
		{"a missing certificate", config.TLSCertificate{Cert: filepath.Join(dir, "none.crt"), Key: good.Key}, []string{"none.crt", "no such file"}},
		{"a missing key", config.TLSCertificate{Cert: good.Cert, Key: filepath.Join(dir, "none.key")}, []string{"balancer.tls.certificates[0].key", "none.key"}},
	} {
		_, err := tlscert.New(config.BalancerTLS{Listen: "127.0.0.1:0", Certificates: []config.TLSCertificate{c.cert}}, nil)
		for _, w := range c.want {
			if err == nil || !strings.Contains(err.Error(), w) {
				t.Errorf("%s: %v, want an error naming %q", c.name, err, w)
			}
		}
		set := fastSettings("127.0.0.1:1")
		set.TLS = config.BalancerTLS{Listen: "127.0.0.1:0", HandshakeTimeout: time.Second, Certificates: []config.TLSCertificate{c.cert}}
		s, err := New(set)
		if err != nil {
			t.Fatal(err)
		}
		if err := s.Listen(); err == nil {
			t.Errorf("%s: the LB listened", c.name)
			_ = s.ln.Close()
		}
	}
}

// max_conns counts a TLS connection from its accept, as the plain listener does: one beyond the
// cap is closed at once, not held in its handshake for tls.handshake_timeout, and those in
// their handshake count among the open client connections.
func TestMaxConnsCountsTLSConnectionsInTheirHandshake(t *testing.T) {
	a := startBackend(t, "a")
	ca := testpki.New(t, "zero502 test CA")
	set := fastSettings(a.addr())
	set.MaxConns = 2
	set.TLS = config.BalancerTLS{Listen: "127.0.0.1:0", HandshakeTimeout: 10 * time.Second,
		Certificates: []config.TLSCertificate{tlsPair(t, ca, t.TempDir(), "a", "a.test")}}
	l := startLB(t, set, slowChecks())
	var held []net.Conn
	for i := 0; i < 2; i++ {
		c, err := net.Dial("tcp", l.TLSAddr())
		if err != nil {
			t.Fatal(err)
		}
		defer c.Close()
		held = append(held, c)
	}
	poll.Until(t, 5*time.Second, "2 TLS connections in their handshake counted", func() bool { return l.clients() == 2 })
	extra, err := net.Dial("tcp", l.TLSAddr())
	if err != nil {
		t.Fatal(err)
	}
	defer extra.Close()
	_ = extra.SetReadDeadline(time.Now().Add(3 * time.Second))
	if n, err := extra.Read(make([]byte, 1)); err == nil || errors.Is(err, os.ErrDeadlineExceeded) {
		t.Fatalf("a 3rd TLS connection with max_conns 2: read %d bytes, %v; want it closed at once", n, err)
	}
	if got := l.connsRefused.Load(); got != 1 {
		t.Fatalf("refused connections: %d, want 1", got)
	}
	held[0].Close()
	held[1].Close()
	poll.Until(t, 5*time.Second, "the handshakes given up counted out", func() bool { return l.clients() == 0 })
	if _, cn := servedSerial(t, l.TLSAddr(), "a.test", ca.Pool()); cn != "a.test" {
		t.Errorf("below the cap again: served %s, want a.test", cn)
	}
}

// The redirect listener holds a request head to --max-header-bytes as the proxy listener does:
// a larger one is answered 431, not read to net/http's 1 MiB default.
func TestRedirectListenerRefusesAHeadPastMaxHeaderBytes(t *testing.T) {
	a := startBackend(t, "a")
	ca := testpki.New(t, "zero502 test CA")
	set := fastSettings(a.addr())
	set.MaxHeaderBytes = 8 << 10
	set.TLS = config.BalancerTLS{Listen: "127.0.0.1:0", RedirectHTTP: "127.0.0.1:0", HandshakeTimeout: 2 * time.Second,
		Certificates: []config.TLSCertificate{tlsPair(t, ca, t.TempDir(), "a", "a.test")}}
	l := startLB(t, set)
	big := "X-Pad: " + strings.Repeat("p", 64<<10) + "\r\n"
	out := raw(t, l.RedirectAddr(), "GET / HTTP/1.1\r\nHost: a.test\r\n"+big+"\r\n", 5*time.Second)
	if !strings.HasPrefix(out, "HTTP/1.1 431 ") {
		t.Errorf("a 64 KiB head with max_header_bytes 8 KiB: %.60q, want 431", out)
	}
	if out := raw(t, l.RedirectAddr(), "GET / HTTP/1.1\r\nHost: a.test\r\n\r\n", 5*time.Second); !strings.HasPrefix(out, "HTTP/1.1 308 ") {
		t.Errorf("a small head: %.60q, want 308", out)
	}
}

// accept_proxy_from holds on the TLS listener as on the plain one: an edge's PROXY header
// before the ClientHello sets the client address the backend gets, and a connection without
// one is served as before.
func TestTLSListenerTakesAProxyHeaderFromATrustedPeer(t *testing.T) {
	a := startBackend(t, "a")
	ca := testpki.New(t, "zero502 test CA")
	set := fastSettings(a.addr())
	set.AcceptProxyFrom = []string{"127.0.0.1/32"}
	set.TLS = config.BalancerTLS{Listen: "127.0.0.1:0", HandshakeTimeout: 5 * time.Second,
		Certificates: []config.TLSCertificate{tlsPair(t, ca, t.TempDir(), "a", "a.test")}}
	l := startLB(t, set)
	for _, c := range []struct{ header, xff string }{
		{"PROXY TCP4 203.0.113.7 127.0.0.1 40000 443\r\n", "X-Forwarded-For: 203.0.113.7\r\n"},
		{"", "X-Forwarded-For: 127.0.0.1\r\n"},
	} {
		raw, err := net.Dial("tcp", l.TLSAddr())
		if err != nil {
			t.Fatal(err)
		}
		defer raw.Close()
		if _, err := io.WriteString(raw, c.header); err != nil {
			t.Fatal(err)
		}
		conn := tls.Client(raw, &tls.Config{ServerName: "a.test", RootCAs: ca.Pool()})
		_ = conn.SetDeadline(time.Now().Add(10 * time.Second))
		if err := conn.Handshake(); err != nil {
			t.Fatalf("header %q: TLS handshake: %v", c.header, err)
		}
		if code, body := tlsGet(t, conn, bufio.NewReader(conn), "/headers", ""); code != 200 || !strings.Contains(body, c.xff) {
			t.Errorf("header %q: %d\n%s\nwant %s", c.header, code, body, c.xff)
		}
	}
}

// A trusted proxy's X-Forwarded-Proto that its Connection header names described its own hop and
// is dropped with the hop-by-hop fields; a request that came over TLS then gets the LB's own
// X-Forwarded-Proto: https, as from any client whose X-Forwarded-Proto was not kept, not none.
func TestForwardedProtoNamedInConnectionIsReplacedOverTLS(t *testing.T) {
	a := startBackend(t, "a")
	ca := testpki.New(t, "zero502 test CA")
	set := fastSettings(a.addr())
	set.TrustedProxies = []string{"127.0.0.1/32"}
	set.TLS = config.BalancerTLS{Listen: "127.0.0.1:0", HandshakeTimeout: 2 * time.Second,
		Certificates: []config.TLSCertificate{tlsPair(t, ca, t.TempDir(), "a", "a.test")}}
	l := startLB(t, set)
	conn, err := tls.Dial("tcp", l.TLSAddr(), &tls.Config{ServerName: "a.test", RootCAs: ca.Pool()})
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	br := bufio.NewReader(conn)
	code, body := tlsGet(t, conn, br, "/headers", "X-Forwarded-Proto: http\r\nConnection: X-Forwarded-Proto\r\n")
	if code != 200 || strings.Count(body, "X-Forwarded-Proto") != 1 || !strings.Contains(body, "X-Forwarded-Proto: https\r\n") {
		t.Fatalf("GET /headers over TLS from a trusted proxy naming X-Forwarded-Proto in Connection: %d\n%s\nwant X-Forwarded-Proto: https alone", code, body)
	}
	// the trusted proxy's own, not named in Connection, is kept
	if code, body := tlsGet(t, conn, br, "/headers", "X-Forwarded-Proto: http\r\n"); code != 200 || strings.Count(body, "X-Forwarded-Proto") != 1 || !strings.Contains(body, "X-Forwarded-Proto: http\r\n") {
		t.Fatalf("GET /headers over TLS from a trusted proxy: %d\n%s\nwant its X-Forwarded-Proto: http alone", code, body)
	}
}

// The redirect listener's connections count in max_conns with the proxy listeners': over the
// cap, one more on either port is closed at once, unanswered; a closed one frees its place.
func TestRedirectListenerConnectionsCountInMaxConns(t *testing.T) {
	a := startBackend(t, "a")
	ca := testpki.New(t, "zero502 test CA")
	set := fastSettings(a.addr())
	set.MaxConns = 2
	set.TLS = config.BalancerTLS{Listen: "127.0.0.1:0", RedirectHTTP: "127.0.0.1:0", HandshakeTimeout: 2 * time.Second,
		Certificates: []config.TLSCertificate{tlsPair(t, ca, t.TempDir(), "a", "a.test")}}
	l := startLB(t, set)
	var held []net.Conn
	for i := 0; i < 2; i++ { // heads still arriving: each holds its connection
		c, err := net.Dial("tcp", l.RedirectAddr())
		if err != nil {
			t.Fatal(err)
		}
		defer c.Close()
		_, _ = io.WriteString(c, "GET / HTTP/1.1\r\n")
		held = append(held, c)
	}
	// the listener accepts in order: the held two are open before the next is looked at
	redirect := "GET /x HTTP/1.1\r\nHost: a.test\r\n\r\n"
	if out := raw(t, l.RedirectAddr(), redirect, 10*time.Second); out != "" {
		t.Fatalf("a third connection to the redirect listener with max_conns 2 got %q, want it closed unanswered", out)
	}
	if out := raw(t, l.Addr(), "GET /_lb/health HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n", 10*time.Second); out != "" {
		t.Fatalf("the proxy listener with max_conns 2 held by the redirect listener answered %q, want the connection closed", out)
	}
	for _, c := range held {
		_ = c.Close()
	}
	poll.Until(t, 10*time.Second, "a redirect once the held connections closed", func() bool {
		return strings.HasPrefix(raw(t, l.RedirectAddr(), redirect, 10*time.Second), "HTTP/1.1 308 ")
	})
}
