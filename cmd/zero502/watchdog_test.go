package main

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/zero502/zero502/infra/config"
	"github.com/zero502/zero502/infra/runtime/process"
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
	cfg, err := config.Load(path)
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

// No published spec while the host's services run (the server's config names another state dir
// than the deployer's, or the spec was removed): the watchdog would watch nothing, so the tick
// exits 1 naming the spec it looked for; a fresh host, nothing running, exits 0.
func TestAWatchdogTickWithoutASpecWhileServicesRunExitsNonZero(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "zero502.yaml")
	yaml := fmt.Sprintf(`
rollout: {runtime: process}
watchdog: {state_dir: %[1]s}
services:
  - {name: worker, command: [sleep, "600"]}
hosts:
  - {name: h1, state_dir: %[1]s}
`, dir)
	if err := os.WriteFile(path, []byte(yaml), 0o644); err != nil {
		t.Fatal(err)
	}
	cfg, err := config.Load(path)
	if err != nil {
		t.Fatal(err)
	}
	if out, code := runCLI(t, "watchdog", "--config", path, "--host", "h1"); code != 0 || !strings.Contains(out, "no published spec yet") {
		t.Fatalf("watchdog tick on a fresh host: exit %d, output:\n%s\nwant exit 0, nothing to watch", code, out)
	}
	rt, err := process.New(dir)
	if err != nil {
		t.Fatal(err)
	}
	s := spec.Render(cfg, cfg.Hosts[0], "v1", "")
	inst, err := rt.Start(context.Background(), "h1", s.Services[0])
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		rt.Stop(context.Background(), inst, 0)
		rt.Remove(context.Background(), inst)
	})
	out, code := runCLI(t, "watchdog", "--config", path, "--host", "h1")
	if code != 1 || !strings.Contains(out, spec.Path(dir)) || !strings.Contains(out, "worker v1") {
		t.Fatalf("watchdog tick with worker v1 running and no spec: exit %d, output:\n%s\nwant exit 1 naming %s and worker v1",
			code, out, spec.Path(dir))
	}
}

func TestHostLockPathPrintsTheOneLockOfEachHost(t *testing.T) {
	local := filepath.Join("..", "..", "examples", "local.yaml")
	out, code := runCLI(t, "host", "lock-path", "--config", local)
	if code != 0 {
		t.Fatalf("exit %d: %s", code, out)
	}
	mine := fmt.Sprintf("/tmp/zero502-%d", os.Getuid()) // examples/local.yaml's /tmp/zero502-{uid}
	for _, want := range []string{"host-a  " + mine + "/host-a/deploy.lock", "host-c  " + mine + "/host-c/deploy.lock"} {
		if !strings.Contains(out, want) {
			t.Errorf("output lacks %q:\n%s", want, out)
		}
	}
	out, code = runCLI(t, "host", "lock-path", "--config", local, "--host", "host-b")
	if code != 0 || out != mine+"/host-b/deploy.lock\n" {
		t.Fatalf("--host host-b: exit %d, output %q, want the bare path", code, out)
	}
	if out, code := runCLI(t, "host", "lock-path", "--config", local, "--host", "host-z"); code != 2 || !strings.Contains(out, "host-z") {
		t.Fatalf("--host host-z: exit %d, output %q, want exit 2 naming it", code, out)
	}
}
