package deployer

import (
	"context"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/zero502/zero502/deployer/report"
	"github.com/zero502/zero502/infra/config"
	"github.com/zero502/zero502/infra/runtime"
	"github.com/zero502/zero502/infra/runtime/docker"
	"github.com/zero502/zero502/infra/runtime/docker/dockertest"
	"github.com/zero502/zero502/infra/spec"
	"github.com/zero502/zero502/internal/testrig/tcpserver"
)

// The ordinary faults of faults_test.go again, on the Docker runtime: containers of the test
// image on the real engine.

// dockerFleet is two docker "hosts" of the test image with their published ports.
type dockerFleet struct {
	rt    *docker.Runtime
	image string
	hosts []string
	ports []int
	dir   string
}

func newDockerFleet(t *testing.T) *dockerFleet {
	t.Helper()
	rt := dockertest.Engine(t)
	return &dockerFleet{rt: rt, image: dockertest.Image(t, rt), dir: t.TempDir(),
		hosts: []string{dockertest.HostName(t, rt), dockertest.HostName(t, rt)},
		ports: []int{tcpserver.FreePort(t), tcpserver.FreePort(t)}}
}

func (f *dockerFleet) config(t *testing.T, name, rollout string, appFlags ...string) string {
	t.Helper()
	return dockerConfigWith(t, f.dir, name, rollout, f.hosts, f.image, f.ports, appFlags...)
}

// running is the versions of host's running web containers.
func (f *dockerFleet) running(t *testing.T, host string) []string {
	t.Helper()
	insts, err := f.rt.List(context.Background(), runtime.Filter{Host: host, Service: "web"})
	if err != nil {
		t.Fatal(err)
	}
	var out []string
	for _, in := range insts {
		if in.Running() {
			out = append(out, in.Version)
		}
	}
	return out
}

func (f *dockerFleet) deploy(t *testing.T, path, version string) (*report.Report, *eventLog, error) {
	t.Helper()
	cfg, err := config.Load(path)
	if err != nil {
		t.Fatal(err)
	}
	var ev eventLog
	rep, err := New(cfg, Options{Events: ev.add, Self: bin}).Deploy(context.Background(), version)
	return rep, &ev, err
}

func TestDockerVersionThatCrashesAfterStartIsCaughtByTheBake(t *testing.T) {
	t.Parallel()
	f := newDockerFleet(t)
	if _, ev, err := f.deploy(t, f.config(t, "good.yaml", "  bake: 3s\n"), "v1"); err != nil {
		t.Fatalf("deploy v1: %v\nevents:\n%s", err, ev)
	}
	rep, ev, err := f.deploy(t, f.config(t, "crash.yaml", "  bake: 3s\n", "--exit-after", "1500ms"), "v2")
	if err == nil || !strings.Contains(err.Error(), "exited with code 1") {
		t.Fatalf("deploy of a v2 container that exits 1.5s after its start: %v, want it caught\nevents:\n%s", err, ev)
	}
	if a := rep.Hosts[0]; a.Outcome != report.OutcomeRolledBack || a.Running != "v1" {
		t.Errorf("%s: %s, runs %q; want rolled back to v1\nevents:\n%s", a.Host, a.Outcome, a.Running, ev)
	}
	if b := rep.Hosts[1]; b.Outcome != report.OutcomeNotReached || b.Running != "v1" {
		t.Errorf("%s: %s, runs %q; want not reached, v1", b.Host, b.Outcome, b.Running)
	}
	if got := f.running(t, f.hosts[0]); len(got) != 1 || got[0] != "v1" {
		t.Errorf("running containers of %s: %v, want one v1", f.hosts[0], got)
	}
}

func TestDockerTwoDeploysAtOnceRunOneAfterTheOther(t *testing.T) {
	t.Parallel()
	f := newDockerFleet(t)
	path := f.config(t, "fleet.yaml", "")
	if out, code := runDeploy(t, 3*time.Minute, "--config", path, "--version", "v1"); code != 0 {
		t.Fatalf("deploy v1: exit %d\n%s", code, out)
	}
	outs, codes := make([]string, 2), make([]int, 2)
	var wg sync.WaitGroup
	for i, version := range []string{"v2", "v3"} {
		wg.Add(1)
		go func() {
			defer wg.Done()
			outs[i], codes[i] = runDeploy(t, 3*time.Minute, "--config", path, "--version", version)
		}()
	}
	wg.Wait()
	waited := -1
	for i := range outs {
		if codes[i] != 0 {
			t.Errorf("deploy %d exited %d:\n%s", i+2, codes[i], outs[i])
		}
		if strings.Contains(outs[i], "waiting for the fleet deploy lock held by") {
			waited = i
		}
	}
	if waited < 0 {
		t.Fatalf("neither deploy waited for the other:\n--- v2:\n%s\n--- v3:\n%s", outs[0], outs[1])
	}
	last := []string{"v2", "v3"}[waited]
	for _, h := range f.hosts {
		if got := f.running(t, h); len(got) != 1 || got[0] != last {
			t.Errorf("%s runs %v, want %s alone (the deploy that waited ran last)", h, got, last)
		}
	}
}

func TestDockerFailedRedeployKeepsThePublishedSpec(t *testing.T) {
	t.Parallel()
	f := newDockerFleet(t)
	path := f.config(t, "fleet.yaml", "")
	if _, ev, err := f.deploy(t, path, "v1"); err != nil {
		t.Fatalf("deploy v1: %v\nevents:\n%s", err, ev)
	}
	ctx := context.Background()
	insts, err := f.rt.List(ctx, runtime.Filter{Host: f.hosts[0], Service: "web"})
	if err != nil || len(insts) != 1 {
		t.Fatalf("containers of %s: %v %v", f.hosts[0], insts, err)
	}
	if _, err := f.rt.Stop(ctx, insts[0], 0); err != nil {
		t.Fatal(err)
	}
	if err := f.rt.Remove(ctx, insts[0]); err != nil { // and with it its network sandbox, which holds the port
		t.Fatal(err)
	}
	squatter, err := net.Listen("tcp", fmt.Sprintf("127.0.0.1:%d", f.ports[0])) // the port is held by someone else
	if err != nil {
		t.Fatal(err)
	}
	rep, ev, err := f.deploy(t, path, "v1")
	squatter.Close()
	if err == nil {
		t.Fatalf("redeploy onto a held port succeeded\nevents:\n%s", ev)
	}
	if o := rep.Hosts[0].Outcome; o == report.OutcomeDeployed || o == report.OutcomeUnchanged {
		t.Errorf("%s: %s, want a failure", f.hosts[0], o)
	}
	s, err := spec.Read(spec.Path(filepath.Join(f.dir, f.hosts[0])))
	if err != nil || s.Version != "v1" {
		t.Fatalf("published spec after the failed redeploy: %q %v; want v1 kept\nevents:\n%s", s.Version, err, ev)
	}
	if _, ev, err := f.deploy(t, path, "v1"); err != nil {
		t.Fatalf("deploy v1 once the port is free: %v\nevents:\n%s", err, ev)
	}
	if got := f.running(t, f.hosts[0]); len(got) != 1 || got[0] != "v1" {
		t.Errorf("%s runs %v, want v1 again", f.hosts[0], got)
	}
}

// Start-first on the Docker runtime: the new container runs beside the old one on the service's
// other published port and the old one is stopped only once the new one is healthy; the next
// deploy moves back to the first port.
func TestDockerStartFirstRunsTheNewContainerBesideTheOld(t *testing.T) {
	t.Parallel()
	f := newDockerFleet(t)
	second := []int{tcpserver.FreePort(t), tcpserver.FreePort(t)}
	cmd := `["/zero502", "app", "--host", "0.0.0.0", "--version", "{version}", "--port", "{port}", "--drain", "{drain}", "--shutdown", "{shutdown}", "--idle-timeout", "{idle_timeout}"]`
	body := fmt.Sprintf(`balancer: {kind: none, interval: 400ms, timeout: 300ms, unhealthy_threshold: 2, healthy_threshold: 2, idle_timeout: 5s}
drain: {window: 1s, shutdown: 1s, stop_grace: 4s, max_recovery: 2s}
watchdog: {interval: 1s, heal_after: 4}
app: {keepalive_idle_timeout: 10s}
rollout: {runtime: docker, strategy: start-first, healthy_deadline: 1m}
services:
  - {name: web, image: %s, command: %s, ports: [%d, %d], verify: {version_header: X-Version}}
hosts:
  - {name: %s, address: 127.0.0.1, state_dir: %s}
`, f.image, cmd, f.ports[0], second[0], f.hosts[0], filepath.Join(f.dir, f.hosts[0]))
	path := filepath.Join(f.dir, "start-first.yaml")
	if err := os.WriteFile(path, []byte(body), 0o644); err != nil {
		t.Fatal(err)
	}
	addrOf := func() string {
		insts, err := f.rt.List(context.Background(), runtime.Filter{Host: f.hosts[0], Service: "web"})
		if err != nil {
			t.Fatal(err)
		}
		var running []string
		for _, in := range insts {
			if in.Running() {
				running = append(running, in.Version+"@"+in.Address)
			}
		}
		if len(running) != 1 {
			t.Fatalf("running containers %v, want one", running)
		}
		return running[0]
	}
	for i, want := range []string{
		fmt.Sprintf("v1@127.0.0.1:%d", f.ports[0]),
		fmt.Sprintf("v2@127.0.0.1:%d", second[0]),
		fmt.Sprintf("v3@127.0.0.1:%d", f.ports[0]),
	} {
		version := fmt.Sprintf("v%d", i+1)
		if _, ev, err := f.deploy(t, path, version); err != nil {
			t.Fatalf("deploy %s: %v\nevents:\n%s", version, err, ev)
		} else if i > 0 && !strings.Contains(ev.String(), " start "+version) {
			t.Fatalf("deploy %s started nothing:\n%s", version, ev)
		}
		if got := addrOf(); got != want {
			t.Errorf("after deploying %s: %s runs, want %s", version, got, want)
		}
	}
}
