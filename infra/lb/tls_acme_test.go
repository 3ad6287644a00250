package lb

import (
	"context"
	"crypto/tls"
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

	"github.com/zero502/zero502/infra/config"
	"github.com/zero502/zero502/internal/testrig/acmetest"
	"github.com/zero502/zero502/internal/testrig/syncbuffer"
	"github.com/zero502/zero502/internal/testrig/tcpserver"
)

// ACME end to end against pebble: the LB gets a certificate for its domain on the first
// handshake that asks for it, proving the name through its own listeners, serves it to Go's
// client and to curl (both trusting pebble's root alone), and keeps the account key and the
// certificate in its cache dir, 0600.
func TestTLSCertificateFromACME(t *testing.T) {
	a := startBackend(t, "a")
	ps := tcpserver.FreePorts(t, 2)
	httpPort, tlsPort := ps[0], ps[1]
	p := acmetest.Start(t, httpPort, tlsPort)
	const domain = "shop.zero502.test"
	cache := filepath.Join(t.TempDir(), "acme")
	set := fastSettings(a.addr())
	set.TLS = config.BalancerTLS{Listen: "127.0.0.1:" + strconv.Itoa(tlsPort), RedirectHTTP: "127.0.0.1:" + strconv.Itoa(httpPort),
		HandshakeTimeout: 60 * time.Second, ACME: config.ACME{Domains: []string{domain}, Email: "ops@zero502.test",
			Directory: p.Directory, CAFile: p.CAFile, CacheDir: cache}}
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
	d := tls.Dialer{Config: &tls.Config{ServerName: domain, RootCAs: p.IssuingRoots(t)}}
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
		TLSClientConfig: &tls.Config{RootCAs: p.IssuingRoots(t)},
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
		p.WriteIssuingRoot(t, rootFile)
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
