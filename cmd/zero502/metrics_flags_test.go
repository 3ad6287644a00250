package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// The metrics flags refuse a bad value with exit 2, naming the flag and the rule, before
// anything starts or changes.
func TestMetricsFlagsRefuseBadValues(t *testing.T) {
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"deploy", "--version", "v2", "--metrics-textfile", "/tmp/deploy.txt"}, `--metrics-textfile: metrics textfile "/tmp/deploy.txt": must end in .prom`},
		{[]string{"edge", "forward", "--listen", "127.0.0.1:0", "--origin", "127.0.0.1:1", "--metrics", "nonsense"}, `--metrics "nonsense": must be [host]:port`},
		{[]string{"edge", "origin", "--listen", "127.0.0.1:0", "--to", "127.0.0.1:1", "--metrics", "nonsense"}, `--metrics "nonsense": must be [host]:port`},
	} {
		out, code := runCLI(t, tc.args...)
		if code != 2 || !strings.Contains(out, tc.want) {
			t.Errorf("%s: exit %d, output:\n%s\nwant exit 2 and %q", strings.Join(tc.args, " "), code, out, tc.want)
		}
	}
}

// A deploy refused for its config creates nothing, not even the --metrics-textfile's directory
// (which a deploy that goes ahead creates, as node_exporter's textfile directory may not exist yet).
func TestARefusedDeployMakesNoMetricsTextfileDirectory(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "textfiles")
	cfg := filepath.Join(t.TempDir(), "bad.yaml")
	if err := os.WriteFile(cfg, []byte("balancer: {kind: nonsense}\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	out, code := runCLI(t, "deploy", "--config", cfg, "--version", "v2", "--metrics-textfile", filepath.Join(dir, "deploy.prom"))
	if code != 2 || !strings.Contains(out, "balancer.kind") {
		t.Fatalf("exit %d, output:\n%s\nwant exit 2 naming balancer.kind", code, out)
	}
	if _, err := os.Stat(dir); !os.IsNotExist(err) {
		t.Errorf("the refused deploy made %s (stat: %v): nothing may change before the config is known good", dir, err)
	}
}
