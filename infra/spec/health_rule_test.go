package spec

import (
	"testing"
	"time"

	"github.com/zero502/zero502/infra/config"
	"github.com/zero502/zero502/infra/healthcheck"
)

// The published spec carries the configured health rule through a publish and a read, and
// derives the same rule the config does; a spec that names none expects 200 with no timeout.
func TestTheSpecCarriesTheConfiguredHealthRule(t *testing.T) {
	cfg, err := config.LoadBytes([]byte(`
rollout: {runtime: process}
balancer: {timeout: 1s}
services:
  - {name: web, command: [web], port: 9001, health: {path: /moved, expect_status: 301, timeout: 2s}}
  - {name: api, command: [api], port: 9002, health_path: /ready}
hosts:
  - {name: h1, address: 127.0.0.1}
`), "test config")
	if err != nil {
		t.Fatal(err)
	}
	p := Path(t.TempDir())
	if err := Publish(p, Render(cfg, cfg.Hosts[0], "v1", "")); err != nil {
		t.Fatal(err)
	}
	s, err := Read(p)
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		service string
		want    healthcheck.Rule
	}{
		{"web", healthcheck.Rule{Path: "/moved", Status: 301, Timeout: 2 * time.Second}},
		{"api", healthcheck.Rule{Path: "/ready", Status: 200, Timeout: time.Second}}, // defaults: 200, balancer.timeout
	} {
		svc, ok := s.Service(tc.service)
		if !ok {
			t.Fatalf("no %s in the published spec", tc.service)
		}
		if got := svc.HealthRule(); got != tc.want {
			t.Errorf("%s: published rule %+v, want %+v", tc.service, got, tc.want)
		}
		for _, c := range cfg.Services {
			if c.Name == tc.service && c.Health.Rule() != svc.HealthRule() {
				t.Errorf("%s: the config's rule %+v differs from the published one %+v", tc.service, c.Health.Rule(), svc.HealthRule())
			}
		}
	}
	if got := (Service{HealthPath: "/health"}).HealthRule(); got.Want() != 200 || got.Timeout != 0 {
		t.Errorf("a spec without health_status or health_timeout: rule %+v, want 200 and no timeout of its own", got)
	}
}
