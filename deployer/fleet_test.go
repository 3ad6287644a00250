package deployer

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"sort"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/zero502/zero502/infra/config"
	"github.com/zero502/zero502/infra/ports"
	"github.com/zero502/zero502/infra/runtime"
	"github.com/zero502/zero502/infra/runtime/docker/dockertest"
	"github.com/zero502/zero502/infra/runtime/process"
	"github.com/zero502/zero502/internal/testrig/albtest"
	"github.com/zero502/zero502/internal/testrig/lbprocess"
	"github.com/zero502/zero502/internal/testrig/syncbuffer"
	"github.com/zero502/zero502/internal/testrig/tcpserver"
	"github.com/zero502/zero502/internal/testrig/testmain"
)

// bin is the real zero502 binary, built once for the whole package's tests (static: the Docker
// tests' image holds the same build): the LB, the app instances and the deploy command under test
// are all this binary.
var bin string

// The tests mostly wait on real timers (health intervals, drain windows, bakes), not on the CPU:
// four of them run at once (testmain), each on its own ports and state dirs. (Six took 309 s
// alone on a slow 2-core machine, against four's 410 s, but failed in CI beside the other
// packages: health checks starved.)
func TestMain(m *testing.M) {
	if err := albtest.SetProcessEnv(); err != nil { // the ALB tests' SDK environment, once: they run in parallel
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	os.Exit(dockertest.Main(m, testmain.Options{Binary: &bin, Parallel: 4, UnderLoad: true}))
}

// fleet is a local fleet for one test: N "hosts" on loopback (free ports, own state dirs), one
// config file with fast numbers that satisfy every invariant, the in-house LB in front.
type fleet struct {
	t       *testing.T
	dir     string
	hosts   int
	listen  string
	admin   string
	base    int
	offsets []int
	gateway int // the gateway service's port base (gatewayBase), 0 until asked for
	// orders is the orders log every app instance appends to.
	orders string
	// runtimes are the hosts' process runtimes, one per host for the whole test, shared by every
	// in-process deploy: the process that started an instance is the one that reaps it.
	runtimes map[string]*process.Runtime
}

// fleetValues are the numbers of a fleet's config a test may change.
type fleetValues struct {
	Kind            string // balancer.kind
	Batch           int    // rollout.batch
	Unhealthy       int    // balancer.unhealthy_threshold
	Window          time.Duration
	HealthyDeadline time.Duration
	Interval        time.Duration     // balancer.interval
	Bake            time.Duration     // rollout.bake
	Env             map[string]string // the web service's env
	AppFlags        []string
	// Gateway, when not nil, adds a second service "gateway" (the app too, on its own port,
	// not behind the balancer) with these extra flags.
	Gateway []string
}

// defaultValues: a health check fails a version after 3 misses of 150 ms in a row, not 2: on a
// busy 2-core machine under -race two stalls in a row happen (I1 still holds: 1s > 200ms × 3).
func defaultValues() fleetValues {
	return fleetValues{Kind: "inhouse", Batch: 1, Unhealthy: 3, Window: time.Second, HealthyDeadline: 15 * time.Second,
		Interval: 200 * time.Millisecond}
}

func newFleet(t *testing.T, hosts int) *fleet {
	t.Helper()
	f := &fleet{t: t, dir: t.TempDir(), hosts: hosts}
	ports := tcpserver.FreePorts(t, hosts+2)
	f.listen = fmt.Sprintf("127.0.0.1:%d", ports[hosts])
	f.admin = fmt.Sprintf("127.0.0.1:%d", ports[hosts+1])
	hp := append([]int(nil), ports[:hosts]...)
	sort.Ints(hp)
	f.base = hp[0]
	for _, p := range hp {
		f.offsets = append(f.offsets, p-f.base)
	}
	f.orders = filepath.Join(f.dir, "orders.jsonl")
	f.runtimes = map[string]*process.Runtime{}
	for i := range hosts {
		rt, err := process.New(f.stateDir(i))
		if err != nil {
			t.Fatal(err)
		}
		f.runtimes[hostName(i)] = rt
	}
	testmain.Track(t, f.killInstances) // at the test's end, or before a -timeout ends the binary
	return f
}

func hostName(i int) string { return fmt.Sprintf("host-%c", 'a'+i) }

func (f *fleet) stateDir(i int) string { return filepath.Join(f.dir, hostName(i)) }

// fleetConfig is the typed config every fleet test starts from: the in-house LB on f's ports in
// front of f's hosts, fast numbers that satisfy every invariant, the process runtime, no service
// yet. A test's config edits it and writes it with f.write.
func (f *fleet) fleetConfig() *config.Config {
	cfg := config.Defaults()
	cfg.Balancer.Kind = config.BalancerInHouse
	cfg.Balancer.Listen, cfg.Balancer.Admin = f.listen, f.admin
	cfg.Balancer.Service = "web"
	cfg.Balancer.Interval, cfg.Balancer.Timeout = 200*time.Millisecond, 150*time.Millisecond
	cfg.Balancer.UnhealthyThreshold, cfg.Balancer.HealthyThreshold = 2, 2
	cfg.Balancer.IdleTimeout = 5 * time.Second
	cfg.Drain = config.Drain{Window: time.Second, Shutdown: time.Second, StopGrace: 4 * time.Second, MaxRecovery: 2 * time.Second}
	cfg.Watchdog.Interval, cfg.Watchdog.HealAfter, cfg.Watchdog.StateDir = time.Second, 4, f.dir
	cfg.App.KeepAliveIdleTimeout = 10 * time.Second
	cfg.Rollout.Runtime = config.RuntimeProcess
	// The analysis (and with it the canary) waits a window longer than header_timeout per batch
	// (I11): the tests of the handshake leave it off, the analysis tests turn it on (judged).
	cfg.Rollout.Analysis.Enabled = false
	for i := range f.hosts {
		cfg.Hosts = append(cfg.Hosts, config.Host{Name: hostName(i), PortOffset: f.offsets[i], StateDir: f.stateDir(i)})
	}
	return cfg
}

// judged turns the analysis and the canary on in cfg with test-speed numbers that keep every
// invariant: header_timeout 2.5s, a batch judged for window (> 2.5s, I11), the canary (host-a,
// 10 %) for canary (> window, I10). The app answers at once on a quiet machine, but a new
// instance starved beside two CPU hogs was seen answering after more than 1s: with a 1s
// header_timeout its users got 504s and its analysis counted them against a good version.
func judged(cfg *config.Config, window, canary time.Duration) {
	cfg.Balancer.HeaderTimeout = 2500 * time.Millisecond
	cfg.Rollout.Analysis.Enabled = true
	cfg.Rollout.Analysis.Window = window
	cfg.Rollout.Canary = config.Canary{Hosts: 1, Weight: 10, Duration: canary}
}

// judgedFleet is a fleet of 3 hosts behind the LB whose deploys are judged (judged: the canary
// host-a, then each batch), its config fleet.yaml (whose path it returns), deployed to v1 when
// onV1: where the tests of the canary, the analysis and the pause start.
func judgedFleet(t *testing.T, onV1 bool) (*fleet, string) {
	t.Helper()
	f := newFleet(t, 3)
	cfg := f.load(f.config("fleet.yaml", defaultValues()))
	judged(cfg, analysisWindow, canaryFor)
	path := f.write("fleet.yaml", cfg)
	f.startLB(path)
	if onV1 {
		if _, err := f.deployer(f.load(path), nil, Options{}).Deploy(context.Background(), "v1"); err != nil {
			t.Fatalf("deploy v1: %v", err)
		}
	}
	return f, path
}

// write encodes cfg into the config file name in f's dir and returns its path.
func (f *fleet) write(name string, cfg *config.Config) string {
	f.t.Helper()
	data, err := config.Encode(cfg)
	if err != nil {
		f.t.Fatal(err)
	}
	path := filepath.Join(f.dir, name)
	if err := os.WriteFile(path, data, 0o644); err != nil {
		f.t.Fatal(err)
	}
	return path
}

// config writes a config file named name with values v and returns its path: the web service
// (zero502 app) behind the balancer, and the gateway beside it when v asks for one.
func (f *fleet) config(name string, v fleetValues) string {
	f.t.Helper()
	cmd := []string{"{self}", "app", "--version", "{version}", "--port", "{port}", "--drain", "{drain}",
		"--shutdown", "{shutdown}", "--idle-timeout", "{idle_timeout}", "--orders-log", f.orders}
	cfg := f.fleetConfig()
	cfg.Balancer.Kind = v.Kind
	cfg.Balancer.Interval = v.Interval
	cfg.Balancer.UnhealthyThreshold = v.Unhealthy
	cfg.Drain.Window = v.Window
	cfg.Rollout.Batch = v.Batch
	cfg.Rollout.HealthyDeadline = v.HealthyDeadline
	cfg.Rollout.Bake = v.Bake
	verify := config.ServiceVerify{VersionHeader: "X-Version"}
	cfg.Services = []config.Service{{Name: "web", Command: append(slices.Clip(cmd), v.AppFlags...), Port: f.base, Verify: verify, Env: v.Env}}
	if v.Gateway != nil {
		cfg.Services = append(cfg.Services, config.Service{Name: "gateway", Command: append(slices.Clip(cmd), v.Gateway...),
			Port: f.gatewayBase(), Verify: verify})
	}
	return f.write(name, cfg)
}

// gatewayBase is the gateway's port before the hosts' offsets: chosen once per fleet so that
// it plus every host's offset is a port free right now.
func (f *fleet) gatewayBase() int {
	f.t.Helper()
	if f.gateway != 0 {
		return f.gateway
	}
	var hostPorts []int
	for _, off := range f.offsets {
		hostPorts = append(hostPorts, f.base+off)
	}
	base, err := ports.FreeAtOffsets(f.offsets, hostPorts)
	if err != nil {
		f.t.Fatal(err)
	}
	f.gateway = base
	return base
}

func (f *fleet) load(path string) *config.Config {
	f.t.Helper()
	cfg, err := config.Load(path)
	if err != nil {
		f.t.Fatal(err)
	}
	return cfg
}

// startLB runs `zero502 lb --config path` (plus extra flags) until the test ends.
func (f *fleet) startLB(path string, extra ...string) {
	f.t.Helper()
	lbprocess.Start(f.t, bin, path, f.admin, filepath.Join(f.dir, "lb.log"), extra...)
}

// killInstances stops every app instance the test started, at once, and removes the fleet's
// directory (retrying: the runtime notes a reaped instance's exit in its record a moment later).
func (f *fleet) killInstances() {
	for _, rt := range f.runtimes {
		insts, _ := rt.List(context.Background(), runtime.Filter{})
		for _, in := range insts {
			if in.Running() {
				rt.Stop(context.Background(), in, 0)
			}
		}
	}
	deadline := time.Now().Add(5 * time.Second)
	for os.RemoveAll(f.dir) != nil && time.Now().Before(deadline) {
		time.Sleep(20 * time.Millisecond)
	}
}

// versions reads back which version each host runs, from its runtime.
func (f *fleet) versions() map[string]string {
	f.t.Helper()
	out := map[string]string{}
	for name, rt := range f.runtimes {
		insts, err := rt.List(context.Background(), runtime.Filter{Service: "web"})
		if err != nil {
			f.t.Fatal(err)
		}
		for _, in := range insts {
			if in.Running() {
				out[name] += in.Version
			}
		}
	}
	return out
}

func (f *fleet) deployer(cfg *config.Config, events *eventLog, opts Options) *Deployer {
	opts.Self = bin
	opts.Runtime = func(h config.Host) (Runtime, error) { return f.runtimes[h.Name], nil }
	if events != nil {
		opts.Events = events.add
	}
	return New(cfg, opts)
}

// eventLog collects a deploy's events.
// onV1 is a fleet of hosts behind the LB, configured by v (written as fleet.yaml, whose path it
// returns) and deployed to v1: where the tests of a second deploy start.
func onV1(t *testing.T, hosts int, v fleetValues) (*fleet, string) {
	t.Helper()
	f := newFleet(t, hosts)
	path := f.config("fleet.yaml", v)
	f.startLB(path)
	if _, err := f.deployer(f.load(path), nil, Options{}).Deploy(context.Background(), "v1"); err != nil {
		t.Fatalf("deploy v1: %v", err)
	}
	return f, path
}

type eventLog struct {
	mu     sync.Mutex
	events []Event
}

func (l *eventLog) add(e Event) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.events = append(l.events, e)
}

func (l *eventLog) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	var b strings.Builder
	for _, e := range l.events {
		fmt.Fprintf(&b, "%6dms %s/%s %s %s %s\n", e.ElapsedMS, e.Host, e.Service, e.Step, e.Version, e.Message)
	}
	return b.String()
}

// runDeploy runs the real `zero502 deploy` with args and returns its combined output and exit code.
func runDeploy(t *testing.T, timeout time.Duration, args ...string) (string, int) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), timeout)
	defer cancel()
	cmd := exec.CommandContext(ctx, bin, append([]string{"deploy"}, args...)...)
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	var buf syncbuffer.Buffer
	cmd.Stdout, cmd.Stderr = &buf, &buf
	if err := cmd.Start(); err != nil {
		t.Fatalf("zero502 deploy %v: %v", args, err)
	}
	var waited atomic.Bool
	testmain.Track(t, func() { // should the test binary time out while the deploy runs
		if !waited.Load() {
			_ = syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL)
		}
	})
	err := cmd.Wait()
	waited.Store(true)
	out := buf.String()
	code := 0
	if ee, ok := err.(*exec.ExitError); ok {
		code = ee.ExitCode()
	} else if err != nil {
		t.Fatalf("zero502 deploy %v: %v\n%s", args, err, out)
	}
	return string(out), code
}

func tail(s string, n int) string {
	if len(s) > n {
		return s[len(s)-n:]
	}
	return s
}
