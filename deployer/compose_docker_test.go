package deployer

import (
	"context"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/zero502/zero502/infra/config"
	"github.com/zero502/zero502/infra/runtime"
	"github.com/zero502/zero502/infra/runtime/docker/dockertest"
	"github.com/zero502/zero502/internal/testrig/poll"
)

// The shipped Compose example (examples/compose: web behind the balancer, api with an env_file
// and a Compose healthcheck, a worker without a port) deploys from the Compose file alone plus a
// short zero502 file, onto two hosts on the Docker Engine, v1 → v2 under load through the
// in-house LB: no request fails, every host runs v2 of all three services (the image tag is the
// version: `${IMAGE}:{version}`), and the deploy reports every Compose key zero502 does not
// honour as Compose would.
func TestDockerComposeExampleRollsWithNoFailedRequest(t *testing.T) {
	t.Parallel()
	rt := dockertest.Engine(t)
	v1 := strings.TrimPrefix(dockertest.Image(t, rt), dockertest.Repository+":")
	v2 := dockertest.Version(t, rt)
	f := newFleet(t, 2)
	for _, name := range []string{"compose.yaml", "api.env"} {
		data, err := os.ReadFile(filepath.Join("..", "examples", "compose", name))
		if err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(f.dir, name), data, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	// the Compose file's variables, as a team sets them: a .env file beside it
	dotenv := fmt.Sprintf("IMAGE=%s\nWEB_PORT=%d\nAPI_PORT=%d\n", dockertest.Repository, f.base, f.gatewayBase())
	if err := os.WriteFile(filepath.Join(f.dir, ".env"), []byte(dotenv), 0o644); err != nil {
		t.Fatal(err)
	}

	cfg := f.fleetConfig()
	cfg.ServicesFrom = "compose.yaml"
	cfg.Rollout.Runtime = config.RuntimeDocker
	cfg.Rollout.HealthyDeadline = time.Minute
	cfg.Balancer.HealthPath = "/health"
	// a container's published port answers through docker-proxy: checks every 400ms within 300ms,
	// out after 3 misses (1.2s < drain.window, I1)
	cfg.Balancer.Interval, cfg.Balancer.Timeout, cfg.Balancer.UnhealthyThreshold = 400*time.Millisecond, 300*time.Millisecond, 3
	// The app answers at once, but a container starved by a busy machine was seen taking over a
	// second (504s at a 1s header_timeout under two CPU hogs): 3s, with the drain window above it
	// (I9), the stop grace above the drain (I2) and the watchdog's patience above both (I5).
	cfg.Balancer.HeaderTimeout = 3 * time.Second
	cfg.Drain.Window, cfg.Drain.StopGrace = 3500*time.Millisecond, 8*time.Second
	cfg.Watchdog.Interval = 2 * time.Second
	for i := range cfg.Hosts {
		cfg.Hosts[i].Name, cfg.Hosts[i].Address = dockertest.HostName(t, rt), "127.0.0.1"
	}
	path := f.write("zero502.yaml", cfg)
	f.startLB(path)

	if out, code := runDeploy(t, 3*time.Minute, "--config", path, "--version", v1); code != 0 {
		t.Fatalf("deploy %s: exit %d\n%s", v1, code, out)
	}
	poll.UntilNil(t, 20*time.Second, "the LB serves "+v1, func() error { return servesVersion(f.listen, v1) })
	load := startMeasureOf(t, f.listen, "/", "/orders", "/health")
	time.Sleep(300 * time.Millisecond) // some load before the rollout starts
	out, code := runDeploy(t, 3*time.Minute, "--config", path, "--version", v2)
	res := load.stop(t)
	if code != 0 {
		t.Fatalf("deploy %s: exit %d\n%s", v2, code, out)
	}
	requireNoFailure(t, res)
	if err := servesVersion(f.listen, v2); err != nil {
		t.Errorf("after the deploy: %v", err)
	}
	for _, h := range cfg.Hosts {
		insts, err := rt.List(context.Background(), runtime.Filter{Host: h.Name})
		if err != nil {
			t.Fatal(err)
		}
		running := map[string]string{}
		for _, in := range insts {
			if in.Running() {
				running[in.Service] += in.Version
			}
		}
		for _, svc := range []string{"api", "web", "worker"} {
			if running[svc] != v2 {
				t.Errorf("host %s: %s runs %q, want %s alone (running: %v)", h.Name, svc, running[svc], v2, running)
			}
		}
	}
	for _, key := range []string{"volumes: ", "services.worker.volumes: ", "services.api.env_file: ", "services.api.healthcheck: ",
		"services.web.depends_on: ", "services.web.restart: ", "deploy.update_config.order: ", "stop_grace_period: "} {
		if !strings.Contains(out, "services_from: not as Compose would: "+key) {
			t.Errorf("the deploy's output does not report %s:\n%s", key, out)
		}
	}
}

// servesVersion says whether the LB at listen answers GET / from version.
func servesVersion(listen, version string) error {
	resp, err := http.Get("http://" + listen + "/")
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	if got := resp.Header.Get("X-Version"); got != version {
		return fmt.Errorf("answers from %q (%s), want %s", got, resp.Status, version)
	}
	return nil
}
