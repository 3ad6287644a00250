package watchdog_test

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"math/rand/v2"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/zero502/zero502/deployer"
	"github.com/zero502/zero502/deployer/report"
	"github.com/zero502/zero502/infra/config"
	"github.com/zero502/zero502/infra/runtime"
	"github.com/zero502/zero502/infra/runtime/docker"
	"github.com/zero502/zero502/infra/runtime/docker/dockertest"
	"github.com/zero502/zero502/infra/spec"
	"github.com/zero502/zero502/internal/testrig/lbprocess"
	"github.com/zero502/zero502/internal/testrig/syncbuffer"
	"github.com/zero502/zero502/watchdog"
)

// dockerFleet is a fleet of docker "hosts" on this machine's loopback (each its own port
// offset and state dir) behind the in-house LB, with the fast numbers.
type dockerFleet struct {
	t             *testing.T
	dir           string
	rt            *docker.Runtime
	image, bin    string
	hosts         []string
	base          int // web's port; gateway's is base+1; host i adds 10×i
	listen, admin string
}

func newDockerFleet(t *testing.T, hosts int) *dockerFleet {
	t.Helper()
	rt := dockertest.Engine(t)
	f := &dockerFleet{t: t, dir: t.TempDir(), rt: rt, image: dockertest.Image(t, rt), bin: dockertest.Binary(t, rt)}
	for range hosts {
		f.hosts = append(f.hosts, dockertest.HostName(t, rt))
	}
	f.pickPorts()
	return f
}

// pickPorts finds a base below the ephemeral range where every port the fleet uses is free.
func (f *dockerFleet) pickPorts() {
	for try := 0; try < 100; try++ {
		base := 20000 + 100*rand.IntN(90)
		ports := []int{base + 90, base + 91} // LB listen, admin
		for i := range f.hosts {
			ports = append(ports, base+10*i, base+10*i+1)
		}
		if allFree(ports) {
			f.base = base
			f.listen = fmt.Sprintf("127.0.0.1:%d", base+90)
			f.admin = fmt.Sprintf("127.0.0.1:%d", base+91)
			return
		}
	}
	f.t.Fatal("no free port range found")
}

func allFree(ports []int) bool {
	var ls []net.Listener
	defer func() {
		for _, l := range ls {
			l.Close()
		}
	}()
	for _, p := range ports {
		l, err := net.Listen("tcp", fmt.Sprintf("127.0.0.1:%d", p))
		if err != nil {
			return false
		}
		ls = append(ls, l)
	}
	return true
}

// config writes a config named name; gateway adds a second service, with gatewayFlags appended
// to its command.
func (f *dockerFleet) config(name string, gateway bool, gatewayFlags ...string) string {
	f.t.Helper()
	app := []string{"/zero502", "app", "--host", "0.0.0.0", "--port", "{port}", "--version", "{version}",
		"--drain", "{drain}", "--shutdown", "{shutdown}", "--idle-timeout", "{idle_timeout}"}
	cfg := config.Defaults()
	b := &cfg.Balancer
	b.Kind, b.Listen, b.Admin, b.Service = config.BalancerInHouse, f.listen, f.admin, "web"
	b.Interval, b.Timeout = 200*time.Millisecond, 150*time.Millisecond
	b.UnhealthyThreshold, b.HealthyThreshold = 2, 2
	b.IdleTimeout = 5 * time.Second
	cfg.Drain = config.Drain{Window: time.Second, Shutdown: time.Second, StopGrace: 4 * time.Second, MaxRecovery: 2 * time.Second}
	cfg.Watchdog.Interval, cfg.Watchdog.HealAfter, cfg.Watchdog.CheckTimeout = time.Second, 4, 500*time.Millisecond
	cfg.Watchdog.StateDir = f.dir
	cfg.App.KeepAliveIdleTimeout = 10 * time.Second
	cfg.Rollout.Batch, cfg.Rollout.Runtime, cfg.Rollout.HealthyDeadline = 1, config.RuntimeDocker, 30*time.Second
	cfg.Rollout.Analysis.Enabled = false // the watchdog beside a deploy; the analysis has the deployer's tests
	cfg.Services = []config.Service{{Name: "web", Image: f.image, Port: f.base, Command: app}}
	if gateway {
		cfg.Services = append(cfg.Services, config.Service{Name: "gateway", Image: f.image, Port: f.base + 1,
			Command: append(slices.Clip(app), gatewayFlags...)})
	}
	for i, h := range f.hosts {
		cfg.Hosts = append(cfg.Hosts, config.Host{Name: h, Address: "127.0.0.1", PortOffset: 10 * i, StateDir: filepath.Join(f.dir, h)})
	}
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

func (f *dockerFleet) load(path string) *config.Config {
	f.t.Helper()
	cfg, err := config.Load(path)
	if err != nil {
		f.t.Fatal(err)
	}
	return cfg
}

// startLB runs `zero502 lb --config path` until the test ends.
func (f *dockerFleet) startLB(path string) {
	f.t.Helper()
	lbprocess.Start(f.t, f.bin, path, f.admin, filepath.Join(f.dir, "lb.log"))
}

// deploy rolls cfg's fleet to version in this process, on the docker runtime.
func (f *dockerFleet) deploy(cfg *config.Config, version string, events func(deployer.Event)) (*report.Report, error) {
	d := deployer.New(cfg, deployer.Options{
		Runtime: func(config.Host) (deployer.Runtime, error) { return f.rt, nil },
		Events:  events,
	})
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	return d.Deploy(ctx, version)
}

// running maps host → service → versions of its running containers.
func (f *dockerFleet) running() map[string]map[string]string {
	f.t.Helper()
	out := map[string]map[string]string{}
	for _, h := range f.hosts {
		insts, err := f.rt.List(context.Background(), runtime.Filter{Host: h})
		if err != nil {
			f.t.Fatal(err)
		}
		out[h] = map[string]string{}
		for _, in := range insts {
			if in.Running() {
				out[h][in.Service] += in.Version
			}
		}
	}
	return out
}

// load sends GETs through the LB from 4 clients (two keep-alive, two new connections per
// request) until stop is closed, and counts what users would feel.
type loadResult struct {
	ok, failed atomic.Int64
	mu         sync.Mutex
	samples    []string
}

func runLoad(url string, stop <-chan struct{}) (*loadResult, *sync.WaitGroup) {
	res := &loadResult{}
	var wg sync.WaitGroup
	for i := range 4 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			c := &http.Client{Timeout: 5 * time.Second, Transport: &http.Transport{DisableKeepAlives: i%2 == 1}}
			for {
				select {
				case <-stop:
					return
				default:
				}
				resp, err := c.Get(url)
				if err == nil {
					io.Copy(io.Discard, resp.Body)
					resp.Body.Close()
				}
				if err == nil && resp.StatusCode == 200 {
					res.ok.Add(1)
				} else {
					res.failed.Add(1)
					res.mu.Lock()
					if len(res.samples) < 5 {
						if err != nil {
							res.samples = append(res.samples, err.Error())
						} else {
							res.samples = append(res.samples, resp.Status)
						}
					}
					res.mu.Unlock()
				}
				time.Sleep(5 * time.Millisecond)
			}
		}()
	}
	return res, &wg
}

// Issue 5, test 2: the watchdog ticks every second on every host through a whole docker
// deploy under load: it takes no action (the deploy holds each host's lock; between hosts
// everything is healthy), the spec changes only at the deployer's publish, no request fails.
func TestWatchdogBesideADockerDeployUnderLoadTakesNoAction(t *testing.T) {
	if testing.Short() {
		t.Skip("a whole docker deploy: skipped with -short")
	}
	f := newDockerFleet(t, 2)
	path := f.config("fleet.yaml", false)
	cfg := f.load(path)
	f.startLB(path)
	if _, err := f.deploy(cfg, "v1", nil); err != nil {
		t.Fatalf("first deploy: %v", err)
	}

	var logs syncbuffer.Buffer
	logger := slog.New(slog.NewJSONHandler(&logs, nil))
	var ws []*watchdog.Watchdog
	for _, h := range cfg.Hosts {
		w, err := watchdog.New(cfg, h, watchdog.Options{Runtime: f.rt, Logger: logger})
		if err != nil {
			t.Fatal(err)
		}
		ws = append(ws, w)
	}
	var mu sync.Mutex
	var ticks, skipped, healed int
	var heals []string
	ctx, cancel := context.WithCancel(context.Background())
	loopDone := make(chan struct{})
	go func() {
		defer close(loopDone)
		watchdog.Loop(ctx, ws, cfg.Watchdog.Interval, func(r watchdog.Report, err error) {
			mu.Lock()
			defer mu.Unlock()
			ticks++
			if r.Skipped {
				skipped++
			}
			for _, v := range r.Services {
				if v.Healed || v.HealError != "" {
					healed++
					heals = append(heals, r.String())
				}
			}
			if err != nil {
				heals = append(heals, err.Error())
			}
		})
	}()

	// Every distinct publish of each host's spec, seen by polling.
	published := map[string]map[time.Time]string{}
	pollStop := make(chan struct{})
	pollDone := make(chan struct{})
	poll := func() {
		for _, h := range cfg.Hosts {
			if s, err := spec.Read(spec.Path(cfg.HostStateDir(h))); err == nil {
				if published[h.Name] == nil {
					published[h.Name] = map[time.Time]string{}
				}
				published[h.Name][s.PublishedAt] = s.Version
			}
		}
	}
	poll()
	go func() {
		defer close(pollDone)
		for {
			select {
			case <-pollStop:
				return
			case <-time.After(20 * time.Millisecond):
				poll()
			}
		}
	}()

	loadStop := make(chan struct{})
	load, loadWG := runLoad("http://"+f.listen+"/", loadStop)
	publishes := map[string]int{}
	var evMu sync.Mutex
	rep, err := f.deploy(cfg, "v2", func(e deployer.Event) {
		if e.Step == deployer.StepPublish {
			evMu.Lock()
			publishes[e.Host]++
			evMu.Unlock()
		}
	})
	time.Sleep(2 * cfg.Watchdog.Interval) // let the watchdog tick over the finished fleet too
	close(loadStop)
	loadWG.Wait()
	cancel()
	<-loopDone
	close(pollStop)
	<-pollDone
	poll()

	if err != nil {
		t.Fatalf("deploy v2: %v\n%s", err, rep.Error)
	}
	for h, v := range rep.Versions() {
		if v != "v2" {
			t.Errorf("host %s runs %s after the deploy, want v2", h, v)
		}
	}
	mu.Lock()
	defer mu.Unlock()
	if healed != 0 {
		t.Errorf("the watchdog acted %d times during the deploy:\n%s\nlog:\n%s", healed, strings.Join(heals, "\n"), logs.String())
	}
	if skipped == 0 || ticks < 2*len(cfg.Hosts) {
		t.Errorf("%d ticks, %d skipped: the watchdog should have ticked through the deploy and met the deploy's lock", ticks, skipped)
	}
	for _, h := range cfg.Hosts {
		if got := len(published[h.Name]); got != 1+publishes[h.Name] || publishes[h.Name] != 1 {
			t.Errorf("host %s: %d distinct specs seen (%v), deployer published %d times; only the deployer writes the spec",
				h.Name, got, published[h.Name], publishes[h.Name])
		}
	}
	if n := load.failed.Load(); n != 0 || load.ok.Load() == 0 {
		t.Errorf("load: %d ok, %d failed (e.g. %v); want zero failed requests", load.ok.Load(), n, load.samples)
	}
	t.Logf("load: %d ok, 0 failed; watchdog: %d ticks, %d skipped under the deploy's lock, 0 heals",
		load.ok.Load(), ticks, skipped)
}

// Issue 5, test 6: a deploy whose new gateway container exits right after start fails, names
// the host and the service, and rolls that host back; the next host is never touched.
func TestDockerDeployWhoseGatewayDiesAtStartRollsTheHostBack(t *testing.T) {
	if testing.Short() {
		t.Skip("a whole docker deploy: skipped with -short")
	}
	f := newDockerFleet(t, 2)
	good := f.config("good.yaml", true)
	bad := f.config("bad.yaml", true, "--exit-after", "10ms")
	f.startLB(good)
	if _, err := f.deploy(f.load(good), "v1", nil); err != nil {
		t.Fatalf("first deploy: %v", err)
	}
	rep, err := f.deploy(f.load(bad), "v2", nil)
	if err == nil {
		t.Fatalf("a deploy whose gateway dies at start succeeded:\n%+v", rep)
	}
	t.Logf("the deploy failed as it must: %v", err)
	first := f.hosts[0]
	if !strings.Contains(err.Error(), first) || !strings.Contains(err.Error(), "gateway") {
		t.Errorf("error %q should name host %s and service gateway", err, first)
	}
	for _, hr := range rep.Hosts {
		want := map[string]string{f.hosts[0]: report.OutcomeRolledBack, f.hosts[1]: report.OutcomeNotReached}[hr.Host]
		if hr.Outcome != want {
			t.Errorf("host %s: outcome %q, want %q", hr.Host, hr.Outcome, want)
		}
	}
	for h, svcs := range f.running() {
		for _, svc := range []string{"web", "gateway"} {
			if svcs[svc] != "v1" {
				t.Errorf("host %s: %s runs %q after the failed deploy, want v1 (rolled back / untouched)", h, svc, svcs[svc])
			}
		}
	}
}

// deployForTest is the child process of TestSIGKILLedDeployerFreesTheLock.
func deployForTest(configPath, version string) int {
	cfg, err := config.Load(configPath)
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 2
	}
	rt, err := docker.New(cfg.Rollout.DockerHost)
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 2
	}
	var mu sync.Mutex
	enc := json.NewEncoder(os.Stdout)
	d := deployer.New(cfg, deployer.Options{
		Runtime: func(config.Host) (deployer.Runtime, error) { return rt, nil },
		Events: func(e deployer.Event) {
			mu.Lock()
			defer mu.Unlock()
			enc.Encode(e)
		},
	})
	if _, err := d.Deploy(context.Background(), version); err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	return 0
}

// Issue 5, test 4: SIGKILL the deployer while it holds a host: the lock is free at once, the
// watchdog resumes its ticks, and rerunning the deploy completes with every host on the version.
func TestSIGKILLedDeployerFreesTheLockAndARerunCompletes(t *testing.T) {
	if testing.Short() {
		t.Skip("a whole docker deploy: skipped with -short")
	}
	f := newDockerFleet(t, 2)
	path := f.config("fleet.yaml", false)
	cfg := f.load(path)
	f.startLB(path)
	if _, err := f.deploy(cfg, "v1", nil); err != nil {
		t.Fatalf("first deploy: %v", err)
	}
	self, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	child := exec.Command(self, "deploy-for-watchdog-test", path, "v2")
	out, err := child.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	var stderr syncbuffer.Buffer
	child.Stderr = &stderr
	if err := child.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { child.Process.Kill(); child.Wait() })

	// Wait until the child drains the first host, i.e. holds its lock mid-step.
	h0 := cfg.Hosts[0]
	dec := json.NewDecoder(out)
	for {
		var e deployer.Event
		if err := dec.Decode(&e); err != nil {
			t.Fatalf("the deployer ended before draining %s: %v\n%s", h0.Name, err, stderr.String())
		}
		if e.Host == h0.Name && e.Step == deployer.StepDrain {
			break
		}
	}
	w, err := watchdog.New(cfg, h0, watchdog.Options{Runtime: f.rt})
	if err != nil {
		t.Fatal(err)
	}
	if rep, err := w.Tick(context.Background()); err != nil || !rep.Skipped || !strings.Contains(rep.HeldBy, "pid") {
		t.Fatalf("tick while the deployer holds %s: %+v, %v; want skipped, naming the holder", h0.Name, rep, err)
	}

	child.Process.Kill() // SIGKILL
	child.Wait()
	if rep, err := w.Tick(context.Background()); err != nil || rep.Skipped {
		t.Fatalf("tick right after the deployer died: %+v, %v; want the lock free at once and the tick run", rep, err)
	}

	rep, err := f.deploy(cfg, "v2", nil)
	if err != nil {
		t.Fatalf("rerun of the deploy: %v", err)
	}
	for h, v := range rep.Versions() {
		if v != "v2" {
			t.Errorf("host %s on %q after the rerun, want v2", h, v)
		}
	}
	for h, svcs := range f.running() {
		if svcs["web"] != "v2" {
			t.Errorf("host %s runs web %q, want exactly one v2 container", h, svcs["web"])
		}
	}
	if rep, err := w.Tick(context.Background()); err != nil || rep.Skipped || rep.Healed() != 0 || !rep.Services[0].Healthy {
		t.Fatalf("tick after the rerun: %+v, %v; want healthy, nothing to heal", rep, err)
	}
}
