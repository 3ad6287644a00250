package deployer

import (
	"context"
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/zero502/zero502/infra"
	"github.com/zero502/zero502/infra/runtime"
	"github.com/zero502/zero502/infra/runtime/docker/dockertest"
	"github.com/zero502/zero502/infra/runtime/process"
)

// bin is the real zero502 binary, built once for the whole package's tests: the LB, the app
// instances and the deploy command under test are all this binary.
var bin string

func TestMain(m *testing.M) {
	dir, err := os.MkdirTemp("", "zero502-deployer-test-")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	bin = filepath.Join(dir, "zero502")
	if out, err := exec.Command("go", "build", "-o", bin, "../cmd/zero502").CombinedOutput(); err != nil {
		fmt.Fprintf(os.Stderr, "build zero502: %v\n%s", err, out)
		os.RemoveAll(dir)
		os.Exit(1)
	}
	code := dockertest.Main(m) // m.Run, then the docker tests' containers and image are removed
	os.RemoveAll(dir)
	os.Exit(code)
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
	Interval        time.Duration // balancer.interval
	Bake            time.Duration // rollout.bake
	Env             string        // the web service's env, as a YAML flow map ("{A: b}"), or ""
	AppFlags        []string
	// Gateway, when not nil, adds a second service "gateway" (the app too, on its own port,
	// not behind the balancer) with these extra flags.
	Gateway []string
}

func defaultValues() fleetValues {
	return fleetValues{Kind: "inhouse", Batch: 1, Unhealthy: 2, Window: time.Second, HealthyDeadline: 15 * time.Second,
		Interval: 200 * time.Millisecond}
}

func newFleet(t *testing.T, hosts int) *fleet {
	t.Helper()
	f := &fleet{t: t, dir: t.TempDir(), hosts: hosts}
	ports := freePorts(t, hosts+2)
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
	t.Cleanup(f.killInstances)
	return f
}

func freePorts(t *testing.T, n int) []int {
	t.Helper()
	var ls []net.Listener
	var out []int
	for range n {
		l, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			t.Fatal(err)
		}
		ls = append(ls, l)
		out = append(out, l.Addr().(*net.TCPAddr).Port)
	}
	for _, l := range ls {
		l.Close()
	}
	return out
}

func envLine(env string) string {
	if env == "" {
		return ""
	}
	return "    env: " + env + "\n"
}

func hostName(i int) string { return fmt.Sprintf("host-%c", 'a'+i) }

func (f *fleet) stateDir(i int) string { return filepath.Join(f.dir, hostName(i)) }

// config writes a config file named name with values v and returns its path.
func (f *fleet) config(name string, v fleetValues) string {
	f.t.Helper()
	cmd := []string{"{self}", "app", "--version", "{version}", "--port", "{port}", "--drain", "{drain}",
		"--shutdown", "{shutdown}", "--idle-timeout", "{idle_timeout}", "--orders-log", f.orders}
	cmd = append(cmd, v.AppFlags...)
	quoted, _ := json.Marshal(cmd)
	gateway := ""
	if v.Gateway != nil {
		gw, _ := json.Marshal(append(cmd[:len(cmd)-len(v.AppFlags):len(cmd)-len(v.AppFlags)], v.Gateway...))
		gateway = fmt.Sprintf("  - name: gateway\n    command: %s\n    port: %d\n    verify: {version_header: X-Version}\n", gw, f.gatewayBase())
	}
	var b strings.Builder
	fmt.Fprintf(&b, `balancer:
  kind: %s
  listen: %s
  admin: %s
  service: web
  interval: %s
  timeout: 150ms
  unhealthy_threshold: %d
  healthy_threshold: 2
  idle_timeout: 5s
drain:
  window: %s
  shutdown: 1s
  stop_grace: 4s
  max_recovery: 2s
watchdog:
  interval: 1s
  heal_after: 4
  state_dir: %s
app:
  keepalive_idle_timeout: 10s
rollout:
  batch: %d
  runtime: process
  healthy_deadline: %s
  bake: %s
services:
  - name: web
    command: %s
    port: %d
    verify: {version_header: X-Version}
%s%shosts:
`, v.Kind, f.listen, f.admin, v.Interval, v.Unhealthy, v.Window, f.dir, v.Batch, v.HealthyDeadline,
		v.Bake, quoted, f.base, envLine(v.Env), gateway)
	for i := range f.hosts {
		fmt.Fprintf(&b, "  - name: %s\n    port_offset: %d\n    state_dir: %s\n", hostName(i), f.offsets[i], f.stateDir(i))
	}
	path := filepath.Join(f.dir, name)
	if err := os.WriteFile(path, []byte(b.String()), 0o644); err != nil {
		f.t.Fatal(err)
	}
	return path
}

// gatewayBase is the gateway's port before the hosts' offsets: chosen once per fleet so that
// it plus every host's offset is a port free right now.
func (f *fleet) gatewayBase() int {
	f.t.Helper()
	if f.gateway != 0 {
		return f.gateway
	}
	top := 65535 - f.offsets[len(f.offsets)-1]
	for try := 0; try < 200; try++ {
		base := 20000 + rand.IntN(max(top-20000, 1))
		var ls []net.Listener
		for _, off := range f.offsets {
			l, err := net.Listen("tcp", fmt.Sprintf("127.0.0.1:%d", base+off))
			if err != nil {
				break
			}
			ls = append(ls, l)
		}
		for _, l := range ls {
			l.Close()
		}
		if len(ls) == len(f.offsets) {
			f.gateway = base
			return base
		}
	}
	f.t.Fatal("found no gateway port base with every host's offset free")
	return 0
}

func (f *fleet) load(path string) *infra.Config {
	f.t.Helper()
	cfg, err := infra.Load(path)
	if err != nil {
		f.t.Fatal(err)
	}
	return cfg
}

// startLB runs `zero502 lb --config path` (plus extra flags) until the test ends.
func (f *fleet) startLB(path string, extra ...string) {
	f.t.Helper()
	logf, err := os.Create(filepath.Join(f.dir, "lb.log"))
	if err != nil {
		f.t.Fatal(err)
	}
	cmd := exec.Command(bin, append([]string{"lb", "--config", path}, extra...)...)
	cmd.Stdout, cmd.Stderr = logf, logf
	if err := cmd.Start(); err != nil {
		f.t.Fatal(err)
	}
	f.t.Cleanup(func() {
		cmd.Process.Kill()
		cmd.Wait()
		logf.Close()
		if f.t.Failed() {
			data, _ := os.ReadFile(logf.Name())
			f.t.Logf("lb log (tail):\n%s", tail(string(data), 3000))
		}
	})
	eventually(f.t, 20*time.Second, "the LB's admin API answers", func() error {
		resp, err := http.Get("http://" + f.admin + "/admin/health")
		if err != nil {
			return err
		}
		resp.Body.Close()
		if resp.StatusCode != 200 {
			return fmt.Errorf("admin health %s", resp.Status)
		}
		return nil
	})
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

func (f *fleet) deployer(cfg *infra.Config, events *eventLog, opts Options) *Deployer {
	opts.Self = bin
	opts.Runtime = func(h infra.Host) (Runtime, error) { return f.runtimes[h.Name], nil }
	if events != nil {
		opts.Events = events.add
	}
	return New(cfg, opts)
}

// eventLog collects a deploy's events.
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

// eventually polls check until it returns nil or timeout passes.
func eventually(t *testing.T, timeout time.Duration, what string, check func() error) {
	t.Helper()
	deadline := time.Now().Add(timeout)
	for {
		err := check()
		if err == nil {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("%s: not within %s: %v", what, timeout, err)
		}
		time.Sleep(25 * time.Millisecond)
	}
}

// runDeploy runs the real `zero502 deploy` with args and returns its combined output and exit code.
func runDeploy(t *testing.T, timeout time.Duration, args ...string) (string, int) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), timeout)
	defer cancel()
	cmd := exec.CommandContext(ctx, bin, append([]string{"deploy"}, args...)...)
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	out, err := cmd.CombinedOutput()
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
