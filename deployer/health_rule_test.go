package deployer

import (
	"context"
	"fmt"
	"net"
	"net/http"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/zero502/zero502/infra/config"
	"github.com/zero502/zero502/infra/spec"
)

// The deployer's direct health check never follows a redirect: a service expecting 301 whose
// health path redirects passes, by its published rule and by its configured one (preflight's),
// and a service expecting 200 whose health path answers 301 fails, though the redirect's target
// would answer 200.
func TestTheDeployersHealthCheckJudgesARedirectByTheExpectedStatus(t *testing.T) {
	var landed atomic.Int32
	redirect := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/health" {
			http.Redirect(w, r, "/landing", http.StatusMovedPermanently)
			return
		}
		landed.Add(1)
		w.WriteHeader(http.StatusOK)
	})
	var ports []int
	for range 2 {
		l, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			t.Fatal(err)
		}
		srv := &http.Server{Handler: redirect}
		go srv.Serve(l)
		t.Cleanup(func() { srv.Close() })
		ports = append(ports, l.Addr().(*net.TCPAddr).Port)
	}
	cfg, err := config.LoadBytes([]byte(fmt.Sprintf(`
rollout: {runtime: process}
services:
  - {name: moved, command: [moved], port: %d, health: {path: /health, expect_status: 301, timeout: 2s}}
  - {name: plain, command: [plain], port: %d, health: {path: /health, timeout: 2s}}
hosts:
  - {name: h1, address: 127.0.0.1}
`, ports[0], ports[1])), "test config")
	if err != nil {
		t.Fatal(err)
	}
	d := New(cfg, Options{})
	s := spec.Render(cfg, cfg.Hosts[0], "v1", "")
	ctx := context.Background()
	for _, c := range cfg.Services {
		svc, _ := s.Service(c.Name)
		published, pubErr := d.checkHealth(ctx, svc.Address, svc.HealthRule())
		_, confErr := d.checkHealth(ctx, svc.Address, c.Health.Rule())
		switch c.Name {
		case "moved":
			if pubErr != nil || confErr != nil {
				t.Errorf("moved (expects 301, answers 301): published rule %v, configured rule %v, want both to pass", pubErr, confErr)
			}
			if published.Status != http.StatusMovedPermanently || published.Header.Get("Location") != "/landing" {
				t.Errorf("moved: answer %d Location %q, want the 301 itself", published.Status, published.Header.Get("Location"))
			}
		case "plain":
			for _, err := range []error{pubErr, confErr} {
				if err == nil || !strings.Contains(err.Error(), "answered 301, want 200") {
					t.Errorf("plain (expects 200, answers 301): %v, want answered 301, want 200", err)
				}
			}
		}
	}
	if n := landed.Load(); n != 0 {
		t.Errorf("the redirect's target was asked %d times, want never", n)
	}
}
