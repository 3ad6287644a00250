package main

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/zero502/zero502/infra"
	"github.com/zero502/zero502/infra/spec"
)

// A heal that fails makes the tick exit 1, so systemd marks the unit failed.
func TestAWatchdogTickWhoseHealFailsExitsNonZero(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "zero502.yaml")
	yaml := fmt.Sprintf(`
rollout: {runtime: process}
watchdog: {heal_after: 1, state_dir: %[1]s}
services:
  - {name: worker, command: [sh, -c, "echo cannot start >&2; exit 3"]}
hosts:
  - {name: h1, state_dir: %[1]s}
`, dir)
	if err := os.WriteFile(path, []byte(yaml), 0o644); err != nil {
		t.Fatal(err)
	}
	cfg, err := infra.Load(path)
	if err != nil {
		t.Fatal(err)
	}
	if err := spec.Publish(spec.Path(dir), spec.Render(cfg, cfg.Hosts[0], "v1", "")); err != nil {
		t.Fatal(err)
	}
	out, code := runCLI(t, "watchdog", "--config", path, "--host", "h1")
	if code != 1 || !strings.Contains(out, "worker heal FAILED") || !strings.Contains(out, "a heal failed") {
		t.Fatalf("watchdog tick with a failing heal: exit %d, output:\n%s\nwant exit 1 naming the failed heal", code, out)
	}
}
