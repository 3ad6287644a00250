package deployer

import (
	"context"
	"errors"
	"fmt"

	"github.com/zero502/zero502/deployer/report"
	"github.com/zero502/zero502/deployer/ssh"
	"github.com/zero502/zero502/infra/config"
	"github.com/zero502/zero502/infra/spec"
)

// reverify checks again every host among the first upto that this deploy finished (deployed or
// unchanged): it must still run the version, healthy directly and in rotation (between
// batches, the balancer's view and a direct health check vouch for a host, below). It runs before
// each next batch and at the end, so a version that crashes some time after its bake (after the
// host lock was released) is caught before the rollout moves on or reports success. A host that
// no longer holds is rolled back to its last good spec under its lock; the error stops the
// rollout and makes the deploy exit non-zero.
func (d *Deployer) reverify(ctx context.Context, version string, rep *report.Report, upto int) error {
	var done []int
	for i := 0; i < upto && i < len(d.cfg.Hosts); i++ {
		if o := rep.Hosts[i].Outcome; o == report.OutcomeDeployed || o == report.OutcomeUnchanged {
			done = append(done, i)
		}
	}
	// Every host is looked at once, all at once (bounded by --parallel); only what failed is
	// then looked at again and acted on, host by host, in host order. A host whose one service
	// the balancer has in rotation and that answers its health check directly is vouched for
	// without a look on the host (no ssh round trip: at 50 hosts, the looks were most of the
	// time between batches); the fleet lock keeps other deploys off it, and its step saw the
	// version run. After the last batch the service must also name the version itself
	// (services[].verify), else the host gets a full look. A host not vouched for is looked at
	// in full at once.
	svc, balanced := d.cfg.BalancedService()
	byView := balanced && d.view && len(d.cfg.Services) == 1
	final := upto >= len(d.cfg.Hosts)
	checks := make([]error, len(d.cfg.Hosts))
	published := make([]spec.Spec, len(d.cfg.Hosts))
	d.eachHost(done, func(i int) {
		if byView && d.vouched(ctx, d.cfg.Hosts[i], svc, version, rep.Hosts[i].Target, final) {
			return
		}
		published[i], checks[i] = d.reverifyHost(ctx, d.cfg.Hosts[i], version)
	})
	var errs []error
	for _, i := range done {
		if checks[i] == nil {
			continue
		}
		// A second look, alone, before the host counts as failed: the first round's looks
		// all ran at once, and one that timed out under their load says nothing of the host.
		published[i], checks[i] = d.reverifyHost(ctx, d.cfg.Hosts[i], version)
		err := checks[i]
		if err == nil {
			continue
		}
		if ctx.Err() != nil { // the look was called off, not failed: nothing to roll back for
			errs = append(errs, fmt.Errorf("host %s not re-verified: %w", d.cfg.Hosts[i].Name, ctx.Err()))
			continue
		}
		hr, h := &rep.Hosts[i], d.cfg.Hosts[i]
		if h.SSH != "" {
			errs = append(errs, d.reverifyFailedRemote(ctx, h, version, hr, err))
			continue
		}
		cause := fmt.Errorf("host %s no longer runs %s healthy when re-verified after its step: %w", h.Name, version, err)
		if lerr := d.fleetLostBefore(h, hr, cause); lerr != nil {
			errs = append(errs, lerr)
			continue
		}
		lock, lerr := d.lock(ctx, h, version)
		if lerr != nil {
			hr.Outcome, hr.Error = report.OutcomeFailed, fmt.Sprintf("%v; no rollback: %v", cause, lerr)
			errs = append(errs, errors.Join(cause, lerr))
			continue
		}
		d.backsMu.Lock()
		back := d.backs[h.Name]
		d.backsMu.Unlock()
		errs = append(errs, d.rollback(ctx, h, d.runtimes[h.Name], back, published[i], hr, cause))
		lock.Release()
	}
	return errors.Join(errs...)
}

// reverifyFailedRemote answers host h over ssh, finished on version earlier in this deploy, that
// failed its re-verify with err. Unreachable over ssh, what it runs is unknown (it may have been
// lost with its service still serving): no version is claimed, so the read-back looks again.
// Reachable and no longer healthy on version, it is rolled back as a local host is: by a step to
// the version it ran before, on the host (rollBackHost); a host that ran nothing or this version
// before has nothing to go back to and is failed.
func (d *Deployer) reverifyFailedRemote(ctx context.Context, h config.Host, version string, hr *report.HostReport, err error) error {
	if errors.Is(err, ssh.ErrUnreachable) {
		hr.Outcome, hr.Running = report.OutcomeUnknown, ""
		hr.Error = fmt.Sprintf("unreachable over ssh when re-verified after its step: what it runs is unknown: %v; "+
			"check it with zero502 status once it is back, then deploy again", err)
		d.emit(Event{Host: h.Name, Step: stepFailed, Version: version, Message: hr.Error})
		return fmt.Errorf("host %s: %s", h.Name, hr.Error)
	}
	cause := fmt.Errorf("host %s no longer runs %s healthy when re-verified after its step: %w", h.Name, version, err)
	// What its step saw it run, the re-verify just saw it not run healthy: nothing is claimed
	// here, so the step back says what it runs, else the read-back looks again.
	hr.Running = ""
	if hr.From == "" || hr.From == version {
		hr.Outcome, hr.Error = report.OutcomeFailed, fmt.Sprintf("%v; no rollback: it ran no other version before; look at host %s", cause, h.Name)
		d.emit(Event{Host: h.Name, Step: stepFailed, Version: version, Message: hr.Error})
		return fmt.Errorf("%s", hr.Error)
	}
	d.emit(Event{Host: h.Name, Step: stepRollback, Version: hr.From, Message: "rolling back to " + hr.From + ": " + cause.Error()})
	if rerr := d.rollBackHost(ctx, h, version, hr, cause); rerr != nil { // its outcome corrected there (notBack)
		hr.Error = fmt.Sprintf("%v; rollback failed too: %v", cause, rerr)
		d.emit(Event{Host: h.Name, Step: stepFailed, Message: hr.Error})
		return fmt.Errorf("%w; rollback failed too: %v: look at host %s", cause, rerr, h.Name)
	}
	d.emit(Event{Host: h.Name, Step: stepRolledBack, Version: hr.From, Message: "host runs " + orNothing(hr.Running) + " again"})
	return fmt.Errorf("%w; host %s rolled back to %s, rollout stopped", cause, h.Name, hr.From)
}

// vouched reports whether host h, deployed to version earlier in this deploy with its balanced
// service svc on target, still serves without a look on the host: in rotation and healthy
// directly; with named, the service also names version in its own answer (services[].verify:
// a version header or path; a service that cannot is not vouched for).
func (d *Deployer) vouched(ctx context.Context, h config.Host, svc config.Service, version, target string, named bool) bool {
	if !named {
		// At the target its step reported: a host over ssh has no runtime here for
		// currentTarget to read, and a start-first service moves between its two ports.
		ok, _ := d.servingNow(ctx, h, svc, knownTarget(h, svc, target))
		return ok
	}
	s, ok := spec.Render(d.cfg, h, version, d.self).Service(svc.Name)
	if !ok || s.VersionHeader == "" && s.VersionPath == "" {
		return false
	}
	if target != "" {
		s.Address = target // start-first: the port it was deployed on
	}
	return d.answers(ctx, h, s, true) == nil
}

// reverifyHost looks at one host finished earlier: nil when it still runs version, healthy
// directly and in rotation. For a local host it also returns the spec to roll back from.
func (d *Deployer) reverifyHost(ctx context.Context, h config.Host, version string) (spec.Spec, error) {
	if h.SSH != "" {
		v, err := d.remoteView(ctx, h, version)
		switch {
		case err != nil:
		case !v.instance: // its from is then only what it published
			err = fmt.Errorf("no instance runs (its published spec names %q): %s", v.from, v.detail)
		case !v.serving || v.from != version:
			err = fmt.Errorf("runs %q, serving %v: %s", v.from, v.serving, v.detail)
		}
		return spec.Spec{}, err
	}
	published, err := spec.Read(spec.Path(d.cfg.HostStateDir(h)))
	if err == nil && published.Version != version {
		err = fmt.Errorf("its published spec names %s", published.Version)
	}
	if err != nil {
		return spec.Render(d.cfg, h, version, d.self), err
	}
	return published, d.stillVerifies(ctx, h, d.runtimes[h.Name], published)
}

// stillVerifies is verify with the balancer's patience, for a host's last look before it counts
// as deployed (or rolled back) and for a host finished earlier: an instance
// the runtime no longer runs fails at once, but a failed health check or a target the balancer
// has out of rotation must persist for the balancer's own detection plus recovery plus one check
// (interval × (unhealthy_threshold + healthy_threshold + 1)) before the host counts as failed, so
// a check that timed out on a loaded machine does not roll back a healthy host.
func (d *Deployer) stillVerifies(ctx context.Context, h config.Host, rt Runtime, s spec.Spec) error {
	deadline := d.clock.Now().Add(d.patience())
	for {
		err := d.verify(ctx, h, rt, s)
		if err == nil || errors.Is(err, errNotRunning) || d.clock.Now().After(deadline) {
			return err
		}
		if serr := d.sleep(ctx, d.pollEvery()); serr != nil {
			return errors.Join(err, serr)
		}
	}
}
