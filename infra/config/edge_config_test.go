package config

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func TestEdgeUpstreamKeysAreValidatedNamingKeyValueAndRule(t *testing.T) {
	for _, tc := range []struct {
		yaml string
		want string
	}{
		{"edge:\n  origins: [\"10.0.0.5\"]\n", `edge.origins[0]: "10.0.0.5": must be host:port`},
		// zero502 edge forward refuses an upstream given twice: the config must not promise it
		{"edge:\n  origins: [\"10.0.0.5:8080\", \"10.0.0.6:8080\", \"10.0.0.5:8080\"]\n", `edge.origins[2]: "10.0.0.5:8080": is already edge.origins[0]`},
		{"edge:\n  upstream_check:\n    path: health\n", `edge.upstream_check.path: "health": must be a path starting with /`},
		{"edge:\n  upstream_check:\n    interval: 0s\n", "edge.upstream_check.interval: 0s: must be a positive duration"},
		{"edge:\n  upstream_check:\n    interval: 1s\n    timeout: 1s\n", "edge.upstream_check.timeout: 1s: must be below edge.upstream_check.interval (1s)"},
		{"edge:\n  upstream_check:\n    healthy_threshold: 0\n", "edge.upstream_check.healthy_threshold: 0: must be at least 1"},
		{"edge:\n  upstream_check:\n    unhealthy_threshold: 0\n", "edge.upstream_check.unhealthy_threshold: 0: must be at least 1"},
	} {
		_, err := Load(writeConfig(t, tc.yaml))
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%q: %v, want %q", tc.yaml, err, tc.want)
		}
	}
	c, err := Load(writeConfig(t, "edge:\n  origins: [\"10.0.0.5:8080\", \"10.0.0.6:8080\"]\n  upstream_check:\n    path: /_lb/health\n"))
	if err != nil {
		t.Fatal(err)
	}
	if len(c.Edge.Origins) != 2 || c.Edge.UpstreamCheck.Path != "/_lb/health" || c.Edge.UpstreamCheck.Interval != Defaults().Edge.UpstreamCheck.Interval {
		t.Fatalf("edge keys: %+v", c.Edge)
	}
}

// The edges' A set: edge.dns_ttl is the TTL its records carry and what the deployer and I6 wait
// out, so it is required, in whole DNS seconds (a 0 was written as the set's default 60 s while
// I6 counted 0, and the deployer stopped an edge ~58 s before resolvers forgot it); and no edge
// is deployed start-first (an A record carries no port).
func TestTheEdgesDNSSetNeedsItsTTLAndNoStartFirst(t *testing.T) {
	data, err := os.ReadFile("../../examples/traffic-edges.yaml")
	if err != nil {
		t.Fatal(err)
	}
	example := strings.Replace(string(data), "/tmp/zero502-traffic/edge.zone", filepath.Join(t.TempDir(), "edge.zone"), 1)
	if _, err := LoadBytes([]byte(example), "traffic-edges.yaml"); err != nil {
		t.Fatalf("the example: %v", err)
	}
	for _, tc := range []struct{ from, to, want string }{
		{"  dns_ttl: 1s\n", "", "edge.dns_ttl: 0s: must be set when balancer.kind is dns"},
		{"  dns_ttl: 1s\n", "  dns_ttl: 1500ms\n", "edge.dns_ttl: 1.5s: must be whole seconds from 1s to 24h"},
		{"  dns_ttl: 1s\n", "  dns_ttl: 25h\n", "edge.dns_ttl: 25h0m0s: must be whole seconds from 1s to 24h"},
		{"  runtime: process\n", "  runtime: process\n  strategy: start-first\n", `rollout.strategy: "start-first": cannot deploy services[0], of kind edge`},
	} {
		if !strings.Contains(example, tc.from) {
			t.Fatalf("the example lacks %q", tc.from)
		}
		_, err := LoadBytes([]byte(strings.Replace(example, tc.from, tc.to, 1)), "edited.yaml")
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%q → %q: %v, want %q", tc.from, tc.to, err, tc.want)
		}
	}
}
