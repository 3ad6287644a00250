package deployer

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"github.com/zero502/zero502/deployer/balancer"
	"github.com/zero502/zero502/deployer/report"
	"github.com/zero502/zero502/infra/config"
	"github.com/zero502/zero502/infra/hostlock"
	"github.com/zero502/zero502/infra/runtime"
	"github.com/zero502/zero502/infra/spec"
)

// previousFileName is the spec a host ran before the one published last, kept beside it in the
// host's state dir so a deploy interrupted after publishing can still roll the host back.
const previousFileName = "spec.previous.json"

// imageEnsurer is a runtime that can fetch an image before anything on the host is touched (the
// Docker runtime pulls it from its registry when the engine lacks it), writing a pull's status
// lines to progress as they come.
type imageEnsurer interface {
	EnsureImageWith(ctx context.Context, ref string, progress io.Writer) error
}

// preparer is a runtime that can make an instance ready before its predecessor stops (the
// Docker runtime creates the container), so that Start after the stop only starts it; Discard
// removes what Start did not take.
type preparer interface {
	Prepare(ctx context.Context, host string, svc spec.Service) error
	Discard(ctx context.Context, host string, svc spec.Service)
}

// hostPlan is what a host's step will do, decided before anything on the host changes.
type hostPlan struct {
	// want is the spec to publish and converge to.
	want spec.Spec
	// resume: the published spec already is want (an interrupted deploy, or a finished one):
	// instances already at it are kept, and a host that verifies is left alone.
	resume bool
	// back is the host's last good spec, what a rollback restores: the published spec when it
	// differs from want; when it is want already, the one kept from before it (else itself, so
	// it is never deleted); with no published spec but a running version, that version rendered
	// from the config; nil on a fresh host, which a rollback clears.
	back *spec.Spec
}

// previous is the version the host ran before the step ("" on a fresh host).
func (p hostPlan) previous() string {
	if p.back == nil {
		return ""
	}
	return p.back.Version
}

// plan reads host h's published spec and running instances and decides its step. A corrupt
// spec is set aside (kept for a look) and the host is taken by what runs on it.
func (d *Deployer) plan(ctx context.Context, h config.Host, rt Runtime, version string) (hostPlan, error) {
	var p hostPlan
	dir := d.cfg.HostStateDir(h)
	published, err := spec.Read(spec.Path(dir))
	if errors.Is(err, spec.ErrCorrupt) {
		to, aerr := spec.SetAside(spec.Path(dir))
		if aerr != nil {
			return p, fmt.Errorf("host %s: %w; %v", h.Name, err, aerr)
		}
		d.emit(Event{Host: h.Name, Step: StepPublish, Version: version, Message: fmt.Sprintf(
			"the published spec was corrupt (%v): set aside as %s; the host is taken by what runs on it", err, to)})
		err = spec.ErrNone
	}
	hasSpec := err == nil
	if err != nil && !errors.Is(err, spec.ErrNone) {
		return p, fmt.Errorf("host %s: %w", h.Name, err)
	}

	// The port each start-first service holds now, and the version that runs.
	on := map[string]int{}
	runningVersion := ""
	for _, svc := range d.cfg.Services {
		insts, err := running(ctx, rt, h.Name, svc.Name)
		if err != nil {
			return p, err
		}
		if len(insts) > 0 && runningVersion == "" {
			runningVersion = insts[0].Version
		}
		if len(svc.Ports) != 2 {
			continue
		}
		pub, _ := published.Service(svc.Name)
		for _, in := range insts {
			if port := basePort(in.Address, h); port > 0 {
				if _, ok := on[svc.Name]; !ok || in.Address == pub.Address {
					on[svc.Name] = port
				}
			}
		}
		if _, ok := on[svc.Name]; !ok && hasSpec && pub.Port > 0 {
			on[svc.Name] = pub.Port - h.PortOffset
		}
	}
	stay := spec.RenderOn(d.cfg, h, version, d.self, on)
	p.want, p.resume = stay, hasSpec && spec.Same(published, stay)
	if !p.resume && d.cfg.Rollout.Strategy == config.StartFirst && !d.opts.Naive {
		other := map[string]int{}
		for _, svc := range d.cfg.Services {
			if len(svc.Ports) == 2 {
				other[svc.Name] = svc.Ports[0]
				if on[svc.Name] == svc.Ports[0] {
					other[svc.Name] = svc.Ports[1]
				}
			}
		}
		p.want = spec.RenderOn(d.cfg, h, version, d.self, other)
	}
	if d.opts.Back {
		if kept, ok := d.keptBefore(h, version, on); ok {
			p.want, p.resume = kept, hasSpec && spec.Same(published, kept)
		}
	}

	switch {
	case hasSpec && !spec.Same(published, p.want):
		p.back = &published
	case hasSpec:
		p.back = &published
		if prev, err := spec.Read(filepath.Join(dir, previousFileName)); err == nil && !spec.Same(prev, p.want) {
			p.back = &prev
		}
	case runningVersion != "":
		guess := spec.RenderOn(d.cfg, h, runningVersion, d.self, on)
		p.back = &guess
		d.emit(Event{Host: h.Name, Step: StepPublish, Version: version, Message: fmt.Sprintf(
			"no published spec, but %s runs: a rollback restores %s as this config renders it", runningVersion, runningVersion)})
	}
	return p, nil
}

// basePort is the port of addr (host:port) before host h's offset; 0 when addr has none.
func basePort(addr string, h config.Host) int {
	_, port, err := net.SplitHostPort(addr)
	if err != nil {
		return 0
	}
	n, err := strconv.Atoi(port)
	if err != nil {
		return 0
	}
	return n - h.PortOffset
}

// ensureImages has the runtime fetch every image of s before anything changes on host h: a pull
// that fails leaves the host as it was.
func (d *Deployer) ensureImages(ctx context.Context, h config.Host, rt Runtime, s spec.Spec) error {
	e, ok := rt.(imageEnsurer)
	if !ok {
		return nil
	}
	for _, svc := range s.Services {
		if svc.Image == "" || svc.Stopped {
			continue
		}
		if err := e.EnsureImageWith(ctx, svc.Image, d.pullProgress(h, svc)); err != nil {
			return fmt.Errorf("host %s: service %s: %w; nothing was changed on this host", h.Name, svc.Name, err)
		}
	}
	return nil
}

// pullEvery is how often, at most, a pull under way is said (an event, and so progress).
const pullEvery = 2 * time.Second

// pullProgress is where the runtime writes the status lines of a pull of svc's image on host h:
// the first line, then at most one every pullEvery, becomes a pull event, so a pull that goes
// on restarts the step's progress clock and one whose stream stops lets it run out.
func (d *Deployer) pullProgress(h config.Host, svc spec.Service) io.Writer {
	return &pullReporter{say: func(line string) {
		d.emit(Event{Host: h.Name, Service: svc.Name, Step: stepPull, Version: svc.Version,
			Message: fmt.Sprintf("pulling %s: %s", svc.Image, line)})
	}}
}

// pullReporter says the last status line written to it, at most once every pullEvery.
type pullReporter struct {
	say  func(line string)
	last time.Time
}

func (p *pullReporter) Write(b []byte) (int, error) {
	if now := time.Now(); now.Sub(p.last) >= pullEvery {
		lines := strings.Split(strings.TrimSpace(string(b)), "\n")
		p.say(strings.TrimSpace(lines[len(lines)-1]))
		p.last = now
	}
	return len(b), nil
}

// setBack remembers host h's last good spec for a rollback after its step (re-verification).
func (d *Deployer) setBack(h config.Host, back *spec.Spec) {
	d.backsMu.Lock()
	defer d.backsMu.Unlock()
	d.backs[h.Name] = back
}

// lock takes host h's lock, waiting up to the lock timeout for a holder to finish.
func (d *Deployer) lock(ctx context.Context, h config.Host, version string) (*hostlock.Lock, error) {
	l, err := d.takeLock(ctx, h, version)
	if err == nil {
		d.emit(Event{Host: h.Name, Step: StepLocked, Version: version, Message: "host lock " + l.Path()})
	}
	return l, err
}

// takeLock is lock without the event: preflight's check that every host lock can be taken.
func (d *Deployer) takeLock(ctx context.Context, h config.Host, version string) (*hostlock.Lock, error) {
	path := d.cfg.HostLockPath(h)
	me := d.holder(version)
	lctx, cancel := context.WithTimeout(ctx, d.opts.LockTimeout)
	defer cancel()
	l, err := hostlock.TryAcquire(path, me)
	if errors.Is(err, hostlock.ErrHeld) && d.opts.NoLockWait {
		return nil, fmt.Errorf("host %s: %w (--lock-timeout 0 refuses at once); nothing was changed on it", h.Name, err)
	}
	if errors.Is(err, hostlock.ErrHeld) {
		// Said once, whoever holds it (a flock(1) script leaves no holder record).
		d.emit(Event{Host: h.Name, Step: stepLockWait, Version: version, Message: fmt.Sprintf(
			"waiting for host lock held by %s (lock %s; giving up after %s)", hostlock.ReadHolder(path), path, d.opts.LockTimeout)})
		l, err = hostlock.Acquire(lctx, path, me, 100*time.Millisecond, nil)
	}
	if err != nil {
		if ctx.Err() == nil && errors.Is(err, context.DeadlineExceeded) {
			return nil, fmt.Errorf("host %s: gave up after --lock-timeout %s: %w; nothing was changed on it", h.Name, d.opts.LockTimeout, err)
		}
		return nil, fmt.Errorf("host %s: %w", h.Name, err)
	}
	return l, nil
}

// keptBefore is the spec host h keeps from before its last deploy (spec.previous.json) when a
// step back (Options.Back) can restore it as it is: of version, with the config's services, and
// each start-first service on a port what runs now (on) does not hold. Else an event says why the
// step back goes to version as this config renders it.
func (d *Deployer) keptBefore(h config.Host, version string, on map[string]int) (spec.Spec, bool) {
	kept, err := spec.Read(filepath.Join(d.cfg.HostStateDir(h), previousFileName))
	why := ""
	switch {
	case err != nil:
		why = fmt.Sprintf("no spec kept from before (%v)", err)
	case kept.Version != version:
		why = "the spec kept from before is of " + kept.Version
	case len(kept.Services) != len(d.cfg.Services):
		why = "the spec kept from before has other services than the config"
	}
	for i := 0; why == "" && i < len(d.cfg.Services); i++ {
		svc, ok := kept.Service(d.cfg.Services[i].Name)
		switch {
		case !ok:
			why = "the spec kept from before has other services than the config"
		case len(svc.Ports) == 2 && svc.Port-h.PortOffset == on[svc.Name]:
			why = fmt.Sprintf("service %s runs on port %d, the one the spec kept from before names", svc.Name, svc.Port)
		}
	}
	if why != "" {
		d.emit(Event{Host: h.Name, Step: StepPublish, Version: version, Message: "step back: " + why +
			": going back to " + version + " as this config renders it"})
		return spec.Spec{}, false
	}
	kept.PublishedAt, kept.PublishedBy = time.Time{}, ""
	return kept, true
}

// converge brings every service of host h to spec s, one service at a time. Stop-first: each
// old instance leaves through its drain (the handshake, or at the balancer), then the new one
// starts and is waited for. Start-first: the new instance starts on the service's other port,
// is added at the balancer and waited for until it is in rotation, and only then does the old
// one drain and stop, and its target is removed (on the rollout.max_unavailable hosts of a
// batch, drainsEarly, the old one drains while the new one becomes healthy). With keep, an
// instance already at its spec (an interrupted deploy, or a rollback to what still runs) is
// kept and waited for. Then every
// new instance must outlast its bake (stable) before converge returns. With a gate, a new
// instance passes its checks before traffic (services[].smoke, hooks.pre_traffic) before the
// balancer sends it users (held out at the balancer meanwhile when it would otherwise come back
// by its health alone). tl, when not
// nil, records the balanced service's handshake.
func (d *Deployer) converge(ctx context.Context, h config.Host, rt Runtime, s spec.Spec, keep bool, gate *trafficGate, tl *report.Timeline) error {
	bsvc, balanced := d.cfg.BalancedService()
	rot, canRotate := d.bal.(balancer.Rotation)
	var started []fresh
	for _, svc := range s.Services {
		isBalanced := balanced && svc.Name == bsvc.Name
		watch := isBalanced && d.view && !d.opts.Naive
		var stl *report.Timeline
		if isBalanced {
			stl = tl
		}
		insts, err := running(ctx, rt, h.Name, svc.Name)
		if err != nil {
			return err
		}
		sideBySide := d.sideBySide(svc)
		if p, ok := rt.(preparer); ok && !keep && !svc.Stopped && !sideBySide && len(insts) > 0 {
			// The new instance is made ready (the Docker runtime creates its container: the
			// image and its config checked by the engine) before the old one drains, so a
			// version that cannot even be created stops nothing, and the start after the stop
			// is only a start.
			if err := p.Prepare(ctx, h.Name, svc); err != nil {
				return fmt.Errorf("host %s: service %s: prepare %s before its predecessor drains: %w; nothing was stopped", h.Name, svc.Name, svc.Version, err)
			}
			defer p.Discard(context.WithoutCancel(ctx), h.Name, svc) // nothing once Start took it
		}
		var kept *runtime.Instance
		var olds []runtime.Instance
		for _, in := range insts {
			if kept == nil && keep && !svc.Stopped && in.Runs(svc) {
				kept = &in
				continue
			}
			if sideBySide && in.Address != svc.Address {
				olds = append(olds, in) // retired once the new one is in rotation
				continue
			}
			if err := d.stop(ctx, h, rt, in, svc, watch, stl); err != nil {
				if !(gate == nil && keep && stoppedAnyway(err)) {
					return err
				}
				// A rollback: the failed version did end (killed, or left before the balancer saw
				// it go); its finding must not keep the last good version from starting.
				d.emit(Event{Host: h.Name, Service: svc.Name, Step: stepStopped, Version: in.Version, Message: "rollback goes on: " + err.Error()})
			}
		}
		if svc.Stopped {
			if err := d.unhold(ctx, svc); err != nil { // nothing runs there next
				return fmt.Errorf("host %s: service %s: %w", h.Name, svc.Name, err)
			}
			continue
		}
		gated := gate != nil && kept == nil && !d.opts.Naive && d.gates(svc.Name, isBalanced)
		addsItself := d.addsItself(svc)
		if watch && canRotate && gated {
			// Hold the target out until its smoke requests and pre_traffic hook passed: in place
			// (stop-first, handshake) the balancer would take the new instance back by its health
			// checks alone, and side by side it may know the other port already (a backend of its
			// own config) and would too. A target it does not know gets users only once the
			// deployer adds it, after the checks. Held is recorded before the balancer is asked:
			// a drain it applied in part (one instance of a tier, or one that answered after the
			// client gave up) is undone by the release below, or by the rollback's.
			if !addsItself {
				d.held.hold(svc.Address)
			}
			if err := rot.Drain(ctx, svc.Address); err != nil && !(addsItself && errors.Is(err, balancer.ErrUnknownTarget)) {
				return fmt.Errorf("host %s: service %s: hold %s out at %s until it passed its checks before traffic: %w", h.Name, svc.Name, svc.Address, d.bal.Name(), err)
			}
		}
		inst := kept
		if inst == nil {
			began, err := rt.Start(ctx, h.Name, svc)
			if err != nil {
				return fmt.Errorf("host %s: service %s: start %s: %w", h.Name, svc.Name, svc.Version, err)
			}
			inst = &began
			if stl != nil {
				stl.NewStarted = d.clock.Now()
			}
			d.emit(Event{Host: h.Name, Service: svc.Name, Step: stepStart, Version: svc.Version,
				Message: fmt.Sprintf("started %s (%s)", inst.ID, strings.Join(svc.Command, " "))})
		}
		if gated {
			if _, err := d.waitHealthy(ctx, h, rt, *inst, svc, false, nil); err != nil {
				return err
			}
			if err := d.beforeTraffic(ctx, h, svc, isBalanced, gate); err != nil {
				return err
			}
		}
		if held := d.held.release(svc.Address); watch && canRotate && (addsItself || held) {
			if err := rot.Add(ctx, svc.Address); err != nil {
				if held { // still held out: the rollback adds back whatever it runs there next
					d.held.hold(svc.Address)
				}
				return fmt.Errorf("host %s: service %s: add %s at %s: %w", h.Name, svc.Name, svc.Address, d.bal.Name(), err)
			}
		}
		// rollout.max_unavailable: on this host the old instances drain while the new one
		// becomes healthy, instead of after (the host may serve nothing for a moment).
		var retired chan error
		if len(olds) > 0 && gate != nil && d.drainsEarly(h) {
			retired = make(chan error, 1)
			go func(olds []runtime.Instance) { retired <- d.retire(ctx, h, rt, svc, olds, watch, stl) }(olds)
			olds = nil
		}
		// The bake counts from the first good health answer, not from the start: a process
		// that boots slowly under load and dies soon after its first answer must still be caught.
		// It overlaps the wait for the balancer, which needs about as long.
		healthyAt, err := d.waitHealthy(ctx, h, rt, *inst, svc, watch, stl)
		if retired != nil {
			err = errors.Join(err, <-retired)
		}
		if err != nil {
			return err
		}
		if err := d.retire(ctx, h, rt, svc, olds, watch, stl); err != nil {
			return err
		}
		started = append(started, fresh{inst: *inst, svc: svc, at: healthyAt})
	}
	return d.stable(ctx, h, rt, started)
}

// sideBySide reports whether svc's new instance starts beside the old one, on the other of its
// two ports (start-first), rather than in its place.
func (d *Deployer) sideBySide(svc spec.Service) bool {
	return d.cfg.Rollout.Strategy == config.StartFirst && !d.opts.Naive && !svc.Stopped && len(svc.Ports) == 2
}

// addsItself reports whether the deployer adds svc's target at the balancer itself once its new
// instance started (side by side, or drain: balancer), rather than the balancer taking it back
// by its health checks alone.
func (d *Deployer) addsItself(svc spec.Service) bool {
	return d.sideBySide(svc) || svc.Drain == config.DrainBalancer
}

// retire drains and stops the old instances of svc that a start-first step replaced, and removes
// their targets at the balancer.
func (d *Deployer) retire(ctx context.Context, h config.Host, rt Runtime, svc spec.Service, olds []runtime.Instance, watch bool, tl *report.Timeline) error {
	rot, canRotate := d.bal.(balancer.Rotation)
	for _, old := range olds {
		if err := d.stop(ctx, h, rt, old, svc, watch, tl); err != nil {
			return err
		}
		if watch && canRotate && old.Address != "" {
			if err := rot.Remove(ctx, old.Address); err != nil {
				return fmt.Errorf("host %s: service %s: remove the old target %s at %s: %w", h.Name, svc.Name, old.Address, d.bal.Name(), err)
			}
		}
	}
	return nil
}

// rollbackBudget is how long rolling a host of n services back may take at most: for each, and
// once more, a stop grace, a healthy deadline, the stability window and 10 s of slack. A host's
// rollback gets it; the deployer waits that long for a remote host's report after a cancel.
func (d *Deployer) rollbackBudget(n int) time.Duration {
	return time.Duration(n+1) * (d.cfg.Drain.StopGrace + d.cfg.Rollout.HealthyDeadline + d.StabilityWindow() + 10*time.Second)
}

// publish publishes s at path for host h, recording the host lock this deploy holds (the
// watchdog takes it too, whatever lock the server's own config names).
func (d *Deployer) publish(h config.Host, path string, s spec.Spec) error {
	s.LockPath = d.cfg.HostLockPath(h)
	return spec.Publish(path, s)
}

// rollback returns host h to back after cause: republish it (or remove the spec of a fresh
// host), converge, verify. The host's report says what it runs afterwards. The published spec is
// removed only on a host that had none and ran nothing: a last good spec survives every failure.
func (d *Deployer) rollback(ctx context.Context, h config.Host, rt Runtime, back *spec.Spec, failed spec.Spec, rep *report.HostReport, cause error) error {
	// The rollback runs even when the deploy's context was cancelled: never leave a host half-applied.
	rctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), d.rollbackBudget(len(failed.Services)))
	defer cancel()
	dir := d.cfg.HostStateDir(h)
	to, runs := "nothing (fresh host)", "" // what the host goes back to, and the version it then runs
	if back != nil {
		to, runs = back.Version, back.Version
		if allStopped(*back) {
			to, runs = back.Version+" with every service stopped (as zero502 stop left it)", ""
		}
	}
	d.emit(Event{Host: h.Name, Step: stepRollback, Version: runs, Message: "rolling back to " + to + ": " + cause.Error()})

	var err error
	if back == nil {
		err = d.clear(rctx, h, rt, failed)
		if err == nil {
			for _, p := range []string{spec.Path(dir), filepath.Join(dir, previousFileName)} {
				err = errors.Join(err, ignoreMissing(os.Remove(p)), ignoreMissing(os.Remove(spec.SecretsPath(p))))
			}
		}
	} else {
		restored := *back
		restored.PublishedAt, restored.PublishedBy = time.Time{}, ""
		err = d.publish(h, spec.Path(dir), restored)
		if err == nil {
			err = d.clearExtra(rctx, h, rt, failed, restored)
		}
		if err == nil {
			err = d.converge(rctx, h, rt, restored, true, nil, nil) // the old version is not gated again: its smoke and hooks may be the new one's
		}
		if err == nil {
			err = d.forgetTargets(rctx, failed, restored)
		}
		if err == nil {
			err = d.stillVerifies(rctx, h, rt, restored)
		}
	}
	if err != nil {
		rep.Running = "" // not seen: the read-back says what it runs
		rep.Outcome, rep.Error = report.OutcomeFailed, fmt.Sprintf("%v; rollback to %s failed too: %v", cause, to, err)
		d.emit(Event{Host: h.Name, Step: stepFailed, Message: rep.Error})
		return fmt.Errorf("%w; rollback to %s failed too: %v: look at host %s", cause, to, err, h.Name)
	}
	rep.Outcome, rep.Error, rep.Running = report.OutcomeRolledBack, cause.Error(), runs
	again := "host runs " + runs + " again"
	if runs == "" {
		again = "host runs nothing again: " + to
	}
	d.emit(Event{Host: h.Name, Step: stepRolledBack, Version: runs, Message: again})
	return fmt.Errorf("%w; host %s rolled back to %s, rollout stopped", cause, h.Name, to)
}

// allStopped says whether spec s marks every one of its services stopped: a host on it runs
// nothing, whatever its version.
func allStopped(s spec.Spec) bool {
	for _, svc := range s.Services {
		if !svc.Stopped {
			return false
		}
	}
	return true
}

// forgetTargets removes at the balancer the targets the failed spec added that the restored one
// does not use (a start-first instance on the other port that never became healthy), so no
// unhealthy target is left registered.
func (d *Deployer) forgetTargets(ctx context.Context, failed, restored spec.Spec) error {
	rot, ok := d.bal.(balancer.Rotation)
	bsvc, balanced := d.cfg.BalancedService()
	if !ok || !balanced || !d.view || d.opts.Naive {
		return nil
	}
	f, okF := failed.Service(bsvc.Name)
	r, okR := restored.Service(bsvc.Name)
	if !okF || !okR || f.Address == "" || f.Address == r.Address {
		return nil
	}
	if err := rot.Remove(ctx, f.Address); err != nil {
		return fmt.Errorf("remove the failed target %s at %s: %w", f.Address, d.bal.Name(), err)
	}
	return nil
}

// clear stops every instance of the services of s on host h (rolling a fresh host back to
// nothing). The balanced service's instance may be in rotation and serving by then (its
// post_traffic hook failed, or the verdict after it): it leaves the way any stop takes it out,
// through its drain (at the balancer first for drain: balancer), unless the balancer never knew
// its target.
func (d *Deployer) clear(ctx context.Context, h config.Host, rt Runtime, s spec.Spec) error {
	bsvc, balanced := d.cfg.BalancedService()
	for _, svc := range s.Services {
		insts, err := running(ctx, rt, h.Name, svc.Name)
		if err != nil {
			return err
		}
		for _, in := range insts {
			watch := balanced && svc.Name == bsvc.Name && d.view && d.balancerKnows(ctx, in, svc)
			if err := d.stop(ctx, h, rt, in, svc, watch, nil); err != nil {
				if !stoppedAnyway(err) {
					return err
				}
				// It did end (killed, or left before the balancer saw it go), as converge's
				// rollback goes on in that case: the finding is said, the host is cleared.
				d.emit(Event{Host: h.Name, Service: svc.Name, Step: stepStopped, Version: in.Version, Message: "rollback goes on: " + err.Error()})
			}
		}
		if err := d.unhold(ctx, svc); err != nil {
			return fmt.Errorf("host %s: service %s: %w", h.Name, svc.Name, err)
		}
	}
	return nil
}

// unhold gives back to the balancer the target of svc this deploy held out for its checks before
// traffic (heldOut) when nothing will run there next (a fresh host cleared, a service rolled back
// to stopped): undrained, it is judged by its health checks again, as before the deploy, instead
// of staying drained by the deploy, out of rotation for whatever a later deploy starts there. A
// target the balancer does not know (its hold was refused) is not added.
func (d *Deployer) unhold(ctx context.Context, svc spec.Service) error {
	rot, ok := d.bal.(balancer.Rotation)
	if !ok || !d.held.release(svc.Address) || !d.balancerKnows(ctx, runtime.Instance{}, svc) {
		return nil
	}
	if err := rot.Add(ctx, svc.Address); err != nil {
		return fmt.Errorf("undrain %s, held out at %s for its checks before traffic: %w", svc.Address, d.bal.Name(), err)
	}
	return nil
}

// balancerKnows says whether the balancer has the target of instance in of svc (any answer but
// ErrUnknownTarget: one it cannot be asked about is treated as known, and drained as any).
func (d *Deployer) balancerKnows(ctx context.Context, in runtime.Instance, svc spec.Service) bool {
	target := in.Address
	if target == "" {
		target = svc.Address
	}
	_, err := d.bal.TargetState(ctx, target)
	return !errors.Is(err, balancer.ErrUnknownTarget)
}

// clearExtra stops the services of failed that restored does not have. One it has is the
// rollback's converge's: an instance of the failed config under the same version and address is
// not the restored one's (its digest differs), so converge replaces it rather than keep it.
func (d *Deployer) clearExtra(ctx context.Context, h config.Host, rt Runtime, failed, restored spec.Spec) error {
	var extra spec.Spec
	for _, svc := range failed.Services {
		if _, ok := restored.Service(svc.Name); !ok {
			extra.Services = append(extra.Services, svc)
		}
	}
	return d.clear(ctx, h, rt, extra)
}

func ignoreMissing(err error) error {
	if errors.Is(err, os.ErrNotExist) {
		return nil
	}
	return err
}

// stoppedAnyway reports whether err from stop is a finding about an instance that did end.
func stoppedAnyway(err error) bool {
	return errors.Is(err, runtime.ErrKilled) || errors.Is(err, errStillInRotation)
}
