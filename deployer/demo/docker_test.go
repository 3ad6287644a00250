package demo

import (
	"context"
	"slices"
	"strings"
	"testing"

	"github.com/zero502/zero502/examples"
	"github.com/zero502/zero502/infra/config"
	"github.com/zero502/zero502/infra/runtime"
	"github.com/zero502/zero502/infra/runtime/docker/dockertest"
)

func TestRewriteForContainersRunsTheImageOnHostsOfThisRunAlone(t *testing.T) {
	dir := t.TempDir()
	data, err := rewrite(examples.Local, dir, &containers{Image: "zero502/app:dev", Endpoint: "unix:///var/run/docker.sock", RunID: "ab12"})
	if err != nil {
		t.Fatal(err)
	}
	cfg, err := config.LoadBytes(data, "rewritten local.yaml")
	if err != nil {
		t.Fatalf("rewritten config does not load: %v\n%s", err, data)
	}
	if cfg.Rollout.Runtime != config.RuntimeDocker || cfg.Rollout.DockerHost != "unix:///var/run/docker.sock" {
		t.Errorf("rollout: %+v, want the docker runtime on the given engine", cfg.Rollout)
	}
	for _, s := range cfg.Services {
		if s.Image != "zero502/app:dev" {
			t.Errorf("service %s image %q, want zero502/app:dev", s.Name, s.Image)
		}
		if len(s.Command) < 4 || !slices.Equal(s.Command[:4], []string{"/zero502", "app", "--host", "0.0.0.0"}) ||
			slices.Contains(s.Command, "{self}") {
			t.Errorf("service %s command %q, want /zero502 app --host 0.0.0.0 … (the container's binary, every interface)", s.Name, s.Command)
		}
	}
	for _, h := range cfg.Hosts {
		if !strings.HasSuffix(h.Name, "-ab12") || h.Address != "127.0.0.1" {
			t.Errorf("host %q at %s: want the run id in its name and 127.0.0.1", h.Name, h.Address)
		}
	}
}

// The whole demo with containers: zero failed requests, every host on v2, and no container of
// the run left behind.
func TestDockerDemoRollsEveryHostToV2WithNoFailedRequest(t *testing.T) {
	if testing.Short() {
		t.Skip("end-to-end: runs the whole demo with containers")
	}
	rt := dockertest.Engine(t)
	image := dockertest.Image(t, rt)
	res, code, stderr := demoJSON(t, "--runtime", "docker", "--image", image)
	if n := failures(t, res); n != 0 || code != 0 {
		t.Fatalf("demo --runtime docker: %v failed requests, exit %d (%v); counts %v\nprogress (the end first):\n%s", n, code, res["error"], res["load"].(map[string]any)["counts"], endFirst(stderr))
	}
	if res["runtime"] != RuntimeDocker {
		t.Errorf("result says runtime %v, want docker", res["runtime"])
	}
	versions, _ := res["versions"].(map[string]any)
	if len(versions) != 3 {
		t.Fatalf("want 3 hosts in versions, got %v", versions)
	}
	for h, v := range versions {
		if v != To {
			t.Errorf("host %s runs %v after the demo, want %s", h, v, To)
		}
	}
	all, err := rt.List(context.Background(), runtime.Filter{})
	if err != nil {
		t.Fatal(err)
	}
	for _, in := range all {
		if _, ours := versions[in.Host]; ours {
			t.Errorf("container %s of host %s (%s) left behind by the demo", in.ID, in.Host, in.State)
		}
	}
}
