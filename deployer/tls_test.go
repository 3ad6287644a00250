package deployer

import (
	"context"
	"crypto/tls"
	"net"
	"net/http"
	"path/filepath"
	"strconv"
	"testing"

	"github.com/zero502/zero502/internal/testrig/acmetest"
	"github.com/zero502/zero502/internal/testrig/tcpserver"
)

// A rolling deploy behind the LB's HTTPS listener (balancer.tls, `zero502 lb --config`) with a
// certificate the LB got from an ACME CA (Pebble, validating HTTP-01 on the LB's redirect
// listener) loses no request: TLS clients on keep-alive connections see the same drain as plain
// ones.
func TestRollingDeployOverTLSLosesNothing(t *testing.T) {
	t.Parallel()
	f := newFleet(t, 2)
	cfg := f.load(f.config("fleet.yaml", defaultValues()))
	ps := tcpserver.FreePorts(t, 2)
	httpPort, tlsPort := ps[0], ps[1]
	ca := acmetest.Start(t, httpPort, tlsPort)
	tlsAddr := net.JoinHostPort("127.0.0.1", strconv.Itoa(tlsPort))
	const domain = "shop.zero502.test"
	cfg.Balancer.TLS.Listen = tlsAddr
	cfg.Balancer.TLS.RedirectHTTP = net.JoinHostPort("127.0.0.1", strconv.Itoa(httpPort))
	cfg.Balancer.TLS.ACME.Domains = []string{domain}
	cfg.Balancer.TLS.ACME.Email = "ops@zero502.test"
	cfg.Balancer.TLS.ACME.Directory, cfg.Balancer.TLS.ACME.CAFile = ca.Directory, ca.CAFile
	cfg.Balancer.TLS.ACME.CacheDir = filepath.Join(f.dir, "acme")
	path := f.write("tls.yaml", cfg)
	cfg = f.load(path)
	f.startLB(path)
	ctx := context.Background()
	if _, err := f.deployer(cfg, nil, Options{}).Deploy(ctx, "v1"); err != nil {
		t.Fatalf("first deploy: %v", err)
	}

	transport := &http.Transport{MaxIdleConnsPerHost: 3, TLSClientConfig: &tls.Config{RootCAs: ca.IssuingRoots(t)},
		DialContext: func(ctx context.Context, network, _ string) (net.Conn, error) {
			return (&net.Dialer{}).DialContext(ctx, network, tlsAddr)
		}}
	base := "https://" + domain + ":" + strconv.Itoa(tlsPort)
	// the first request waits for the certificate: account, order, HTTP-01, issuance
	resp, err := (&http.Client{Transport: transport}).Get(base + "/")
	if err != nil {
		t.Fatalf("the first HTTPS request (the ACME order): %v", err)
	}
	resp.Body.Close()
	load := startTrafficWith(t, base, transport, 3)
	var events eventLog
	rep, err := f.deployer(cfg, &events, Options{}).Deploy(ctx, "v2")
	load.requireClean(t)
	if err != nil {
		t.Fatalf("rolling deploy over TLS: %v\nevents:\n%s", err, &events)
	}
	for _, h := range rep.Hosts {
		requireDeployed(t, h, "v1", "v2")
	}
	resp, err = (&http.Client{Transport: transport}).Get(base + "/")
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != 200 || resp.Header.Get("X-Version") != "v2" || resp.TLS == nil || resp.TLS.PeerCertificates[0].DNSNames[0] != domain {
		t.Errorf("after the deploy over TLS: %d %q, want 200 from v2 over the ACME certificate for %s", resp.StatusCode, resp.Header.Get("X-Version"), domain)
	}
}
