package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func TestEdgeCommandRefusesBadFlagsNamingFlagValueAndRule(t *testing.T) {
	dir := t.TempDir()
	noEdge := filepath.Join(dir, "no-edge.yaml")
	if err := os.WriteFile(noEdge, []byte("edge:\n  drain: 0s\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	badOrigins := filepath.Join(dir, "bad-origins.yaml")
	if err := os.WriteFile(badOrigins, []byte("edge:\n  drain: 30s\n  dns_ttl: 5s\n  check_interval: 5s\n  unhealthy_threshold: 2\n  origins: [\"10.0.0.5:443\", \"10.0.0.6\"]\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name string
		args []string
		want []string // all in the message
	}{
		{"origin without a port", []string{"forward", "--listen", "127.0.0.1:0", "--origin", "10.0.0.5"},
			[]string{"--origin", `"10.0.0.5"`, "host:port"}},
		{"origin port out of range", []string{"forward", "--listen", "127.0.0.1:0", "--origin", "10.0.0.5:70000"},
			[]string{"--origin", "70000", "1 to 65535"}},
		{"negative idle timeout", []string{"forward", "--listen", "127.0.0.1:0", "--origin", "10.0.0.5:443", "--idle-timeout", "-1s"},
			[]string{"--idle-timeout", "-1s", "0 or more"}},
		{"not a duration", []string{"forward", "--listen", "127.0.0.1:0", "--origin", "10.0.0.5:443", "--drain", "soon"},
			[]string{"--drain", `"soon"`, "must be a duration with a unit"}},
		{"missing origin", []string{"forward", "--listen", "127.0.0.1:0"},
			[]string{"--origin is required"}},
		{"config without an edge layer", []string{"forward", "--config", noEdge, "--listen", "127.0.0.1:0", "--origin", "10.0.0.5:443"},
			[]string{"edge.drain", "invariant I6"}},
		{"check path without a slash", []string{"forward", "--listen", "127.0.0.1:0", "--origin", "10.0.0.5:443", "--check-path", "health"},
			[]string{"--check-path", `"health"`, "must start with /"}},
		{"check timeout not below the interval", []string{"forward", "--listen", "127.0.0.1:0", "--origin", "10.0.0.5:443", "--check-interval", "1s", "--check-timeout", "2s"},
			[]string{"--check-timeout", "2s", "below --check-interval 1s"}},
		{"an origin twice", []string{"forward", "--listen", "127.0.0.1:0", "--origin", "10.0.0.5:443", "--origin", "10.0.0.5:443"},
			[]string{"--origin", `"10.0.0.5:443"`, "given twice"}},
		{"admin off loopback without a token", []string{"forward", "--listen", "127.0.0.1:0", "--origin", "10.0.0.5:443", "--admin", "0.0.0.0:9104"},
			[]string{"--admin", `"0.0.0.0:9104"`, "token"}},
		{"config origins are checked", []string{"forward", "--config", badOrigins, "--listen", "127.0.0.1:0"},
			[]string{"edge.origins[1]", `"10.0.0.6"`, "host:port"}},
		{"trusted is not an address", []string{"origin", "--listen", "127.0.0.1:0", "--to", "127.0.0.1:9443", "--trusted", "10.0.0.0/8,edges"},
			[]string{"--trusted", `"edges"`, "CIDR"}},
		{"listen without a port", []string{"origin", "--listen", "localhost", "--to", "127.0.0.1:9443"},
			[]string{"--listen", `"localhost"`, "port"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			out, code := runCLI(t, append([]string{"edge"}, tc.args...)...)
			if code != 2 {
				t.Fatalf("exit %d, want 2\n%s", code, out)
			}
			for _, w := range tc.want {
				if !strings.Contains(out, w) {
					t.Errorf("the message does not say %q:\n%s", w, out)
				}
			}
		})
	}
}
