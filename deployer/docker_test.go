package deployer

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/moby/moby/client"

	"github.com/zero502/zero502/deployer/report"
	"github.com/zero502/zero502/infra/config"
	"github.com/zero502/zero502/infra/runtime"
	"github.com/zero502/zero502/infra/runtime/docker/dockertest"
	"github.com/zero502/zero502/infra/spec"
	"github.com/zero502/zero502/internal/testrig/tcpserver"
)

// dockerConfig writes a config of hosts for the docker runtime (image, the app listening on
// 0.0.0.0 inside, its port published on 127.0.0.1 at ports[i], no balancer) and returns its path.
func dockerConfig(t *testing.T, dir string, hosts []string, image string, ports []int, appFlags ...string) string {
	t.Helper()
	return dockerConfigWith(t, dir, fmt.Sprintf("docker-%d.yaml", len(appFlags)), "", hosts, image, ports, appFlags...)
}

// dockerConfigWith is dockerConfig written to dir/name, with rollout adding keys to the rollout
// section (e.g. "  bake: 2s\n").
func dockerConfigWith(t *testing.T, dir, name, rollout string, hosts []string, image string, ports []int, appFlags ...string) string {
	t.Helper()
	cmd := append([]string{"/zero502", "app", "--host", "0.0.0.0", "--version", "{version}", "--port", "{port}",
		"--drain", "{drain}", "--shutdown", "{shutdown}", "--idle-timeout", "{idle_timeout}"}, appFlags...)
	quoted, _ := json.Marshal(cmd)
	body := fmt.Sprintf(`balancer:
  kind: none
  interval: 400ms
  timeout: 300ms
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
%sservices:
  - name: web
    image: %s
    command: %s
    port: %d
hosts:
`, rollout, image, quoted, slices.Min(ports))
	for i, h := range hosts {
		body += fmt.Sprintf("  - name: %s\n    address: 127.0.0.1\n    port_offset: %d\n    state_dir: %s\n",
			h, ports[i]-slices.Min(ports), filepath.Join(dir, h))
	}
	path := filepath.Join(dir, name)
	if err := os.WriteFile(path, []byte(body), 0o644); err != nil {
		t.Fatal(err)
	}
	return path
}

// With rollout.runtime docker, `zero502 deploy` runs containers (runtimeFor's docker case);
// a new container that exits while the deployer waits for its health fails the step at once,
// naming host, service and exit code, and the host is rolled back to the previous container.
func TestDockerDeployAndAContainerThatExitsBeforeHealthyFailsAtOnce(t *testing.T) {
	t.Parallel()
	rt := dockertest.Engine(t)
	image := dockertest.Image(t, rt)
	hosts := []string{dockertest.HostName(t, rt), dockertest.HostName(t, rt)}
	host := hosts[0]
	dir := t.TempDir()
	ports := []int{tcpserver.FreePort(t), tcpserver.FreePort(t)}

	good := dockerConfig(t, dir, hosts, image, ports)
	out, code := runDeploy(t, 3*time.Minute, "--config", good, "--version", "v1")
	if code != 0 {
		t.Fatalf("zero502 deploy v1 with the docker runtime: exit %d\n%s", code, out)
	}

	cfg, err := config.Load(dockerConfig(t, dir, hosts, image, ports, "--start-unhealthy", "--exit-after", "300ms"))
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
	if h := rep.Hosts[0]; h.Outcome != report.OutcomeRolledBack || h.Running != "v1" {
		t.Errorf("%s: %s, runs %q; want rolled back to v1\nevents:\n%s", host, h.Outcome, h.Running, &ev)
	}
	if h := rep.Hosts[1]; h.Outcome != report.OutcomeNotReached || h.Running != "v1" {
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

// Images come from a registry: a first deploy pulls v1 from it (the engine lacked it) and runs
// it; a deploy of a v2 the registry does not have fails before anything on the host changes
// (the old container still serves, the spec still names v1), naming the image and the registry.
func TestDockerDeployPullsFromARegistryAndAPullFailureChangesNothing(t *testing.T) {
	t.Parallel()
	rt := dockertest.Engine(t)
	reg := dockertest.NewRegistry(t, "", "")
	ctx := context.Background()
	ref := reg.Host + "/shop/web:v1"
	if _, err := rt.Client().ImageTag(ctx, client.ImageTagOptions{Source: dockertest.Image(t, rt), Target: ref}); err != nil {
		t.Fatalf("tag %s: %v", ref, err)
	}
	if _, err := rt.PushImage(ctx, ref, io.Discard); err != nil {
		t.Fatalf("push %s: %v", ref, err)
	}
	if err := rt.RemoveImage(ctx, ref); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = rt.RemoveImage(context.Background(), ref) })

	hosts := []string{dockertest.HostName(t, rt), dockertest.HostName(t, rt)}
	host := hosts[0]
	dir := t.TempDir()
	path := dockerConfig(t, dir, hosts, reg.Host+"/shop/web:{version}", []int{tcpserver.FreePort(t), tcpserver.FreePort(t)})
	cfg, err := config.Load(path)
	if err != nil {
		t.Fatal(err)
	}
	var ev1 eventLog
	if _, err := New(cfg, Options{Events: ev1.add, Self: bin}).Deploy(ctx, "v1"); err != nil {
		t.Fatalf("deploy v1 from the registry: %v\nevents:\n%s", err, &ev1)
	}
	// The engine asks for the manifest: a GET, or only a HEAD when its store already holds that
	// content from an earlier run (it then rightly skips the GET); either is a pull from here.
	if reg.Served("GET", "/v2/shop/web/manifests/")+reg.Served("HEAD", "/v2/shop/web/manifests/") == 0 {
		t.Errorf("the engine never asked the registry for v1: %v", reg.Requests())
	}
	before, err := rt.List(ctx, runtime.Filter{Host: host, Service: "web"})
	if err != nil || len(before) != 1 {
		t.Fatalf("containers after v1: %v %v", before, err)
	}

	var ev2 eventLog
	rep, err := New(cfg, Options{Events: ev2.add, Self: bin}).Deploy(ctx, "v2")
	if err == nil {
		t.Fatalf("deploy of a v2 the registry lacks succeeded\nevents:\n%s", &ev2)
	}
	for _, want := range []string{reg.Host + "/shop/web:v2", "registry " + reg.Host, "nothing was changed on this host"} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("error does not say %q: %v", want, err)
		}
	}
	if h := rep.Hosts[0]; h.Outcome != report.OutcomeUntouched || h.Running != "v1" {
		t.Errorf("%s: %s, runs %q; want untouched, still v1", host, h.Outcome, h.Running)
	}
	after, err := rt.List(ctx, runtime.Filter{Host: host, Service: "web"})
	if err != nil || len(after) != 1 || after[0].ID != before[0].ID || !after[0].Running() {
		t.Errorf("containers after the failed pull: %v %v; want the v1 container %s untouched", after, err, before[0].ID)
	}
	if s, err := spec.Read(spec.Path(filepath.Join(dir, host))); err != nil || s.Version != "v1" {
		t.Errorf("published spec %q %v, want v1 untouched", s.Version, err)
	}
	if strings.Contains(ev2.String(), " "+StepDrain+" ") {
		t.Errorf("the v1 container was drained although v2 could not be pulled:\n%s", &ev2)
	}
}

// With the Docker runtime: status sees the containers (id, version) and agrees, logs prints a
// container's output (docker logs), stop drains and stops every container and marks the specs
// stopped, and status agrees again with nothing running.
func TestDockerStatusLogsAndStop(t *testing.T) {
	t.Parallel()
	rt := dockertest.Engine(t)
	image := dockertest.Image(t, rt)
	hosts := []string{dockertest.HostName(t, rt), dockertest.HostName(t, rt)}
	dir := t.TempDir()
	path := dockerConfig(t, dir, hosts, image, []int{tcpserver.FreePort(t), tcpserver.FreePort(t)})
	if out, code := runDeploy(t, 3*time.Minute, "--config", path, "--version", "v1"); code != 0 {
		t.Fatalf("deploy v1: exit %d\n%s", code, out)
	}
	st, ok, code := statusJSON(t, path)
	if code != 0 || !ok {
		t.Fatalf("status after v1: exit %d: %+v", code, st)
	}
	for _, h := range st.Hosts {
		if in := h.Services[0].Instances; len(in) != 1 || in[0].Version != "v1" || !in[0].Healthy || strings.HasPrefix(in[0].ID, "pid:") {
			t.Errorf("%s: instances %+v; want one healthy v1 container", h.Host, in)
		}
	}
	out, code := runZero502(t, "logs", "--config", path, "--host", hosts[0], "--service", "web")
	if code != 0 || !strings.Contains(out, "app started") || !strings.Contains(out, `"version":"v1"`) {
		t.Fatalf("logs of %s/web: exit %d\n%s", hosts[0], code, out)
	}
	// A docker client another user could change is not run (logs runs it as the deploy's user).
	open := filepath.Join(t.TempDir(), "bin")
	if err := os.Mkdir(open, 0o777); err != nil || os.Chmod(open, 0o777) != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(open, "docker"), []byte("#!/bin/sh\necho FAKE DOCKER RAN\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	logs := exec.Command(bin, "logs", "--config", path, "--host", hosts[0], "--service", "web")
	logs.Env = append(os.Environ(), "PATH="+open)
	if out, err := logs.CombinedOutput(); err == nil || strings.Contains(string(out), "FAKE DOCKER RAN") || !strings.Contains(string(out), "0777") {
		t.Fatalf("logs with a docker client in a 0777 directory: %v\n%s\nwant it refused, naming the mode, and not run", err, out)
	}
	if out, code := runZero502(t, "stop", "--config", path); code != 0 {
		t.Fatalf("stop: exit %d\n%s", code, out)
	}
	for _, h := range hosts {
		insts, err := rt.List(context.Background(), runtime.Filter{Host: h, Service: "web"})
		if err != nil {
			t.Fatal(err)
		}
		for _, in := range insts {
			if in.Running() {
				t.Errorf("%s: container %s still runs after stop", h, in.ID)
			}
		}
	}
	if out, code := runZero502(t, "status", "--config", path); code != 0 || strings.Count(out, "v1 (stopped)") != 2 {
		t.Fatalf("status after stop: exit %d\n%s", code, out)
	}
}
