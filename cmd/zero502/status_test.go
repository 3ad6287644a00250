package main

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/zero502/zero502/deployer"
)

// status when the Docker Engine does not answer: a failure at run time, exit 1 (as logs), not
// 2, which is for bad flags or config.
func TestStatusEngineThatDoesNotAnswerExitsOne(t *testing.T) {
	dir := t.TempDir()
	cfg := strings.ReplaceAll(`balancer: {kind: none, interval: 250ms, timeout: 100ms, unhealthy_threshold: 2, healthy_threshold: 2}
drain: {window: 1500ms, shutdown: 1s, stop_grace: 4s, max_recovery: 2s}
watchdog: {interval: 1s, heal_after: 4, check_timeout: 500ms, state_dir: DIR/state}
app: {keepalive_idle_timeout: 10s}
rollout: {batch: 1, runtime: docker, docker_host: "unix://DIR/no-docker.sock", healthy_deadline: 10s}
services:
  - {name: web, image: "example/web:{version}", port: 39501}
hosts:
  - {name: host-a, address: 127.0.0.1, state_dir: DIR/state/host-a}
`, "DIR", dir)
	path := filepath.Join(dir, "z.yaml")
	if err := os.WriteFile(path, []byte(cfg), 0o644); err != nil {
		t.Fatal(err)
	}
	for _, args := range [][]string{{"status", "--config", path}, {"logs", "--config", path, "--host", "host-a", "--service", "web"}} {
		out, code := runCLI(t, args...)
		if code != 1 || !strings.Contains(out, "does not answer") {
			t.Errorf("%s with no Docker Engine at rollout.docker_host: exit %d, %q; want 1 saying the engine does not answer", args[0], code, out)
		}
	}
}

// status changes nothing, as its help says: on a fleet never deployed it reports each host
// never deployed and makes no state dir (one made by root, run before the first deploy, would
// refuse the deploy user).
func TestStatusOfAFleetNeverDeployedMakesNoStateDir(t *testing.T) {
	dir := t.TempDir()
	path, cfg := localConfigIn(t, dir)
	out, code := runCLI(t, "status", "--config", path)
	if code != 1 || !strings.Contains(out, "never deployed") {
		t.Fatalf("status of a fleet never deployed: exit %d, want 1 saying so\n%s", code, out)
	}
	for _, h := range cfg.Hosts {
		if _, err := os.Stat(cfg.HostStateDir(h)); !os.IsNotExist(err) {
			t.Errorf("status made %s (err %v); it must change nothing", cfg.HostStateDir(h), err)
		}
	}
}

// The status table has a row for every host of the fleet: one whose services could not be read
// (its look over ssh failed) keeps its row, with nothing claimed, rather than vanishing from
// the table and showing up only among the disagreements.
func TestStatusTableHasARowForAHostWhoseServicesWereNotRead(t *testing.T) {
	now := time.Date(2026, 1, 1, 12, 0, 0, 0, time.UTC)
	st := &deployer.FleetStatus{Hosts: []deployer.HostStatus{
		{Host: "host-a", Problems: []string{"reached over ssh (root@10.0.0.1): connection refused"}},
	}}
	var out bytes.Buffer
	writeStatus(&out, st, now)
	table, _, _ := strings.Cut(out.String(), "\n\n")
	rows := strings.Split(table, "\n")[1:] // under the header
	if len(rows) != 1 || !strings.HasPrefix(rows[0], "host-a ") {
		t.Fatalf("status table rows %q, want one for host-a\n%s", rows, out.String())
	}
	if strings.Contains(rows[0], "healthy") {
		t.Errorf("host-a's row %q claims a health it was not seen in", rows[0])
	}
}
