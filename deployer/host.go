package deployer

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/zero502/zero502/infra"
	"github.com/zero502/zero502/infra/hostlock"
	"github.com/zero502/zero502/infra/runtime"
	"github.com/zero502/zero502/infra/spec"
)

// PreviousFileName is the spec a host ran before the one published last, kept beside it in the
// host's state dir so a deploy interrupted after publishing can still roll the host back.
const PreviousFileName = "spec.previous.json"

// deployHost is one host's step: lock, publish, swap each service through the handshake,
// verify, release. On failure the host is rolled back to its previous spec.
func (d *Deployer) deployHost(ctx context.Context, h infra.Host, version string, rep *HostReport) error {
	if h.SSH != "" {
		return d.remoteStep(ctx, h, version, rep) // the same step, run on the host (remote.go)
	}
	rt := d.runtimes[h.Name]
	lock, err := d.lock(ctx, h, version)
	if err != nil {
		return err
	}
	defer func() {
		lock.Release()
		d.emit(Event{Host: h.Name, Step: StepDone, Version: rep.Running, Message: rep.Outcome})
	}()
	begin := d.clock.Now()
	defer func() { rep.Duration = d.clock.Now().Sub(begin) }()

	dir := d.cfg.HostStateDir(h)
	specPath, prevPath := spec.Path(dir), filepath.Join(dir, PreviousFileName)
	published, err := spec.Read(specPath)
	fresh := errors.Is(err, spec.ErrNone)
	if err != nil && !fresh {
		return fmt.Errorf("host %s: %w", h.Name, err)
	}
	// back is what a rollback restores: the published spec, or, when it already names this
	// version (an interrupted deploy), the one kept from before it; nil on a fresh host.
	var back *spec.Spec
	switch {
	case !fresh && published.Version != version:
		back = &published
	case !fresh:
		if p, err := spec.Read(prevPath); err == nil && p.Version != version {
			back = &p
		}
	}
	want := spec.Render(d.cfg, h, version, d.self)

	if !fresh && published.Version == version {
		if err := d.settled(ctx, h, rt, want); err == nil {
			if err := d.verify(ctx, h, rt, want); err == nil {
				rep.Outcome, rep.Running = OutcomeUnchanged, version
				d.emit(Event{Host: h.Name, Step: StepUnchanged, Version: version,
					Message: "already runs " + version + ", healthy and in rotation: verified, not redeployed"})
				return nil
			}
		}
	}

	if back == &published {
		if err := spec.Publish(prevPath, published); err != nil {
			return fmt.Errorf("host %s: keep the previous spec: %w", h.Name, err)
		}
	} else if fresh {
		_ = os.Remove(prevPath) // a leftover of a host that was wiped
	}
	if err := spec.Publish(specPath, want); err != nil {
		return fmt.Errorf("host %s: publish spec %s: %w", h.Name, specPath, err)
	}
	d.emit(Event{Host: h.Name, Step: StepPublish, Version: version, Message: "spec published at " + specPath})

	err = d.converge(ctx, h, rt, want, &rep.Timeline)
	if err == nil {
		err = d.verify(ctx, h, rt, want)
	}
	if err == nil {
		rep.Outcome, rep.Running = OutcomeDeployed, version
		rep.Floor = d.cfg.Balancer.Recovery()
		if !rep.Timeline.DrainStarted.IsZero() {
			rep.Floor += d.cfg.Drain.Window
		}
		d.emit(Event{Host: h.Name, Step: StepVerified, Version: version, Message: "every service runs " + version})
		return nil
	}
	rep.Floor = 0
	return d.rollback(ctx, h, rt, back, want, rep, err)
}

// lock takes host h's lock, waiting up to the lock timeout for a holder to finish.
func (d *Deployer) lock(ctx context.Context, h infra.Host, version string) (*hostlock.Lock, error) {
	path := d.cfg.HostLockPath(h)
	who, _, _ := strings.Cut(spec.Holder(), " pid ")
	me := hostlock.Holder{Who: who, Command: "zero502 deploy --version " + version, PID: os.Getpid()}
	lctx, cancel := context.WithTimeout(ctx, d.opts.LockTimeout)
	defer cancel()
	l, err := hostlock.TryAcquire(path, me)
	if errors.Is(err, hostlock.ErrHeld) {
		// Said once, whoever holds it (a flock(1) script leaves no holder record).
		d.emit(Event{Host: h.Name, Step: StepLockWait, Version: version, Message: fmt.Sprintf(
			"waiting for host lock held by %s (lock %s; giving up after %s)", hostlock.ReadHolder(path), path, d.opts.LockTimeout)})
		l, err = hostlock.Acquire(lctx, path, me, 100*time.Millisecond, nil)
	}
	if err != nil {
		if ctx.Err() == nil && errors.Is(err, context.DeadlineExceeded) {
			return nil, fmt.Errorf("host %s: gave up after --lock-timeout %s: %w; nothing was changed on it", h.Name, d.opts.LockTimeout, err)
		}
		return nil, fmt.Errorf("host %s: %w", h.Name, err)
	}
	d.emit(Event{Host: h.Name, Step: StepLocked, Version: version, Message: "host lock " + path})
	return l, nil
}

// settled reports whether every service of s already runs at its version, healthy directly
// and (the balanced one) in rotation: a host a previous run finished.
func (d *Deployer) settled(ctx context.Context, h infra.Host, rt Runtime, s spec.Spec) error {
	bsvc, balanced := d.cfg.BalancedService()
	for _, svc := range s.Services {
		insts, err := running(ctx, rt, h.Name, svc.Name)
		if err != nil {
			return err
		}
		if svc.Stopped {
			if len(insts) > 0 {
				return fmt.Errorf("%s runs but must be stopped", svc.Name)
			}
			continue
		}
		if len(insts) != 1 || insts[0].Version != svc.Version {
			return fmt.Errorf("%s does not run %s alone", svc.Name, svc.Version)
		}
		if svc.Port > 0 {
			if err := d.checkHealth(ctx, svc.Address, svc.HealthPath); err != nil {
				return err
			}
		}
		if balanced && svc.Name == bsvc.Name && d.view {
			st, err := d.bal.TargetState(ctx, svc.Address)
			if err != nil {
				return err
			}
			if !st.InRotation {
				return fmt.Errorf("%s not in rotation", svc.Address)
			}
		}
	}
	return nil
}

// converge brings every service of host h to spec s, one service at a time: old instances
// stopped through the handshake, the new one started and waited for. An instance already at the
// spec's version (a deploy interrupted after its start) is kept and waited for. Then every new
// instance must outlast its stability window (stable) before converge returns. tl, when not
// nil, records the balanced service's handshake.
func (d *Deployer) converge(ctx context.Context, h infra.Host, rt Runtime, s spec.Spec, tl *Timeline) error {
	bsvc, balanced := d.cfg.BalancedService()
	var started []fresh
	for _, svc := range s.Services {
		isBalanced := balanced && svc.Name == bsvc.Name
		watch := isBalanced && d.view && !d.opts.Naive
		var stl *Timeline
		if isBalanced {
			stl = tl
		}
		insts, err := running(ctx, rt, h.Name, svc.Name)
		if err != nil {
			return err
		}
		var keep *runtime.Instance
		for _, in := range insts {
			if keep == nil && !svc.Stopped && in.Version == svc.Version {
				keep = &in
				continue
			}
			if err := d.stop(ctx, h, rt, in, svc.Address, watch, stl); err != nil {
				return err
			}
		}
		if svc.Stopped {
			continue
		}
		inst := keep
		if inst == nil {
			began, err := rt.Start(ctx, h.Name, svc)
			if err != nil {
				return fmt.Errorf("host %s: service %s: start %s: %w", h.Name, svc.Name, svc.Version, err)
			}
			inst = &began
			if stl != nil {
				stl.NewStarted = d.clock.Now()
			}
			d.emit(Event{Host: h.Name, Service: svc.Name, Step: StepStart, Version: svc.Version,
				Message: fmt.Sprintf("started %s (%s)", inst.ID, strings.Join(svc.Command, " "))})
		}
		// The window counts from the first good health answer, not from the start: a process
		// that boots slowly under load and dies soon after its first answer must still be caught.
		// It overlaps the wait for the balancer, which needs about as long.
		healthyAt, err := d.waitHealthy(ctx, h, rt, *inst, svc, watch, stl)
		if err != nil {
			return err
		}
		started = append(started, fresh{inst: *inst, svc: svc, at: healthyAt})
	}
	return d.stable(ctx, h, rt, started)
}

// rollback returns host h to back after cause: republish it (or remove the spec of a fresh
// host), converge, verify. The host's report says what it runs afterwards.
func (d *Deployer) rollback(ctx context.Context, h infra.Host, rt Runtime, back *spec.Spec, failed spec.Spec, rep *HostReport, cause error) error {
	// The rollback runs even when the deploy's context was cancelled: never leave a host half-applied.
	rctx, cancel := context.WithTimeout(context.WithoutCancel(ctx),
		time.Duration(len(failed.Services)+1)*(d.cfg.Drain.StopGrace+d.cfg.Rollout.HealthyDeadline+10*time.Second))
	defer cancel()
	dir := d.cfg.HostStateDir(h)
	to := "nothing (fresh host)"
	if back != nil {
		to = back.Version
	}
	d.emit(Event{Host: h.Name, Step: StepRollback, Version: to, Message: "rolling back to " + to + ": " + cause.Error()})

	var err error
	if back == nil {
		err = d.clear(rctx, h, rt, failed)
		if err == nil {
			err = errors.Join(os.Remove(spec.Path(dir)), ignoreMissing(os.Remove(filepath.Join(dir, PreviousFileName))))
		}
	} else {
		restored := *back
		restored.PublishedAt, restored.PublishedBy = time.Time{}, ""
		err = spec.Publish(spec.Path(dir), restored)
		if err == nil {
			err = d.clearExtra(rctx, h, rt, failed, restored)
		}
		if err == nil {
			err = d.converge(rctx, h, rt, restored, nil)
		}
		if err == nil {
			err = d.verify(rctx, h, rt, restored)
		}
	}
	if err != nil {
		rep.Outcome, rep.Error = OutcomeFailed, fmt.Sprintf("%v; rollback to %s failed too: %v", cause, to, err)
		d.emit(Event{Host: h.Name, Step: StepFailed, Message: rep.Error})
		return fmt.Errorf("%w; rollback to %s failed too: %v: look at host %s", cause, to, err, h.Name)
	}
	rep.Outcome, rep.Error = OutcomeRolledBack, cause.Error()
	if back != nil {
		rep.Running = back.Version
	}
	d.emit(Event{Host: h.Name, Step: StepRolledBack, Version: to, Message: "host runs " + to + " again"})
	return fmt.Errorf("%w; host %s rolled back to %s, rollout stopped", cause, h.Name, to)
}

// clear stops every instance of the services of s on host h (rolling a fresh host back to
// nothing).
func (d *Deployer) clear(ctx context.Context, h infra.Host, rt Runtime, s spec.Spec) error {
	for _, svc := range s.Services {
		insts, err := running(ctx, rt, h.Name, svc.Name)
		if err != nil {
			return err
		}
		for _, in := range insts {
			if err := d.stop(ctx, h, rt, in, svc.Address, false, nil); err != nil {
				return err
			}
		}
	}
	return nil
}

// clearExtra stops the services of failed that restored does not have.
func (d *Deployer) clearExtra(ctx context.Context, h infra.Host, rt Runtime, failed, restored spec.Spec) error {
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
