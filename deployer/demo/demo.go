// Package demo owns `zero502 demo`: the whole loop on one machine, driven for you. From the
// embedded examples/local.yaml (rewritten onto free ports and a temp dir) it starts the in-house
// LB as a child process, deploys v1 onto three empty local hosts through the deployer (process
// runtime, or docker), puts a steady load through the LB with package measure, rolls v1 → v2, and reports
// what users felt (requests by class), each host's handshake timeline and deploy time against
// its floor, and which version every host runs. Naive runs the same rollout without the drain
// handshake (SIGKILL at once), to show the failures the handshake removes. With the docker
// runtime the hosts run containers of the zero502 image (built through the Engine API when
// missing) instead of processes, and every container the run started is removed at its end.
// runBadVersion rolls a bad v2 (500 to every request, health 200) instead: the canary takes its
// share, the analysis fails it, the fleet rolls back, and the failures are held to the canary's
// bound. See docs/ARCHITECTURE.md.
package demo

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"strings"
	"time"

	"github.com/zero502/zero502/deployer"
	"github.com/zero502/zero502/deployer/measure"
	"github.com/zero502/zero502/deployer/report"
	"github.com/zero502/zero502/infra/config"
	"github.com/zero502/zero502/infra/runtime/docker"
)

// Options configure one demo run.
type Options struct {
	// Self is the zero502 binary that runs the LB and the apps (os.Executable()).
	Self string
	// Naive deploys without the drain handshake: SIGKILL at once, no balancer watch.
	Naive bool
	// Rate is the load in requests per second; default 400.
	Rate int
	// Before and After are how long the load runs before the v2 rollout starts and after it
	// ends; defaults 1s and 1.5s.
	Before, After time.Duration
	// Progress receives live progress lines; nil: none.
	Progress io.Writer
	// Keep leaves the temp dir (config, host state dirs, logs) in place and names it.
	Keep bool
	// Runtime is RuntimeProcess (default) or RuntimeDocker: the same demo with containers.
	Runtime string
	// Image is the image of a docker run; default docker.DefaultTag, built when missing.
	Image string
	// DockerHost is the Docker Engine of a docker run; empty: DOCKER_HOST, then the local socket.
	DockerHost string
	// Service is what the hosts run: ServiceApp (default: zero502 app, drained by the handshake,
	// examples/local.yaml) or ServicePython (python3 -m http.server, which knows nothing of it:
	// drained at the balancer, start-first, examples/any-service.yaml; process runtime only).
	Service string
	// bad, set by runBadVersion, makes v2 a bad version (zero502 app --fail-every 1) and
	// collects what its deploy said: a failed deploy is then the run's story, not its error.
	bad *badDeploy
}

// Services the demo can deploy.
const (
	ServiceApp    = "app"
	ServicePython = "python"
)

// pythonRate is the demo's load with ServicePython unless told otherwise: python3 -m
// http.server (threads, a listen backlog of 5, a fork per CGI request) is a modest server.
const pythonRate = 30

// Versions the demo rolls between.
const (
	From = "v1"
	To   = "v2"
)

// Result is one demo run.
type Result struct {
	Naive bool `json:"naive"`
	// Runtime is what the hosts ran on: process or docker.
	Runtime string `json:"runtime"`
	// Took is the whole run, from start to everything stopped.
	Took time.Duration `json:"took_ns"`
	// Load is what the load saw; its series starts when the load started.
	Load *measure.Result `json:"load"`
	// Deploy is the v1 → v2 rollout's report.
	Deploy *report.Report `json:"deploy"`
	// DeployFrom and DeployTo bound the rollout, as offsets from the load's start.
	DeployFrom time.Duration `json:"deploy_from_ns"`
	DeployTo   time.Duration `json:"deploy_to_ns"`
	// Marks are each host's handshake marks as offsets from the load's start.
	Marks []HostMarks `json:"marks"`
	// Versions says which host runs what at the end.
	Versions map[string]string `json:"versions"`
	// Dir is the temp dir when it was kept (Keep, a failed run, or failed requests in a run that
	// is not naive), else "".
	Dir string `json:"dir,omitempty"`
	// Error is what stopped the run early, "" when it ran through.
	Error string `json:"error,omitempty"`
}

// HostMarks are one host's handshake marks (offsets from the load's start) and its deploy
// duration against its floor: the deployer's, which the HTML report draws.
type HostMarks = report.HostMarks

// Mark names, in timeline order.
const (
	MarkDrain   = report.MarkDrain
	MarkLeft    = report.MarkLeft
	MarkStopped = report.MarkStopped
	MarkStarted = report.MarkStarted
	MarkHealthy = report.MarkHealthy
	MarkBack    = report.MarkBack
)

// orderTime is how long each POST /orders of the load takes on the app: real requests take
// time, and a deploy that stops a process without the handshake cuts the ones in flight.
const orderTime = 150 * time.Millisecond

// ratioGoal is the deploy time per host the demo aims at, as a multiple of the floor.
const ratioGoal = 1.15

// Failed reports whether any request failed.
func (r *Result) Failed() bool { return r.Load == nil || r.Load.Failed() }

// OnTo reports whether every host runs v.
func (r *Result) OnTo(v string) bool {
	if len(r.Versions) == 0 {
		return false
	}
	for _, got := range r.Versions {
		if got != v {
			return false
		}
	}
	return true
}

// Clean reports whether the run is what the handshake promises: it ran through, no request
// failed, every host runs v2.
func (r *Result) Clean() bool { return r.Error == "" && !r.Failed() && r.OnTo(To) }

// Run runs the demo once. A Ctrl-C (ctx done) stops it early; everything it started is stopped
// either way. The error is non-nil only when the demo could not run (the result says what it saw
// so far); failed requests are in the result, not the error.
func Run(ctx context.Context, opts Options) (*Result, error) {
	if opts.Rate == 0 {
		opts.Rate = 400
	}
	if err := fillCommon(&opts.Self, &opts.Progress, &opts.Before, &opts.After); err != nil {
		return nil, err
	}
	if opts.Runtime == "" {
		opts.Runtime = RuntimeProcess
	}
	if opts.Image == "" {
		opts.Image = docker.DefaultTag
	}
	if opts.Runtime != RuntimeProcess && opts.Runtime != RuntimeDocker {
		return nil, fmt.Errorf("demo: runtime %q: must be %s or %s", opts.Runtime, RuntimeProcess, RuntimeDocker)
	}
	if opts.Service == "" {
		opts.Service = ServiceApp
	}
	if opts.Service != ServiceApp && opts.Service != ServicePython {
		return nil, fmt.Errorf("demo: service %q: must be %s or %s", opts.Service, ServiceApp, ServicePython)
	}
	if opts.Service == ServicePython && opts.Runtime != RuntimeProcess {
		return nil, fmt.Errorf("demo: service %s runs on the %s runtime only (the demo's image holds zero502 alone)", ServicePython, RuntimeProcess)
	}
	p := &progress{w: opts.Progress, start: time.Now()}
	var eng *docker.Runtime
	if opts.Runtime == RuntimeDocker {
		var err error
		if eng, err = engine(ctx, opts.DockerHost, opts.Image, opts.Self, p); err != nil {
			return nil, err
		}
		defer eng.Close()
	}
	f, err := newFleet(eng, opts.Image, opts.Service)
	if err != nil {
		return nil, err
	}
	res := &Result{Naive: opts.Naive, Runtime: opts.Runtime}
	runErr := f.run(ctx, opts, p, res)
	stopErr := f.stop(opts.Self)
	res.Took = time.Since(p.start)
	// A rolling deploy that failed requests keeps its dir too: the LB's log says which backend
	// left when (a naive run fails them on purpose).
	keep := opts.Keep || !opts.Naive && res.Load != nil && res.Load.Failures > 0
	res.Error, res.Dir = settle(p, f.dir, "config, host state dirs and logs", keep, runErr, stopErr)
	return res, runErr
}

// settle ends a run once it returned (runErr) and everything it started was stopped (stopErr).
// It gives the result's Error, "" when both went through, and its Dir: the run's temp dir,
// kept and named on the progress when asked (keep) or when anything failed, else removed and
// "". holds says what the dir holds, for that progress line.
func settle(p *progress, dir, holds string, keep bool, runErr, stopErr error) (errText, kept string) {
	if err := errors.Join(runErr, stopErr); err != nil {
		errText = err.Error()
	}
	if !keep && errText == "" {
		os.RemoveAll(dir)
		return "", ""
	}
	p.line("kept %s (%s)", dir, holds)
	return errText, dir
}

func (f *fleet) run(ctx context.Context, opts Options, p *progress, res *Result) error {
	cfg := f.cfg
	p.line("LB on %s (admin %s); hosts %v (%s runtime); drain %s, health every %s, in after %d, out after %d",
		cfg.Balancer.Listen, cfg.Balancer.Admin, cfg.Targets(), cfg.Rollout.Runtime, cfg.Drain.Window, cfg.Balancer.Interval,
		cfg.Balancer.HealthyThreshold, cfg.Balancer.UnhealthyThreshold)
	if err := f.startLB(ctx, opts.Self); err != nil {
		return err
	}
	newDeployer := func(cfg *config.Config, naive bool, events func(deployer.Event)) *deployer.Deployer {
		return deployer.New(cfg, deployer.Options{Self: opts.Self, Naive: naive, Runtime: f.runtime, Events: events})
	}
	p.line("deploy %s onto %d empty hosts", From, len(cfg.Hosts))
	if rep, err := newDeployer(cfg, false, p.event(nil)).Deploy(ctx, From); err != nil {
		return fmt.Errorf("demo: first deploy of %s: %w\n%s", From, err, text(rep))
	}
	if err := f.waitInRotation(ctx); err != nil {
		return err
	}
	lo := measure.Options{
		Target:       "http://" + cfg.Balancer.Listen,
		Rate:         opts.Rate,
		PostShare:    0.25,
		PostPath:     fmt.Sprintf("/orders?ms=%d", orderTime.Milliseconds()),
		HealthShare:  0.05,
		HealthPath:   cfg.Balancer.HealthPath,
		NewConnShare: 0.2,
		Timeout:      2 * time.Second,
		Bucket:       250 * time.Millisecond,
	}
	what := fmt.Sprintf("GET /, POST /orders taking %s, some GET %s", orderTime, cfg.Balancer.HealthPath)
	if opts.Service == ServicePython {
		// http.server serves files and CGI: GET the version file, POST the order script.
		// One request in ten POSTs: http.server forks a process for each CGI request, and 7.5
		// forks a second (a quarter of 30 req/s) starve it on 2 busy cores (p50 1.27s measured).
		lo.GetPath, lo.PostPath, lo.HealthShare, lo.PostShare = cfg.Balancer.HealthPath, "/cgi-bin/orders", 0, 0.1
		// A user waits as long as the LB would for a slow http.server (a SYN past its backlog,
		// then a CGI fork): a request still answered in time is slow, not lost.
		lo.Timeout = cfg.Balancer.ConnectTimeout + cfg.Balancer.HeaderTimeout + time.Second
		what = "GET " + lo.GetPath + ", POST " + lo.PostPath + " (a CGI script)"
	}
	load, err := measure.New(lo)
	if err != nil {
		return err
	}
	p.line("all %d hosts in rotation; load %d req/s through the LB (%s; 20%% new connections)", len(cfg.Hosts), opts.Rate, what)
	finish, err := runLoad(ctx, load, opts.Before, &res.Load)
	defer finish()
	if err != nil {
		return err
	}
	toCfg, events := cfg, p.event(load)
	if opts.bad != nil {
		if toCfg, err = badConfig(f.configPath); err != nil {
			return err
		}
		opts.bad.mu.Lock()
		opts.bad.cfg = toCfg
		opts.bad.mu.Unlock()
		events = opts.bad.watch(events)
		p.line("roll %s → %s (%s; %s is BAD: %s)", From, To, modeLine(opts.Naive), To, badVersionFlaw)
	} else {
		p.line("roll %s → %s (%s)", From, To, modeLine(opts.Naive))
	}
	started := time.Now()
	rep, deployErr := newDeployer(toCfg, opts.Naive, events).Deploy(ctx, To)
	ended := time.Now()
	switch {
	case deployErr == nil:
		p.line("rollout done in %s; load keeps going %s", ended.Sub(started).Round(time.Millisecond), opts.After)
		_ = sleep(ctx, opts.After)
	case opts.bad != nil && ctx.Err() == nil:
		p.line("rollout stopped after %s; load keeps going %s", ended.Sub(started).Round(time.Millisecond), opts.After)
		_ = sleep(ctx, opts.After)
	}
	finish()
	origin := load.Started()
	res.Deploy, res.DeployFrom, res.DeployTo = rep, started.Sub(origin), ended.Sub(origin)
	res.Marks = rep.Marks(origin)
	if rep != nil {
		res.Versions = rep.Versions()
	}
	p.line("load stopped: %d requests, %d failed", res.Load.Sent, res.Load.Failures)
	if deployErr != nil && opts.bad != nil {
		opts.bad.mu.Lock()
		opts.bad.err = deployErr // the bad version's story: RunBadVersion judges it
		opts.bad.mu.Unlock()
		return ctx.Err()
	}
	if deployErr != nil {
		return fmt.Errorf("demo: rollout %s → %s: %w", From, To, deployErr)
	}
	return ctx.Err()
}

// runLoad runs load and lets it run for before: the steady traffic a rollout starts under.
// finish stops it and puts what it saw in *seen; calling it again puts the same result there.
// The error is ctx's when ctx ended within before; the load is finished then.
func runLoad(ctx context.Context, load *measure.Load, before time.Duration, seen **measure.Result) (finish func(), err error) {
	loadCtx, cancel := context.WithCancel(ctx)
	loaded := make(chan *measure.Result, 1)
	go func() { loaded <- load.Run(loadCtx) }()
	var res *measure.Result
	finish = func() {
		cancel()
		if res == nil {
			res = <-loaded
		}
		*seen = res
	}
	if err := sleep(ctx, before); err != nil {
		finish()
		return finish, err
	}
	return finish, nil
}

// fillCommon sets the defaults both demos share: the zero502 binary (this one), no progress
// output, 1s of load before the first rollout and 1.5s after the last.
func fillCommon(self *string, progress *io.Writer, before, after *time.Duration) error {
	if *before == 0 {
		*before = time.Second
	}
	if *after == 0 {
		*after = 1500 * time.Millisecond
	}
	if *self == "" {
		exe, err := os.Executable()
		if err != nil {
			return fmt.Errorf("demo: find the zero502 binary: %w", err)
		}
		*self = exe
	}
	if *progress == nil {
		*progress = io.Discard
	}
	return nil
}

func sleep(ctx context.Context, d time.Duration) error {
	select {
	case <-ctx.Done():
		return ctx.Err()
	case <-time.After(d):
		return nil
	}
}

func text(rep *report.Report) string {
	if rep == nil {
		return ""
	}
	var b strings.Builder
	_ = rep.WriteText(&b)
	return b.String()
}

// modeLine names how a demo rolls its hosts, for its progress lines.
func modeLine(naive bool) string {
	if naive {
		return "NAIVE: no drain, SIGKILL at once"
	}
	return "with the drain handshake"
}
