package demo

import (
	"bytes"
	"encoding/json"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/zero502/zero502/examples"
	"github.com/zero502/zero502/infra/config"
	"github.com/zero502/zero502/infra/runtime/docker/dockertest"
	"github.com/zero502/zero502/internal/testrig/testmain"
)

// bin is the zero502 binary built once for the end-to-end tests.
var bin string

func TestMain(m *testing.M) {
	os.Exit(dockertest.Main(m, testmain.Options{Binary: &bin, UnderLoad: true}))
}

func TestRewriteGivesEveryRunItsOwnPortsAndStateDirs(t *testing.T) {
	dir := t.TempDir()
	data, err := rewrite(examples.Local, dir, nil)
	if err != nil {
		t.Fatal(err)
	}
	cfg, err := config.LoadBytes(data, "rewritten local.yaml")
	if err != nil {
		t.Fatalf("rewritten config does not load: %v\n%s", err, data)
	}
	local, err := config.LoadBytes(examples.Local, "local.yaml")
	if err != nil {
		t.Fatal(err)
	}
	if cfg.Drain != local.Drain || cfg.Balancer.Interval != local.Balancer.Interval ||
		cfg.Balancer.HealthyThreshold != local.Balancer.HealthyThreshold {
		t.Fatalf("the fast numbers changed: drain %+v interval %s", cfg.Drain, cfg.Balancer.Interval)
	}
	seen := map[string]bool{cfg.Balancer.Listen: true, cfg.Balancer.Admin: true}
	for _, a := range cfg.Targets() {
		seen[a] = true
	}
	if len(seen) != 2+len(cfg.Hosts) || seen[local.Balancer.Listen] {
		t.Fatalf("want distinct fresh addresses for LB, admin and %d hosts, got %v", len(cfg.Hosts), seen)
	}
	for _, h := range cfg.Hosts {
		if sd := cfg.HostStateDir(h); !strings.HasPrefix(sd, dir) || !strings.HasPrefix(cfg.HostLockPath(h), dir) {
			t.Fatalf("host %s state %s / lock %s not under the run's dir %s", h.Name, sd, cfg.HostLockPath(h), dir)
		}
	}
}

// demoJSON runs the real binary's demo with args and returns its decoded --json result and
// exit code.
func demoJSON(t *testing.T, args ...string) (map[string]any, int, string) {
	t.Helper()
	cmd := exec.Command(bin, append([]string{"demo", "--json"}, args...)...)
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	err := cmd.Run()
	code := 0
	var ee *exec.ExitError
	if errors.As(err, &ee) {
		code = ee.ExitCode()
	} else if err != nil {
		t.Fatal(err)
	}
	var res map[string]any
	if err := json.Unmarshal(stdout.Bytes(), &res); err != nil {
		t.Fatalf("demo --json printed no JSON (exit %d): %v\nstdout:\n%s\nstderr:\n%s", code, err, stdout.String(), stderr.String())
	}
	if dir, _ := res["dir"].(string); dir != "" { // a run that failed kept its dir: show the LB's view
		t.Cleanup(func() {
			if t.Failed() {
				data, _ := os.ReadFile(filepath.Join(dir, "lb.log"))
				t.Logf("the demo kept %s; its LB log (tail):\n%s", dir, data[max(0, len(data)-6000):])
			}
			os.RemoveAll(dir)
		})
	}
	return res, code, stderr.String()
}

// endFirst puts the last 40 lines of a demo's progress before the whole of it: a CI log that
// keeps only the head and the tail of a failure still shows why the demo ended.
func endFirst(progress string) string {
	lines := strings.Split(strings.TrimRight(progress, "\n"), "\n")
	tail := lines[max(0, len(lines)-40):]
	return strings.Join(tail, "\n") + "\n--- the whole progress:\n" + progress
}

func failures(t *testing.T, res map[string]any) float64 {
	t.Helper()
	load, ok := res["load"].(map[string]any)
	if !ok {
		t.Fatalf("no load in result: %v", res)
	}
	return load["failures"].(float64)
}

func TestDemoRollsEveryHostToV2WithNoFailedRequest(t *testing.T) {
	if testing.Short() {
		t.Skip("end-to-end: runs the whole demo")
	}
	report := filepath.Join(t.TempDir(), "demo.html")
	res, code, stderr := demoJSON(t, "--report", report)
	if n := failures(t, res); n != 0 || code != 0 {
		t.Fatalf("demo: %v failed requests, exit %d (%v); counts %v\nprogress (the end first):\n%s", n, code, res["error"], res["load"].(map[string]any)["counts"], endFirst(stderr))
	}
	versions, _ := res["versions"].(map[string]any)
	if len(versions) != 3 {
		t.Fatalf("want 3 hosts in versions, got %v", versions)
	}
	for h, v := range versions {
		if v != To {
			t.Fatalf("host %s runs %v after the demo, want %s", h, v, To)
		}
	}
	page, err := os.ReadFile(report)
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Contains(page, []byte("<svg")) || !bytes.Contains(page, []byte("host-a")) {
		t.Fatalf("report %s has no SVG timeline with the hosts", report)
	}
}

func TestNaiveDemoShowsFailedRequestsAndExitsNonZero(t *testing.T) {
	if testing.Short() {
		t.Skip("end-to-end: runs the whole demo")
	}
	res, code, stderr := demoJSON(t, "--naive")
	if n := failures(t, res); n == 0 || code == 0 {
		t.Fatalf("demo --naive: %v failed requests, exit %d; the measurement must see the naive rollout's failures\nprogress:\n%s", n, code, stderr)
	}
	if dir, ok := res["dir"]; ok {
		t.Errorf("demo --naive kept %v: failed requests are what a naive run shows, not a reason to keep its dir", dir)
	}
}

// zero502 demo --service python deploys a server that knows nothing of zero502 (python3 -m
// http.server): drained at the LB, start-first, with no failed request and every host on v2.
func TestPythonDemoRollsAThirdPartyServerWithNoFailedRequest(t *testing.T) {
	if testing.Short() {
		t.Skip("end-to-end: runs the whole demo")
	}
	res, code, stderr := demoJSON(t, "--service", "python")
	if n := failures(t, res); n != 0 || code != 0 {
		t.Fatalf("python demo: %v failed requests, exit %d (%v); counts %v\nprogress (the end first):\n%s", n, code, res["error"], res["load"].(map[string]any)["counts"], endFirst(stderr))
	}
	for h, v := range res["versions"].(map[string]any) {
		if v != To {
			t.Fatalf("host %s runs %v after the demo, want %s", h, v, To)
		}
	}
	if !strings.Contains(stderr, "drained at the balancer by the deployer") || !strings.Contains(stderr, "runpy.run_module('http.server'") {
		t.Fatalf("the progress shows no balancer-side drain of http.server:\n%s", stderr)
	}
}
