package deployer

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"net"
	"net/http"
	"path/filepath"
	"strconv"
	"testing"

	"github.com/zero502/zero502/infra"
	"github.com/zero502/zero502/infra/ports"
	"github.com/zero502/zero502/internal/testrig/testpki"
)

// A rolling deploy behind the LB's HTTPS listener (balancer.tls, `zero502 lb --config`) loses
// no request: TLS clients on keep-alive connections see the same drain as plain ones.
func TestRollingDeployOverTLSLosesNothing(t *testing.T) {
	t.Parallel()
	f := newFleet(t, 2)
	cfg := f.load(f.config("fleet.yaml", defaultValues()))
	ca := testpki.New(t, "zero502 test CA")
	cert, key := testpki.WritePair(t, ca.Issue(t, x509.ExtKeyUsageServerAuth, "shop.test"),
		filepath.Join(f.dir, "shop.crt"), filepath.Join(f.dir, "shop.key"))
	ps, err := ports.Free(1)
	if err != nil {
		t.Fatal(err)
	}
	tlsAddr := net.JoinHostPort("127.0.0.1", strconv.Itoa(ps[0]))
	cfg.Balancer.TLS.Listen = tlsAddr
	cfg.Balancer.TLS.Certificates = []infra.TLSCertificate{{Cert: cert, Key: key}}
	path := f.write("tls.yaml", cfg)
	cfg = f.load(path)
	f.startLB(path)
	ctx := context.Background()
	if _, err := f.deployer(cfg, nil, Options{}).Deploy(ctx, "v1"); err != nil {
		t.Fatalf("first deploy: %v", err)
	}

	transport := &http.Transport{MaxIdleConnsPerHost: 3, TLSClientConfig: &tls.Config{RootCAs: ca.Pool(), ServerName: "shop.test"},
		DialContext: func(ctx context.Context, network, _ string) (net.Conn, error) {
			return (&net.Dialer{}).DialContext(ctx, network, tlsAddr)
		}}
	load := startTrafficWith(t, "https://shop.test", transport, 3)
	var events eventLog
	rep, err := f.deployer(cfg, &events, Options{}).Deploy(ctx, "v2")
	load.requireClean(t)
	if err != nil {
		t.Fatalf("rolling deploy over TLS: %v\nevents:\n%s", err, &events)
	}
	for _, h := range rep.Hosts {
		requireDeployed(t, h, "v1", "v2")
	}
	resp, err := (&http.Client{Transport: transport}).Get("https://shop.test/")
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != 200 || resp.Header.Get("X-Version") != "v2" || resp.TLS == nil {
		t.Errorf("after the deploy over TLS: %d %q (TLS %v), want 200 from v2", resp.StatusCode, resp.Header.Get("X-Version"), resp.TLS != nil)
	}
}
