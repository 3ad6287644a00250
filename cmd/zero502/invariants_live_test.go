package main

import (
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/zero502/zero502/infra/alb/elbv2double"
	"github.com/zero502/zero502/infra/ports"
	"github.com/zero502/zero502/internal/testrig/lbprocess"
	"github.com/zero502/zero502/internal/testrig/testmain"
)

// zero502Bin is the binary buildZero502 builds, once for all the package's tests, in a temp
// dir TestMain removes.
var zero502Bin struct {
	once     sync.Once
	pkg, dir string // this package's dir (the tests' working dir at start); the binary's dir
	path     string
	err      error
}

func TestMain(m *testing.M) {
	if testmain.StartedAsProgram() {
		// Code under test ran os.Executable(), this test binary, as zero502 (an in-process demo
		// starts its LB and apps so): it is zero502, not the tests again (each of which would
		// start more of it).
		main()
		return
	}
	zero502Bin.pkg, _ = os.Getwd()
	code := m.Run()
	if zero502Bin.dir != "" {
		_ = os.RemoveAll(zero502Bin.dir)
	}
	os.Exit(code)
}

// buildZero502 builds this command into a temp dir, once: the tests run the real `zero502 lb`.
func buildZero502(t *testing.T) string {
	t.Helper()
	zero502Bin.once.Do(func() {
		dir, err := os.MkdirTemp("", "zero502-cmd-test-")
		if err != nil {
			zero502Bin.err = err
			return
		}
		zero502Bin.dir = dir
		bin := filepath.Join(dir, "zero502")
		build := exec.Command("go", "build", "-o", bin, ".")
		build.Dir = zero502Bin.pkg
		if out, err := build.CombinedOutput(); err != nil {
			zero502Bin.err = fmt.Errorf("go build: %v\n%s", err, out)
			return
		}
		zero502Bin.path = bin
	})
	if zero502Bin.err != nil {
		t.Fatal(zero502Bin.err)
	}
	return zero502Bin.path
}

// freeAddr is a loopback address free now and below the ephemeral range, so no outgoing
// connection of this or another test can take it before whatever it is for binds it.
func freeAddr(t *testing.T) string {
	t.Helper()
	ps, err := ports.Free(1)
	if err != nil {
		t.Fatal(err)
	}
	return "127.0.0.1:" + strconv.Itoa(ps[0])
}

// localConfig is examples/local.yaml with the LB's listen and admin addresses on free ports.
func localConfig(t *testing.T) (path, admin string) {
	t.Helper()
	data, err := os.ReadFile(filepath.Join("..", "..", "examples", "local.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	admin = freeAddr(t)
	s := strings.Replace(string(data), "listen: 127.0.0.1:18080", "listen: "+freeAddr(t), 1)
	s = strings.Replace(s, "admin: 127.0.0.1:18081", "admin: "+admin, 1)
	path = filepath.Join(t.TempDir(), "local.yaml")
	if err := os.WriteFile(path, []byte(s), 0o644); err != nil {
		t.Fatal(err)
	}
	return path, admin
}

// The in-house LB: a real `zero502 lb` started from the config but with --health-interval 800ms
// (config 250ms). --live reports the drift and finds I1 violated on the live numbers (detection
// 2 × 800ms > drain.window 1500ms) although the config holds; a config that matches the LB
// passes; an LB that does not answer is exit 2.
func TestInvariantsLiveInHouseDrift(t *testing.T) {
	bin := buildZero502(t)
	path, admin := localConfig(t)
	if out, code := runCLI(t, "invariants", "--config", path); code != 0 {
		t.Fatalf("the config itself must hold: exit %d\n%s", code, out)
	}
	if out, code := runCLI(t, "invariants", "--live", "--config", path); code != 2 || !strings.Contains(out, admin) {
		t.Fatalf("no LB running: exit %d, want 2 naming %s\n%s", code, admin, out)
	}

	lbprocess.Start(t, bin, path, admin, filepath.Join(t.TempDir(), "lb.log"), "--health-interval", "800ms")

	out, code := runCLI(t, "invariants", "--live", "--config", path)
	if code != 1 {
		t.Fatalf("live interval 800ms against config 250ms: exit %d, want 1\n%s", code, out)
	}
	for _, want := range []string{"live balancer: inhouse " + admin, "balancer.interval  250ms   800ms", "I1", "violated",
		"1 live setting(s) drifted from the config: balancer.interval", "invariant(s) violated on the live balancer's numbers: I1"} {
		if !strings.Contains(out, want) {
			t.Errorf("output does not say %q:\n%s", want, out)
		}
	}

	// The config changed to what the LB runs (and a drain that outlasts it): no drift, all hold.
	t.Setenv("ZERO502_BALANCER_INTERVAL", "800ms")
	t.Setenv("ZERO502_DRAIN_WINDOW", "1900ms") // I5: (4 − 1) × 1s > 1.9s + 1s
	out, code = runCLI(t, "invariants", "--live", "--config", path, "--json")
	var got struct {
		Live struct {
			Balancer string `json:"balancer"`
			Settings struct {
				Interval int64 `json:"interval"`
			} `json:"settings"`
			Drift []any `json:"drift"`
		} `json:"live"`
		Violated int `json:"violated"`
	}
	if err := json.Unmarshal([]byte(out[:strings.LastIndex(out, "}")+1]), &got); err != nil {
		t.Fatalf("--json: %v\n%s", err, out)
	}
	if code != 0 || got.Violated != 0 || len(got.Live.Drift) != 0 || got.Live.Settings.Interval != int64(800*time.Millisecond) {
		t.Fatalf("matching config: exit %d, %+v\n%s", code, got, out)
	}
}

// The ALB: the ELBv2 double through the real SDK (default chain, ZERO502_ALB_ENDPOINT). A target
// group that runs the config's numbers passes; after someone sets the interval to 10s and the
// matcher to 200-499 in the console, --live reports both fields and I1 violated on the live
// numbers (detection 2 × 10s > drain.window 15s).
func TestInvariantsLiveALBConsoleDrift(t *testing.T) {
	dir := t.TempDir()
	double, srv := startELBv2Double(t, dir)
	arn := double.AddTargetGroup(elbv2double.TargetGroup{Name: "mythex-api", Port: 8000, Settings: elbv2double.Settings{
		HealthCheckPath: "/health", Interval: 5 * time.Second, Timeout: 2 * time.Second, HealthyThreshold: 2,
		UnhealthyThreshold: 2, Matcher: "200", DeregistrationDelay: 30 * time.Second,
	}})
	path := editedProduction(t, "arn:aws:elasticloadbalancing:eu-west-1:123456789012:targetgroup/mythex-api/6d0ecf831eec9f09", arn)
	t.Setenv("ZERO502_ALB_ENDPOINT", srv.URL)

	out, code := runCLI(t, "invariants", "--live", "--config", path)
	if code != 0 || !strings.Contains(out, "drift: none") || !strings.Contains(out, "live balancer: alb "+arn) {
		t.Fatalf("target group as configured: exit %d, want 0 with no drift\n%s", code, out)
	}
	if n := double.ModifyCalls(); n != 0 {
		t.Errorf("--live made %d Modify calls, want none", n)
	}

	double.Console(arn, func(s *elbv2double.Settings) { s.Interval, s.Matcher = 10*time.Second, "200-499" })
	out, code = runCLI(t, "invariants", "--live", "--config", path)
	if code != 1 {
		t.Fatalf("console-changed interval: exit %d, want 1\n%s", code, out)
	}
	for _, want := range []string{"balancer.interval", "5s", "10s", "matcher (HttpCode, fixed)", "200-499",
		"2 live setting(s) drifted", "violated on the live balancer's numbers: I1"} {
		if !strings.Contains(out, want) {
			t.Errorf("output does not say %q:\n%s", want, out)
		}
	}

	t.Setenv("ZERO502_ALB_ENDPOINT", "http://"+freeAddr(t))
	t.Setenv("AWS_MAX_ATTEMPTS", "1")
	out, code = runCLI(t, "invariants", "--live", "--config", path)
	if code != 2 || !strings.Contains(out, "DescribeTargetGroups") {
		t.Fatalf("unreachable ELBv2 endpoint: exit %d, want 2 naming the call\n%s", code, out)
	}
}
