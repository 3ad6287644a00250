package config

import (
	"strings"
	"testing"
)

func TestEdgeUpstreamKeysAreValidatedNamingKeyValueAndRule(t *testing.T) {
	for _, tc := range []struct {
		yaml string
		want string
	}{
		{"edge:\n  origins: [\"10.0.0.5\"]\n", `edge.origins[0]: "10.0.0.5": must be host:port`},
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
