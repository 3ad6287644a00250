package demo

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/zero502/zero502/deployer"
	"github.com/zero502/zero502/deployer/balancer"
	"github.com/zero502/zero502/deployer/measure"
	"github.com/zero502/zero502/deployer/report"
	"github.com/zero502/zero502/examples"
	"github.com/zero502/zero502/infra/config"
	"github.com/zero502/zero502/infra/ports"
	"github.com/zero502/zero502/infra/runtime"
	"github.com/zero502/zero502/infra/runtime/process"
)

// The traffic-layer demo (zero502 demo --traffic-layer) runs the whole chain on this machine's
// loopback: a client that resolves the edges' name through a local DNS server (zero502 dns
// serve, a zone file), two edges (zero502 edge forward, PROXY v2 on), two LB instances
// (zero502 lb, PROXY accepted from the edges) and three app hosts (zero502 app). Under steady
// load through the whole chain (GET, POST and long-lived WebSocket sessions), it rolls the
// apps, then the LB instances, then the edges, each tier an ordinary deploy through the tier in
// front of it, and finally upgrades one LB instance in place by handing its sockets to a new
// process. Every number of every tier keeps the invariants.

// trafficOptions configure one traffic-layer demo run.
type trafficOptions struct {
	// Self is the zero502 binary every tier runs (os.Executable()).
	Self string
	// Naive rolls every tier without the drain handshake: SIGKILL at once, no balancer watch.
	Naive bool
	// Rate is the load in requests per second; default 200.
	Rate int
	// Sessions is how many long-lived WebSocket sessions the load holds; default 4.
	Sessions int
	// Before and After are how long the load runs before the first rollout and after the last;
	// defaults 1s and 1.5s.
	Before, After time.Duration
	// Progress receives live progress lines; nil: none.
	Progress io.Writer
	// Keep leaves the temp dir (configs, zone, state dirs, logs) in place and names it.
	Keep bool
}

// Stage is one step of the run: a tier's rollout, or the in-place upgrade.
type Stage struct {
	// Tier is apps, lbs, edges or upgrade.
	Tier string `json:"tier"`
	// What says what the stage did, for people.
	What string `json:"what"`
	// From and To bound it, as offsets from the load's start.
	From time.Duration `json:"from_ns"`
	To   time.Duration `json:"to_ns"`
	// Deploy is the tier's deploy report (nil for the upgrade).
	Deploy *report.Report `json:"deploy,omitempty"`
	// Marks are each host's handshake marks, as offsets from the load's start.
	Marks []HostMarks `json:"marks,omitempty"`
}

// trafficResult is one traffic-layer demo run.
type trafficResult struct {
	Naive bool          `json:"naive"`
	Took  time.Duration `json:"took_ns"`
	// Load is what the client saw through the whole chain.
	Load   *measure.Result `json:"load"`
	Stages []Stage         `json:"stages"`
	// Versions says which version every host of every tier runs at the end.
	Versions map[string]string `json:"versions"`
	Dir      string            `json:"dir,omitempty"`
	Error    string            `json:"error,omitempty"`
}

// Clean reports whether the run kept the promise: it ran through, no request failed and no
// session was lost, every host of every tier runs v2.
func (r *trafficResult) Clean() bool {
	if r.Error != "" || r.Load == nil || r.Load.Failed() || len(r.Versions) == 0 {
		return false
	}
	for _, v := range r.Versions {
		if v != To {
			return false
		}
	}
	return true
}

// edgeName is the name the demo's client resolves: the edges' A record set.
const edgeName = "edge.zero502.test."

// tier is one layer of the chain: its config (written to a file, as a user would keep it), and
// one process runtime per host for the whole run.
type tier struct {
	name     string
	path     string
	cfg      *config.Config
	runtimes map[string]deployer.Runtime
}

// newTier writes cfg into dir as FILE.yaml (the name the tiers' commands use), loads it back
// (the loader validates it) and makes the hosts' runtimes.
func newTier(name, file, dir string, cfg *config.Config) (*tier, error) {
	data, err := config.Encode(cfg)
	if err != nil {
		return nil, fmt.Errorf("demo: %s config: %w", name, err)
	}
	t := &tier{name: name, path: filepath.Join(dir, file+".yaml"), runtimes: map[string]deployer.Runtime{}}
	if err := os.WriteFile(t.path, data, 0o644); err != nil {
		return nil, fmt.Errorf("demo: %w", err)
	}
	if t.cfg, err = config.Load(t.path); err != nil {
		return nil, fmt.Errorf("demo: %s config: %w", name, err)
	}
	for _, h := range t.cfg.Hosts {
		rt, err := process.New(t.cfg.HostStateDir(h))
		if err != nil {
			return nil, fmt.Errorf("demo: %s: %w", name, err)
		}
		rt.EarlyExitWindow = deployer.EarlyExitWindow
		t.runtimes[h.Name] = rt
	}
	return t, nil
}

func (t *tier) runtime(h config.Host) (deployer.Runtime, error) {
	rt, ok := t.runtimes[h.Name]
	if !ok {
		return nil, fmt.Errorf("demo: %s: no runtime for host %q", t.name, h.Name)
	}
	return rt, nil
}

// deploy rolls the tier to version. bal, when set, replaces the tier's balancer (the first
// deploys run before the tier in front exists: direct checks only).
func (t *tier) deploy(ctx context.Context, self, version string, naive bool, bal balancer.Balancer, events func(deployer.Event)) (*report.Report, error) {
	d := deployer.New(t.cfg, deployer.Options{Self: self, Naive: naive, Runtime: t.runtime, Balancer: bal, Events: events})
	return d.Deploy(ctx, version)
}

// stop kills every instance the tier's runtimes know of.
func (t *tier) stop(ctx context.Context) error {
	return errors.Join(killInstances(ctx, t.cfg.Hosts, t.runtimes, nil)...)
}

// chain is the demo's traffic layer: the DNS server, the three tiers, their ports.
type chain struct {
	dir                   string
	dns                   string // DNS server host:port
	zone                  string // zone file
	dnsCmd                *exec.Cmd
	dnsExited             chan struct{}
	apps, lbs, edges      *tier
	upgraded              map[string]int // host → pid of the LB that took over in place
	lbPort, lbAdminPort   int
	edgePort, edgeAdminPt int
}

// newChain lays out the three tiers' configs in a new temp dir: the apps from
// examples/local.yaml behind both LB instances, the LB instances behind both edges, the edges in
// the A record set of a zone file.
func newChain() (*chain, error) {
	dir, err := os.MkdirTemp("", "zero502-traffic-")
	if err != nil {
		return nil, fmt.Errorf("demo: temp dir: %w (is $TMPDIR writable?)", err)
	}
	c := &chain{dir: dir}
	if err := c.layout(); err != nil {
		os.RemoveAll(dir)
		return nil, err
	}
	return c, nil
}

// The shipped tiers' paths and ports, which layout moves into the run's temp dir and onto free
// ports.
const (
	shippedDir                     = "/tmp/zero502-traffic"
	shippedLBPort, shippedLBAdmin  = 18080, 18081
	shippedEdgePort, shippedEdgeAd = 18443, 18581
)

// layout loads the shipped tiers (examples/traffic-*.yaml) and moves them into the run's temp
// dir and onto free ports: the apps' three hosts, each LB instance's listener and admin API,
// each edge's listener and admin API, the DNS server.
func (c *chain) layout() error {
	free, err := ports.Free(8)
	if err != nil {
		return fmt.Errorf("demo: %w", err)
	}
	c.lbPort, c.lbAdminPort, c.edgePort, c.edgeAdminPt = free[0], free[1], free[2], free[3]
	c.dns = fmt.Sprintf("127.0.0.1:%d", free[4])
	appPorts := free[5:]
	move := strings.NewReplacer(shippedDir, c.dir,
		":"+strconv.Itoa(shippedLBPort), ":"+strconv.Itoa(c.lbPort), ":"+strconv.Itoa(shippedLBAdmin), ":"+strconv.Itoa(c.lbAdminPort),
		":"+strconv.Itoa(shippedEdgePort), ":"+strconv.Itoa(c.edgePort), ":"+strconv.Itoa(shippedEdgeAd), ":"+strconv.Itoa(c.edgeAdminPt))
	load := func(name string, data []byte) (*config.Config, error) {
		cfg, err := config.LoadBytes(data, "examples/"+name)
		if err != nil {
			return nil, err
		}
		relocate(cfg, move)
		return cfg, nil
	}

	apps, err := load("traffic-apps.yaml", examples.TrafficApps)
	if err != nil {
		return err
	}
	base := min(appPorts[0], appPorts[1], appPorts[2])
	apps.Services[0].Port = base
	for i := range apps.Hosts {
		apps.Hosts[i].PortOffset = appPorts[i] - base
	}
	if c.apps, err = newTier("apps", "traffic-apps", c.dir, apps); err != nil {
		return err
	}
	lbs, err := load("traffic-lbs.yaml", examples.TrafficLBs)
	if err != nil {
		return err
	}
	lbs.Services[0].Port = c.lbPort
	if c.lbs, err = newTier("lbs", "traffic-lbs", c.dir, lbs); err != nil {
		return err
	}
	edges, err := load("traffic-edges.yaml", examples.TrafficEdges)
	if err != nil {
		return err
	}
	edges.Services[0].Port = c.edgePort
	if c.edges, err = newTier("edges", "traffic-edges", c.dir, edges); err != nil {
		return err
	}
	c.zone = edges.Balancer.Record.ZoneFile
	return nil
}

// relocate rewrites every path and address of cfg with move: the state dirs, the zone file, the
// balancer's addresses, the edges' upstreams and the services' commands.
func relocate(cfg *config.Config, move *strings.Replacer) {
	b := &cfg.Balancer
	b.Listen, b.Admin, b.Record.ZoneFile = move.Replace(b.Listen), move.Replace(b.Admin), move.Replace(b.Record.ZoneFile)
	for i := range b.Admins {
		b.Admins[i] = move.Replace(b.Admins[i])
	}
	for i := range cfg.Edge.Origins {
		cfg.Edge.Origins[i] = move.Replace(cfg.Edge.Origins[i])
	}
	cfg.Watchdog.StateDir = move.Replace(cfg.Watchdog.StateDir)
	for i := range cfg.Services {
		for j, a := range cfg.Services[i].Command {
			cfg.Services[i].Command[j] = move.Replace(a)
		}
	}
	for i := range cfg.Hosts {
		cfg.Hosts[i].StateDir = move.Replace(cfg.Hosts[i].StateDir)
	}
}

// startDNS writes the zone with both edges and starts `self dns serve` on it.
func (c *chain) startDNS(ctx context.Context, self string) error {
	args := []string{"dns", "add", "--zone", c.zone, "--name", edgeName, "--ttl", c.edges.cfg.Edge.DNSTTL.String()}
	for _, h := range c.edges.cfg.Hosts { // each edge has a loopback address of its own
		a := h.Address
		if out, err := exec.CommandContext(ctx, self, append(args, a)...).CombinedOutput(); err != nil {
			return fmt.Errorf("demo: put %s in the zone: %w: %s", a, err, out)
		}
	}
	logf, err := os.Create(filepath.Join(c.dir, "dns.log"))
	if err != nil {
		return err
	}
	cmd := exec.Command(self, "dns", "serve", "--zone", c.zone, "--listen", c.dns)
	cmd.Stdout, cmd.Stderr = logf, logf
	cmd.SysProcAttr = ownProcessGroup()
	if err := cmd.Start(); err != nil {
		logf.Close()
		return fmt.Errorf("demo: start the DNS server: %w", err)
	}
	c.dnsCmd, c.dnsExited = cmd, make(chan struct{})
	go func() { _ = cmd.Wait(); logf.Close(); close(c.dnsExited) }()
	return nil
}

// stop ends everything the chain started, the front first.
func (c *chain) stop() error {
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	var errs []error
	for _, t := range []*tier{c.edges, c.lbs, c.apps} {
		if t != nil {
			errs = append(errs, t.stop(ctx))
		}
	}
	// An LB upgraded in place runs as a process the runtime did not start: find it by its pid file.
	for _, h := range c.lbs.cfg.Hosts {
		if pid, err := readPID(filepath.Join(c.dir, "lbs", h.Name, "lb.pid")); err == nil {
			_ = killProcess(pid)
		}
	}
	if c.dnsCmd != nil && c.dnsCmd.Process != nil {
		_ = c.dnsCmd.Process.Signal(syscall.SIGTERM)
		select {
		case <-c.dnsExited:
		case <-time.After(5 * time.Second):
			_ = c.dnsCmd.Process.Kill()
			<-c.dnsExited
		}
	}
	return errors.Join(errs...)
}

func readPID(path string) (int, error) {
	raw, err := os.ReadFile(path)
	if err != nil {
		return 0, err
	}
	return strconv.Atoi(strings.TrimSpace(string(raw)))
}

// runTraffic runs the traffic-layer demo once. Like Run, failed requests are in the result; the
// error is non-nil only when the demo could not run.
func runTraffic(ctx context.Context, opts trafficOptions) (*trafficResult, error) {
	if opts.Rate == 0 {
		opts.Rate = 200
	}
	if opts.Sessions == 0 {
		opts.Sessions = 4
	}
	if err := fillCommon(&opts.Self, &opts.Progress, &opts.Before, &opts.After); err != nil {
		return nil, err
	}
	p := &progress{w: opts.Progress, start: time.Now()}
	c, err := newChain()
	if err != nil {
		return nil, err
	}
	res := &trafficResult{Naive: opts.Naive, Versions: map[string]string{}}
	runErr := c.run(ctx, opts, p, res)
	stopErr := c.stop()
	res.Took = time.Since(p.start)
	res.Error, res.Dir = settle(p, c.dir, "configs, zone, state dirs and logs", opts.Keep, runErr, stopErr)
	return res, runErr
}

func (c *chain) run(ctx context.Context, opts trafficOptions, p *progress, res *trafficResult) error {
	self := opts.Self
	p.line("DNS %s serves %s from %s; edges %v; LB instances %v; apps %v",
		c.dns, edgeName, c.zone, c.edges.cfg.Targets(), c.lbs.cfg.Targets(), c.apps.cfg.Targets())
	if err := c.startDNS(ctx, self); err != nil {
		return err
	}
	// The first deploys build the chain from the back: the apps and the LB instances have
	// nothing in front of them yet, so they are checked directly; the edges go into the A set,
	// which holds them already.
	for _, t := range []*tier{c.apps, c.lbs, c.edges} {
		var bal balancer.Balancer = balancer.None{}
		how := "checked directly"
		if t == c.edges {
			bal, how = nil, "through the A set"
		}
		p.line("deploy %s onto the %s tier (%d hosts), %s", From, t.name, len(t.cfg.Hosts), how)
		if rep, err := t.deploy(ctx, self, From, false, bal, nil); err != nil {
			return fmt.Errorf("demo: first deploy of the %s tier: %w\n%s", t.name, err, text(rep))
		}
	}
	for _, t := range []*tier{c.apps, c.lbs} {
		if err := waitTierInRotation(ctx, t); err != nil {
			return err
		}
	}
	load, err := measure.New(measure.Options{
		Target:          fmt.Sprintf("http://%s:%d", strings.TrimSuffix(edgeName, "."), c.edgePort),
		DNS:             c.dns,
		Rate:            opts.Rate,
		PostShare:       0.25,
		PostPath:        fmt.Sprintf("/orders?ms=%d", orderTime.Milliseconds()),
		NewConnShare:    0.2,
		IdleConnTimeout: time.Second,
		Sessions:        opts.Sessions,
		Timeout:         3 * time.Second,
		Bucket:          250 * time.Millisecond,
	})
	if err != nil {
		return err
	}
	p.line("load %d req/s and %d WebSocket sessions through DNS → edges → LB instances → apps", opts.Rate, opts.Sessions)
	finish, err := runLoad(ctx, load, opts.Before, &res.Load)
	defer finish()
	if err != nil {
		return err
	}
	mode := modeLine(opts.Naive)
	var runErr error
	for _, t := range []*tier{c.apps, c.lbs, c.edges} {
		p.line("roll the %s tier %s → %s (%s)", t.name, From, To, mode)
		started := time.Now()
		rep, err := t.deploy(ctx, self, To, opts.Naive, nil, p.event(load))
		ended := time.Now()
		origin := load.Started()
		res.Stages = append(res.Stages, Stage{Tier: t.name, What: fmt.Sprintf("%s → %s through %s", From, To, balancerWords(t.cfg)),
			From: started.Sub(origin), To: ended.Sub(origin), Deploy: rep, Marks: rep.Marks(origin)})
		if err != nil {
			runErr = fmt.Errorf("demo: rollout of the %s tier: %w", t.name, err)
			break
		}
	}
	if runErr == nil && !opts.Naive {
		runErr = c.upgradeInPlace(ctx, self, p, load, res)
	}
	if runErr == nil {
		_ = sleep(ctx, opts.After)
	}
	finish()
	for _, t := range []*tier{c.apps, c.lbs, c.edges} {
		for h, v := range c.versions(ctx, t) {
			res.Versions[t.name+"/"+h] = v
		}
	}
	p.line("load stopped: %d requests, %d failed", res.Load.Sent, res.Load.Failures)
	if runErr != nil {
		return runErr
	}
	return ctx.Err()
}

// upgradeInPlace hands the first LB instance's sockets to a new process (zero502 lb upgrade):
// the single-box upgrade, with no gap.
func (c *chain) upgradeInPlace(ctx context.Context, self string, p *progress, load *measure.Load, res *trafficResult) error {
	h := c.lbs.cfg.Hosts[0]
	pidFile := filepath.Join(c.dir, "lbs", h.Name, "lb.pid")
	before, _ := readPID(pidFile)
	p.line("upgrade %s in place: zero502 lb upgrade (its sockets go to a new process)", h.Name)
	started := time.Now()
	out, err := exec.CommandContext(ctx, self, "lb", "upgrade", "--pid-file", pidFile).CombinedOutput()
	ended := time.Now()
	after, _ := readPID(pidFile)
	if c.upgraded == nil {
		c.upgraded = map[string]int{}
	}
	c.upgraded[h.Name] = after
	origin := load.Started()
	res.Stages = append(res.Stages, Stage{Tier: "upgrade", From: started.Sub(origin), To: ended.Sub(origin),
		What: fmt.Sprintf("%s upgraded in place: pid %d → %d, its listening sockets handed over", h.Name, before, after)})
	if err != nil {
		return fmt.Errorf("demo: in-place upgrade of %s: %w: %s", h.Name, err, strings.TrimSpace(string(out)))
	}
	p.line("%s", strings.TrimSpace(string(out)))
	return nil
}

func balancerWords(cfg *config.Config) string {
	switch cfg.Balancer.Kind {
	case config.BalancerEdges:
		return "both edges"
	case config.BalancerDNS:
		return "the A record set"
	}
	return "both LB instances"
}

// versions reads which version each host of t runs. An LB upgraded in place runs as a process
// the runtime did not start (its pid file names it): it runs the version of the instance it
// took over from.
func (c *chain) versions(ctx context.Context, t *tier) map[string]string {
	out := map[string]string{}
	for _, h := range t.cfg.Hosts {
		insts, err := t.runtimes[h.Name].List(ctx, runtime.Filter{Host: h.Name})
		v, last := "nothing", ""
		if err == nil {
			for _, in := range insts {
				last = in.Version
				if in.Running() {
					v = in.Version
				}
			}
		}
		if pid, ok := c.upgraded[h.Name]; ok && v == "nothing" && processAlive(pid) {
			v = last
		}
		out[h.Name] = v
	}
	return out
}

// waitTierInRotation polls the tier's balancer until every target is in rotation.
func waitTierInRotation(ctx context.Context, t *tier) error {
	bal, err := balancer.For(t.cfg)
	if err != nil {
		return err
	}
	var last error
	err = poll(ctx, 15*time.Second, func() (bool, error) {
		for _, target := range t.cfg.Targets() {
			st, err := bal.TargetState(ctx, target)
			if err != nil || !st.InRotation {
				last = fmt.Errorf("%s: %+v %v", target, st, err)
				return false, nil
			}
		}
		return true, nil
	})
	if err != nil {
		return fmt.Errorf("demo: waiting for the %s tier in rotation at %s: %w (last: %v)", t.name, bal.Name(), err, last)
	}
	return nil
}
