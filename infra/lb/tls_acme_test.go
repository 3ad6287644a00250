package lb

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/miekg/dns"

	"github.com/zero502/zero502/infra"
	"github.com/zero502/zero502/infra/ports"
	"github.com/zero502/zero502/internal/testrig/poll"
	"github.com/zero502/zero502/internal/testrig/syncbuffer"
	"github.com/zero502/zero502/internal/testrig/testpki"
)

// pebble is Let's Encrypt's test ACME server (github.com/letsencrypt/pebble/v2, a tool of this
// module) as a process on loopback, validating challenges for real: it resolves every name
// through a DNS server of the test (127.0.0.1) and connects to httpPort (HTTP-01) and tlsPort
// (TLS-ALPN-01) there.
type pebble struct {
	directory string
	caFile    string         // signs pebble's own HTTPS (the directory)
	mgmt      string         // management API host:port (its issuing roots)
	roots     *x509.CertPool // trusts the ACME API only
}

func startPebble(t *testing.T, httpPort, tlsPort int) *pebble {
	t.Helper()
	dir := t.TempDir()
	bin := filepath.Join(dir, "pebble")
	if out, err := exec.Command("go", "build", "-o", bin, "github.com/letsencrypt/pebble/v2/cmd/pebble").CombinedOutput(); err != nil {
		t.Fatalf("build pebble (a tool in go.mod): %v\n%s", err, out)
	}
	ca := testpki.New(t, "pebble API CA")
	cert, key := testpki.WritePair(t, ca.Issue(t, x509.ExtKeyUsageServerAuth, "127.0.0.1", "localhost"),
		filepath.Join(dir, "api.crt"), filepath.Join(dir, "api.key"))
	ps, err := ports.Free(2)
	if err != nil {
		t.Fatal(err)
	}
	p := &pebble{directory: fmt.Sprintf("https://127.0.0.1:%d/dir", ps[0]), caFile: ca.WriteCert(t, filepath.Join(dir, "api-ca.pem")),
		mgmt: fmt.Sprintf("127.0.0.1:%d", ps[1]), roots: ca.Pool()}
	cfg, _ := json.Marshal(map[string]any{"pebble": map[string]any{
		"listenAddress": fmt.Sprintf("127.0.0.1:%d", ps[0]), "managementListenAddress": p.mgmt,
		"certificate": cert, "privateKey": key, "httpPort": httpPort, "tlsPort": tlsPort,
		"keyAlgorithm": "ecdsa", "retryAfter": map[string]int{"authz": 1, "order": 1},
	}})
	cfgPath := filepath.Join(dir, "pebble.json")
	if err := os.WriteFile(cfgPath, cfg, 0o600); err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(bin, "-config", cfgPath, "-dnsserver", startLoopbackDNS(t))
	cmd.Env = append(os.Environ(), "PEBBLE_VA_NOSLEEP=1", "PEBBLE_WFE_NONCEREJECT=0")
	var out syncbuffer.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		_ = cmd.Process.Kill()
		_ = cmd.Wait()
		if t.Failed() {
			t.Logf("pebble:\n%s", out.String())
		}
	})
	api := &http.Client{Timeout: 2 * time.Second, Transport: &http.Transport{TLSClientConfig: &tls.Config{RootCAs: p.roots}}}
	poll.Until(t, 20*time.Second, "pebble's directory answering", func() bool {
		resp, err := api.Get(p.directory)
		if err != nil {
			return false
		}
		resp.Body.Close()
		return resp.StatusCode == 200
	})
	return p
}

// issuingRoots is the pool of the root that signs the certificates pebble issues (it makes a
// new one each start), from its management API.
func (p *pebble) issuingRoots(t *testing.T) *x509.CertPool {
	t.Helper()
	api := &http.Client{Timeout: 5 * time.Second, Transport: &http.Transport{TLSClientConfig: &tls.Config{RootCAs: p.roots}}}
	resp, err := api.Get("https://" + p.mgmt + "/roots/0")
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	pem, _ := io.ReadAll(resp.Body)
	pool := x509.NewCertPool()
	if !pool.AppendCertsFromPEM(pem) {
		t.Fatalf("pebble's root: not PEM: %.200s", pem)
	}
	return pool
}

// startLoopbackDNS answers every A question 127.0.0.1 (and every other with nothing), over TCP
// as pebble asks.
func startLoopbackDNS(t *testing.T) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	srv := &dns.Server{Listener: ln, Handler: dns.HandlerFunc(func(w dns.ResponseWriter, q *dns.Msg) {
		m := new(dns.Msg)
		m.SetReply(q)
		for _, question := range q.Question {
			if question.Qtype == dns.TypeA {
				m.Answer = append(m.Answer, &dns.A{Hdr: dns.RR_Header{Name: question.Name, Rrtype: dns.TypeA, Class: dns.ClassINET, Ttl: 60},
					A: net.IPv4(127, 0, 0, 1)})
			}
		}
		_ = w.WriteMsg(m)
	})}
	go func() { _ = srv.ActivateAndServe() }()
	t.Cleanup(func() { _ = srv.Shutdown() })
	return ln.Addr().String()
}

// ACME end to end against pebble: the LB gets a certificate for its domain on the first
// handshake that asks for it, proving the name through its own listeners, serves it to Go's
// client and to curl (both trusting pebble's root alone), and keeps the account key and the
// certificate in its cache dir, 0600.
func TestTLSCertificateFromACME(t *testing.T) {
	a := startBackend(t, "a")
	ps, err := ports.Free(2)
	if err != nil {
		t.Fatal(err)
	}
	httpPort, tlsPort := ps[0], ps[1]
	p := startPebble(t, httpPort, tlsPort)
	const domain = "shop.zero502.test"
	cache := filepath.Join(t.TempDir(), "acme")
	set := fastSettings(a.addr())
	set.TLS = infra.BalancerTLS{Listen: "127.0.0.1:" + strconv.Itoa(tlsPort), RedirectHTTP: "127.0.0.1:" + strconv.Itoa(httpPort),
		HandshakeTimeout: 60 * time.Second, ACME: infra.ACME{Domains: []string{domain}, Email: "ops@zero502.test",
			Directory: p.directory, CAFile: p.caFile, CacheDir: cache}}
	var logs syncbuffer.Buffer
	l := startLB(t, set, WithLogger(slog.New(slog.NewTextHandler(&logs, nil))))
	t.Cleanup(func() {
		if t.Failed() {
			t.Logf("lb:\n%s", logs.String())
		}
	})

	// the first handshake waits for the order: account, authorization, challenge, issuance
	ctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
	defer cancel()
	d := tls.Dialer{Config: &tls.Config{ServerName: domain, RootCAs: p.issuingRoots(t)}}
	c, err := d.DialContext(ctx, "tcp", l.TLSAddr())
	if err != nil {
		t.Fatalf("TLS to %s through the LB: %v", domain, err)
	}
	leaf := c.(*tls.Conn).ConnectionState().PeerCertificates[0]
	c.Close()
	if len(leaf.DNSNames) != 1 || leaf.DNSNames[0] != domain {
		t.Fatalf("served a certificate for %v, want %s", leaf.DNSNames, domain)
	}
	hc := &http.Client{Timeout: 10 * time.Second, Transport: &http.Transport{
		TLSClientConfig: &tls.Config{RootCAs: p.issuingRoots(t)},
		DialContext: func(ctx context.Context, network, _ string) (net.Conn, error) {
			return (&net.Dialer{}).DialContext(ctx, network, l.TLSAddr())
		}}}
	resp, err := hc.Get(fmt.Sprintf("https://%s:%d/", domain, tlsPort))
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != 200 || string(body) != "a" {
		t.Fatalf("GET over the ACME certificate: %d %q", resp.StatusCode, body)
	}

	if curl, err := exec.LookPath("curl"); err == nil {
		rootFile := filepath.Join(t.TempDir(), "pebble-root.pem")
		writePool(t, p, rootFile)
		out, err := exec.Command(curl, "-sS", "--cacert", rootFile, "--resolve", fmt.Sprintf("%s:%d:127.0.0.1", domain, tlsPort),
			fmt.Sprintf("https://%s:%d/", domain, tlsPort)).CombinedOutput()
		if err != nil || string(out) != "a" {
			t.Errorf("curl over the ACME certificate: %v %q", err, out)
		}
	}

	entries, err := os.ReadDir(cache)
	if err != nil || len(entries) < 2 {
		t.Fatalf("cache dir %s: %v %v, want the account key and the certificate", cache, entries, err)
	}
	if fi, _ := os.Stat(cache); fi.Mode().Perm() != 0o700 {
		t.Errorf("cache dir mode %04o, want 0700", fi.Mode().Perm())
	}
	for _, e := range entries {
		fi, _ := e.Info()
		if fi.Mode().Perm()&0o077 != 0 {
			t.Errorf("%s has mode %04o: others may read the keys", e.Name(), fi.Mode().Perm())
		}
	}
	var certFile bool
	for _, e := range entries {
		data, _ := os.ReadFile(filepath.Join(cache, e.Name()))
		certFile = certFile || strings.Contains(e.Name(), domain) && strings.Contains(string(data), "CERTIFICATE")
	}
	if !certFile {
		t.Errorf("no certificate for %s among %v", domain, entries)
	}
}

// writePool writes pebble's issuing root (PEM) to path, for curl.
func writePool(t *testing.T, p *pebble, path string) {
	t.Helper()
	api := &http.Client{Timeout: 5 * time.Second, Transport: &http.Transport{TLSClientConfig: &tls.Config{RootCAs: p.roots}}}
	resp, err := api.Get("https://" + p.mgmt + "/roots/0")
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	pem, _ := io.ReadAll(resp.Body)
	if err := os.WriteFile(path, pem, 0o600); err != nil {
		t.Fatal(err)
	}
}
