// Package acmetest runs Let's Encrypt's test ACME server, Pebble (github.com/letsencrypt/pebble/v2,
// a tool of this module), as a process on loopback for tests, with a DNS server of the test that
// sends every name to 127.0.0.1, so Pebble validates challenges against the test's own listeners.
package acmetest

import (
	"crypto/tls"
	"crypto/x509"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"testing"
	"time"

	"github.com/miekg/dns"

	"github.com/zero502/zero502/internal/testrig/poll"
	"github.com/zero502/zero502/internal/testrig/syncbuffer"
	"github.com/zero502/zero502/internal/testrig/tcpserver"
	"github.com/zero502/zero502/internal/testrig/testpki"
)

// Pebble is Let's Encrypt's test ACME server (github.com/letsencrypt/pebble/v2, a tool of this
// module) as a process on loopback, validating challenges for real: it resolves every name
// through a DNS server of the test (127.0.0.1) and connects to httpPort (HTTP-01) and tlsPort
// (TLS-ALPN-01) there.
type Pebble struct {
	// Directory is the ACME directory URL (balancer.tls.acme.directory).
	Directory string
	// CAFile signs Pebble's own HTTPS (balancer.tls.acme.ca_file).
	CAFile string
	mgmt   string         // management API host:port (its issuing roots)
	roots  *x509.CertPool // trusts the ACME API only
}

// Start builds and starts Pebble, validating HTTP-01 on 127.0.0.1:httpPort and TLS-ALPN-01 on
// 127.0.0.1:tlsPort, until the test ends (its output is logged when the test failed).
func Start(t *testing.T, httpPort, tlsPort int) *Pebble {
	t.Helper()
	dir := t.TempDir()
	bin := filepath.Join(dir, "pebble")
	if out, err := exec.Command("go", "build", "-o", bin, "github.com/letsencrypt/pebble/v2/cmd/pebble").CombinedOutput(); err != nil {
		t.Fatalf("build pebble (a tool in go.mod): %v\n%s", err, out)
	}
	ca := testpki.New(t, "pebble API CA")
	cert, key := testpki.WritePair(t, ca.Issue(t, x509.ExtKeyUsageServerAuth, "127.0.0.1", "localhost"),
		filepath.Join(dir, "api.crt"), filepath.Join(dir, "api.key"))
	ps := tcpserver.FreePorts(t, 2)
	p := &Pebble{Directory: fmt.Sprintf("https://127.0.0.1:%d/dir", ps[0]), CAFile: ca.WriteCert(t, filepath.Join(dir, "api-ca.pem")),
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
	cmd := exec.Command(bin, "-config", cfgPath, "-dnsserver", startDNS(t))
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
		resp, err := api.Get(p.Directory)
		if err != nil {
			return false
		}
		resp.Body.Close()
		return resp.StatusCode == 200
	})
	return p
}

// IssuingRoots is the pool of the root that signs the certificates pebble issues (it makes a
// new one each start), from its management API.
func (p *Pebble) IssuingRoots(t *testing.T) *x509.CertPool {
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

// startDNS answers every A question 127.0.0.1 (and every other with nothing), over TCP
// as pebble asks.
func startDNS(t *testing.T) string {
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

// WriteIssuingRoot writes the root that signs what Pebble issues (PEM) to path, for curl.
func (p *Pebble) WriteIssuingRoot(t *testing.T, path string) {
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
