// Package deployer owns the rolling deploy: preflight (invariants, the live balancer's settings
// against the config, every target healthy, a batch never drains the last healthy target), then
// per host, one batch at a time: the host lock, the published spec, the drain handshake watched
// through the balancer's own view, the new instance healthy directly and at the balancer, every
// service verified, the lock released. A host that fails is rolled back to its previous spec
// and the rollout stops, so every host ends on a known version; the Report says which, with
// each host's handshake timeline. The pipeline reads top to bottom in pipeline.go; the balancer
// it goes through is package deployer/balancer, the hosts over ssh package deployer/ssh, the
// report package deployer/report. See docs/ARCHITECTURE.md, "The drain contract", "Locks and the
// published spec" and "The data path of a deploy".
package deployer

import (
	"context"
	"errors"
	"fmt"
	"os"
	"regexp"
	"slices"
	"sort"
	"strings"
	"sync"
	"time"

	"github.com/zero502/zero502/deployer/balancer"
	"github.com/zero502/zero502/deployer/report"
	"github.com/zero502/zero502/deployer/ssh"
	"github.com/zero502/zero502/infra/alarms"
	"github.com/zero502/zero502/infra/clock"
	"github.com/zero502/zero502/infra/config"
	"github.com/zero502/zero502/infra/runtime"
	"github.com/zero502/zero502/infra/spec"
)

// Options tune a Deployer. The zero value deploys with the handshake through the balancer the
// config describes, on the runtime it names.
type Options struct {
	lookBudget time.Duration // tests: lookBudget, shorter
	// Self is the zero502 binary {self} stands for in service commands; empty: this executable.
	Self string
	// Runtime returns host h's runtime; nil: runtimeFor (rollout.runtime of the config). Deploys
	// run one after another in one process must share it: pass the same sharedRuntimes(cfg).
	Runtime func(h config.Host) (Runtime, error)
	// Balancer is the balancer to watch; nil: BalancerFor (balancer.kind of the config).
	Balancer balancer.Balancer
	// Clock times everything; nil: the wall clock.
	Clock clock.Clock
	// Events receives every step as it happens (one call at a time); nil: none.
	Events func(Event)
	// AcceptDrift lets a deploy run through a balancer whose live settings differ from the
	// config (still refused when the live numbers violate an invariant).
	AcceptDrift bool
	// LockTimeout is how long to wait for the fleet lock or a host lock held by someone else;
	// 0: 10 minutes.
	LockTimeout time.Duration
	// NoLockWait refuses at once, naming the holder, when another deploy holds the fleet lock
	// (--lock-timeout 0).
	NoLockWait bool
	// Back makes a host's step a step back (zero502 host step --back, how a fleet's rollback
	// reaches a host over ssh): to the spec the host keeps from before its last deploy
	// (spec.previous.json), its config as it ran then, when that spec is of the version asked
	// for; else to that version as this config renders it, and an event says so.
	Back bool
	// Naive stops old instances at once with SIGKILL, without drain or balancer watch, and
	// waits for new ones directly only: the "before" picture the demo compares against.
	Naive bool
	// RemoteBinary is the zero502 binary on hosts with ssh: (default: zero502 on the remote PATH);
	// SSH is the local ssh client (default: ssh on PATH). Fleet over SSH: remote.go.
	RemoteBinary string
	SSH          string
	// Parallel bounds how many hosts preflight, re-verify, the read-back and status look at
	// at once (--parallel); 0: DefaultParallel. Batches still roll one after another.
	Parallel int
	// Alarms reads rollout.alarms; nil: CloudWatch in balancer.region (alarms.go).
	Alarms AlarmWatcher
	// PauseAfterCanary waits after the canary's verdict passed, the fleet serving both
	// versions, for zero502 deploy promote or abort (pause.go).
	PauseAfterCanary bool
}

// DefaultLockTimeout is how long a deploy waits for a held host lock unless told otherwise.
const DefaultLockTimeout = 10 * time.Minute

// Deployer rolls one config's fleet to a version. Use one Deployer per Deploy call.
type Deployer struct {
	cfg   *config.Config
	opts  Options
	clock clock.Clock
	bal   balancer.Balancer
	view  bool // the balancer can see targets (not kind none)
	self  string
	// checkTimeout bounds a direct GET whose rule has no timeout (a spec published before
	// services[].health.timeout was carried) and a services[].verify version path.
	checkTimeout time.Duration

	runtimes map[string]Runtime
	fleet    fleetHold // the fleet deploy lock, held from preflight to the read-back
	backsMu  sync.Mutex
	backs    map[string]*spec.Spec // each deployed host's last good spec, for a later rollback
	// previous is, per host found already on the version at preflight, the version it keeps
	// the spec of from before (hostView.previous): a failed verdict sends it back there too.
	previous map[string]string
	mux      *ssh.Mux // the deploy's reused ssh connections (nil: one per session): package deployer/ssh
	started  time.Time
	emitMu   sync.Mutex
	// action names what holds the locks when it is not a deploy (zero502 stop).
	action string
	// held are the targets held out at the balancer until a new instance's smoke passed.
	held heldOut
	// weighted are the targets the canary's weight was set on (canary.go), put back as it ends.
	weighted []string
	// alarms watches rollout.alarms (nil when there are none).
	alarms AlarmWatcher
	// firedDuringSteps are the alarms seen in ALARM while the current batch's hosts took their
	// steps (alarmsDuringSteps), for its verdict (watchAlarms).
	firedDuringSteps []alarms.Alarm
	// turns are the steps over ssh preflight opened, waiting for their batch (remote_turn.go).
	turns turns
	// progress is the progress clock of each host's step while it runs (progress.go).
	progress progress
	// rotated is the balancer's outcomes as each host's new target came into rotation
	// (analysis.go).
	rotated inRotation
	// remoteTargets are where the balanced service of each host over ssh answers, as its look or
	// its step's report last said (no runtime here to read it from): currentTarget.
	remoteTargets sync.Map // host name → host:port
	// pausedAtLock is what the lock host said of its pause record when it gave this deploy the
	// fleet lock over ssh (lockedSaidPause: it said; a zero502 there that predates it does not):
	// endPause asks the host again only when there is one.
	pausedAtLock    *Pause
	lockedSaidPause bool
}

// New returns a Deployer of cfg's fleet. Problems (no runtime, no balancer) surface in Deploy.
func New(cfg *config.Config, opts Options) *Deployer {
	d := &Deployer{cfg: cfg, opts: opts, clock: opts.Clock, self: opts.Self, backs: map[string]*spec.Spec{}}
	if d.clock == nil {
		d.clock = clock.Real{}
	}
	if d.opts.LockTimeout <= 0 {
		d.opts.LockTimeout = DefaultLockTimeout
	}
	d.checkTimeout = checkTimeoutOf(cfg)
	return d
}

// checkTimeoutOf is the deployer's own health checks' timeout when a rule has none: twice the
// balancer's, and at least 2s.
func checkTimeoutOf(cfg *config.Config) time.Duration {
	return max(2*cfg.Balancer.Timeout, 2*time.Second)
}

// refusedError is a deploy refused by preflight: nothing was changed on any host.
type refusedError struct {
	// Reasons each name the rule, the values and what to do.
	Reasons []string
	// Cause, when set, is the error the refusal comes from (hostlock.ErrHeld: another deploy
	// holds the fleet lock).
	Cause error
}

func (e *refusedError) Unwrap() error { return e.Cause }

func (e *refusedError) Error() string {
	return "deploy refused before anything changed: " + strings.Join(e.Reasons, "; ")
}

var versionRE = regexp.MustCompile(`^[A-Za-z0-9][A-Za-z0-9._+-]{0,127}$`)

// CheckVersion checks version, given as flag (--version, --to), against the rule every version
// follows: it names images and appears in specs and paths.
func CheckVersion(flag, version string) error {
	if !versionRE.MatchString(version) {
		return fmt.Errorf("%s %q: must be 1–128 letters, digits, . _ + - starting with a letter or digit "+
			"(it names images and appears in specs)", flag, version)
	}
	return nil
}

// setup builds the balancer and one runtime per host.
func (d *Deployer) setup() error {
	if err := d.cfg.RequireFleet(); err != nil {
		return err
	}
	if d.self == "" {
		exe, err := os.Executable()
		if err != nil {
			return fmt.Errorf("find the zero502 binary for {self}: %w", err)
		}
		d.self = exe
	}
	d.bal = d.opts.Balancer
	if d.bal == nil {
		b, err := balancer.For(d.cfg)
		if err != nil {
			return err
		}
		d.bal = b
	}
	_, none := d.bal.(balancer.None)
	d.view = !none
	d.runtimes = map[string]Runtime{}
	var errs []error
	for i, h := range d.cfg.Hosts {
		if h.SSH != "" { // reached over ssh, its runtime is there (remote.go)
			if err := checkRemote(i, h); err != nil {
				errs = append(errs, err)
			}
			continue
		}
		mk := d.opts.Runtime
		if mk == nil {
			mk = func(h config.Host) (Runtime, error) { return runtimeFor(d.cfg, h) }
		}
		rt, err := mk(h)
		if err != nil {
			errs = append(errs, fmt.Errorf("host %s: runtime: %w", h.Name, err))
			continue
		}
		d.runtimes[h.Name] = rt
	}
	w, err := d.alarmWatcher(context.Background())
	if err != nil {
		errs = append(errs, err)
	}
	d.alarms = w
	return errors.Join(errs...)
}

// readBack fills each host's Running version from its runtime: what it really runs now. It runs
// even when the deploy was interrupted, each host within lookWithin: a runtime (or a host's look)
// that stops answering neither holds the deploy, and the fleet lock with it, nor is claimed to
// run a version.
func (d *Deployer) readBack(ctx context.Context, rep *report.Report) {
	ctx = context.WithoutCancel(ctx)
	d.eachHost(hostIndexes(len(d.cfg.Hosts)), func(i int) { d.readBackHost(ctx, d.cfg.Hosts[i], &rep.Hosts[i]) })
}

// readBackHost is readBack for one host. A service its runtime did not list in time (or at all)
// runs "unknown".
func (d *Deployer) readBackHost(ctx context.Context, h config.Host, hr *report.HostReport) {
	if h.SSH != "" {
		d.readBackRemote(ctx, h, hr) // remote.go, within lookWithin too
		return
	}
	rt := d.runtimes[h.Name]
	if rt == nil {
		return
	}
	ctx, cancel := context.WithTimeout(ctx, d.lookWithin())
	defer cancel()
	versions := map[string]string{}
	for _, svc := range d.cfg.Services {
		insts, err := running(ctx, rt, h.Name, svc.Name)
		if err != nil {
			versions[svc.Name] = "unknown"
			continue
		}
		if len(insts) > 0 {
			versions[svc.Name] = versionsOf(insts)
		}
	}
	hr.Running = summarize(versions, len(d.cfg.Services))
	if hr.Outcome == report.OutcomeNotReached && hr.From == "" {
		hr.From = hr.Running
	}
}

// versionsOf names the versions insts run: one, or each (sorted, joined by "+") when instances
// of several run at once (a start-first step or a rollback cut short), so a host is never said to
// run a version alone beside another.
func versionsOf(insts []runtime.Instance) string {
	var vs []string
	for _, in := range insts {
		if !slices.Contains(vs, in.Version) {
			vs = append(vs, in.Version)
		}
	}
	slices.Sort(vs)
	return strings.Join(vs, "+")
}

// summarize names one version when every service runs it, else each service's version.
func summarize(versions map[string]string, services int) string {
	distinct := map[string]bool{}
	for _, v := range versions {
		distinct[v] = true
	}
	if len(distinct) == 0 {
		return ""
	}
	if len(distinct) == 1 && len(versions) == services {
		for v := range distinct {
			return v
		}
	}
	parts := make([]string, 0, len(versions))
	for s, v := range versions {
		parts = append(parts, s+"="+v)
	}
	sort.Strings(parts)
	return strings.Join(parts, ",")
}

func hostNames(hs []config.Host) string {
	names := make([]string, 0, len(hs))
	for _, h := range hs {
		names = append(names, h.Name)
	}
	return strings.Join(names, ", ")
}

// pollEvery is how often the deployer looks at the balancer and at health: interval/5, so a
// transition is seen within a fifth of a check interval.
func (d *Deployer) pollEvery() time.Duration {
	return min(max(d.cfg.Balancer.Interval/5, 10*time.Millisecond), time.Second)
}

// startPoll is how often the deployer looks at a new instance, its health and the balancer's
// view of it while it comes up: interval/25 (10 ms at a 250 ms interval), at least 5 ms and at
// most pollEvery. Every millisecond between "in rotation" and seeing it is pure waiting added
// to the host's step.
func (d *Deployer) startPoll() time.Duration {
	return min(max(d.cfg.Balancer.Interval/25, 5*time.Millisecond), d.pollEvery())
}

// sleep waits for d on the deployer's clock, or until ctx ends.
func (d *Deployer) sleep(ctx context.Context, dur time.Duration) error {
	select {
	case <-ctx.Done():
		return ctx.Err()
	case <-d.clock.After(dur):
		return nil
	}
}
