package deployer

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/zero502/zero502/infra"
	"github.com/zero502/zero502/infra/runtime"
	"github.com/zero502/zero502/infra/runtime/docker/dockertest"
)

// dockerConfig writes a config of hosts for the docker runtime (image, the app listening on
// 0.0.0.0 inside, its port published on 127.0.0.1 at ports[i], no balancer) and returns its path.
func dockerConfig(t *testing.T, dir string, hosts []string, image string, ports []int, appFlags ...string) string {
	t.Helper()
	cmd := append([]string{"/zero502", "app", "--host", "0.0.0.0", "--version", "{version}", "--port", "{port}",
		"--drain", "{drain}", "--shutdown", "{shutdown}", "--idle-timeout", "{idle_timeout}"}, appFlags...)
	quoted, _ := json.Marshal(cmd)
	body := fmt.Sprintf(`balancer:
  kind: none
  interval: 200ms
  timeout: 150ms
  unhealthy_threshold: 2
  healthy_threshold: 2
  idle_timeout: 5s
drain:
  window: 1s
  shutdown: 1s
  stop_grace: 4s
  max_recovery: 2s
watchdog:
  interval: 1s
  heal_after: 4
app:
  keepalive_idle_timeout: 10s
rollout:
  runtime: docker
  healthy_deadline: 1m
services:
  - name: web
    image: %s
    command: %s
    port: %d
hosts:
`, image, quoted, slices.Min(ports))
	for i, h := range hosts {
		body += fmt.Sprintf("  - name: %s\n    address: 127.0.0.1\n    port_offset: %d\n    state_dir: %s\n",
			h, ports[i]-slices.Min(ports), filepath.Join(dir, h))
	}
	path := filepath.Join(dir, fmt.Sprintf("docker-%d.yaml", len(appFlags)))
	if err := os.WriteFile(path, []byte(body), 0o644); err != nil {
		t.Fatal(err)
	}
	return path
}

// With rollout.runtime docker, `zero502 deploy` runs containers (RuntimeFor's docker case);
// a new container that exits while the deployer waits for its health fails the step at once,
// naming host, service and exit code, and the host is rolled back to the previous container.
func TestDockerDeployAndAContainerThatExitsBeforeHealthyFailsAtOnce(t *testing.T) {
	t.Parallel()
	rt := dockertest.Engine(t)
	image := dockertest.Image(t, rt)
	hosts := []string{dockertest.HostName(t, rt), dockertest.HostName(t, rt)}
	host := hosts[0]
	dir := t.TempDir()
	ports := []int{dockertest.FreePort(t), dockertest.FreePort(t)}

	good := dockerConfig(t, dir, hosts, image, ports)
	out, code := runDeploy(t, 3*time.Minute, "--config", good, "--version", "v1")
	if code != 0 {
		t.Fatalf("zero502 deploy v1 with the docker runtime: exit %d\n%s", code, out)
	}

	cfg, err := infra.Load(dockerConfig(t, dir, hosts, image, ports, "--start-unhealthy", "--exit-after", "300ms"))
	if err != nil {
		t.Fatal(err)
	}
	var ev eventLog
	d := New(cfg, Options{Events: ev.add, Self: bin})
	began := time.Now()
	rep, err := d.Deploy(context.Background(), "v2")
	took := time.Since(began)
	if err == nil {
		t.Fatalf("deploy of a container that exits at once succeeded\nevents:\n%s", &ev)
	}
	t.Logf("deploy error (after %s): %v", took.Round(time.Millisecond), err)
	for _, want := range []string{"host " + host, "service web", "exited with code 1", "before it was healthy", "docker logs"} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("error does not say %q: %v", want, err)
		}
	}
	if took >= cfg.Rollout.HealthyDeadline {
		t.Errorf("the deploy took %s: it waited out rollout.healthy_deadline %s", took, cfg.Rollout.HealthyDeadline)
	}
	if h := rep.Hosts[0]; h.Outcome != OutcomeRolledBack || h.Running != "v1" {
		t.Errorf("%s: %s, runs %q; want rolled back to v1\nevents:\n%s", host, h.Outcome, h.Running, &ev)
	}
	if h := rep.Hosts[1]; h.Outcome != OutcomeNotReached || h.Running != "v1" {
		t.Errorf("%s: %s, runs %q; want not reached, still v1", h.Host, h.Outcome, h.Running)
	}
	insts, err := rt.List(context.Background(), runtime.Filter{Host: host, Service: "web"})
	if err != nil {
		t.Fatal(err)
	}
	var running []string
	for _, in := range insts {
		if in.Running() {
			running = append(running, in.Version)
		}
	}
	if len(running) != 1 || running[0] != "v1" {
		t.Errorf("running containers of %s: %v, want one v1", host, running)
	}
}
