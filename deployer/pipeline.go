package deployer

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"sync"
	"time"

	"github.com/zero502/zero502/deployer/report"
	"github.com/zero502/zero502/deployer/ssh"
	"github.com/zero502/zero502/infra/config"
	"github.com/zero502/zero502/infra/spec"
)

// The rollout pipeline, top to bottom, as docs/ARCHITECTURE.md tells it ("The data path of a
// deploy"): Deploy sets up the report and ends with the read-back, the hooks and the fleet
// lock's release; deploy refuses a bad version, builds the balancer and the runtimes (setup),
// resolves the secrets, takes the fleet lock (fleetlock.go), runs preflight (preflight.go), then
// goes batch by batch: the lock still held, rollout.alarms looked at again (alarms.go: one that
// fires rolls the batches done back, a promote included), the hosts done re-verified
// (reverify.go) and I8 on the live fleet, the canary's weight (canary.go), each host's step in
// parallel (deployHost), the batch judged by what users got (canary.go, analysis.go) and rolled
// back on a failed verdict (fleet_rollback.go), the pause after the canary (pause.go); and a
// last re-verify.
// deployHost is one host's step: host lock, plan (host.go), image pull, publish, converge
// through the drain (host.go, handshake.go, balancer_drain.go), wait healthy and bake
// (health.go, stable.go), verify, the post-traffic hook, or the rollback (host.go). A host over
// ssh runs the same step there (remote.go, through package deployer/ssh).

// Deploy rolls every host to version, batch by batch, and returns the report. The error is a
// *refusedError when preflight refused (no host touched), else the first host's failure (that
// host rolled back, the rollout stopped); the report says which host runs which version.
func (d *Deployer) Deploy(ctx context.Context, version string) (*report.Report, error) {
	d.started = d.clock.Now()
	d.mux = ssh.NewMux(d.opts.SSH)
	defer d.mux.Close()
	rep := &report.Report{Version: version, Naive: d.opts.Naive, Started: d.started}
	for _, h := range d.cfg.Hosts {
		rep.Hosts = append(rep.Hosts, report.HostReport{Host: h.Name, To: version, Outcome: report.OutcomeNotReached})
	}
	err := d.deploy(ctx, version, rep)
	d.turns.abandonAll(10 * time.Second) // the steps preflight opened that no batch took: nothing changed there
	d.readBack(ctx, rep)
	if err == nil {
		if herr := d.runHook(ctx, "post_deploy", d.cfg.Hooks.PostDeploy, version, map[string]string{HookEnvRunning: runningList(rep)}); herr != nil {
			err = fmt.Errorf("every host runs %s, verified, and stays on it, but %w", version, herr)
		}
	}
	var refused *refusedError
	if err != nil && !errors.As(err, &refused) {
		// Said even when the deploy was interrupted: the hook's own timeout bounds it.
		_ = d.runHook(context.WithoutCancel(ctx), "on_failure", d.cfg.Hooks.OnFailure, version,
			map[string]string{HookEnvRunning: runningList(rep), HookEnvError: err.Error()})
	}
	if d.fleet != nil {
		_ = d.fleet.Release()
	}
	rep.Duration = d.clock.Now().Sub(d.started)
	if err != nil {
		rep.Error = err.Error()
		rep.Refused = refused != nil
		if !rep.Refused {
			d.emit(Event{Step: stepFailed, Message: err.Error(), Version: version})
		}
	}
	return rep, err
}

func (d *Deployer) deploy(ctx context.Context, version string, rep *report.Report) error {
	if err := CheckVersion("--version", version); err != nil {
		return &refusedError{Reasons: []string{err.Error()}}
	}
	if err := d.setup(); err != nil {
		return &refusedError{Reasons: []string{err.Error()}}
	}
	if err := d.resolveSecrets(ctx, version); err != nil {
		return &refusedError{Reasons: []string{err.Error()}}
	}
	for _, n := range d.cfg.ComposeNotes {
		d.emit(Event{Step: stepPreflight, Version: version, Message: "services_from: not as Compose would: " + n})
	}
	fleet, err := d.fleetLock(ctx, version)
	if err != nil {
		return err
	}
	d.fleet = fleet
	defer d.unweighCanary(ctx, version)
	views, err := d.preflight(ctx, version)
	if err != nil {
		return err
	}
	if err := d.runHook(ctx, "pre_deploy", d.cfg.Hooks.PreDeploy, version, nil); err != nil {
		return &refusedError{Reasons: []string{err.Error() + "; nothing was changed on any host"}}
	}
	if reasons := d.checkPrograms(version); len(reasons) > 0 { // after pre_deploy: it may install them
		for _, r := range reasons {
			d.emit(Event{Step: stepRefused, Message: r, Version: version})
		}
		return &refusedError{Reasons: reasons}
	}
	d.endPause(version)
	d.previous = map[string]string{}
	for i, h := range d.cfg.Hosts {
		rep.Hosts[i].From = views[i].from
		if views[i].previous != "" {
			d.previous[h.Name] = views[i].previous
		}
	}
	var prev batch // the batch before b
	for _, b := range d.batches() {
		start, end := b.first, b.end
		if err := ctx.Err(); err != nil { // cancelled: the hosts done stay as verified; none is judged by a look that was called off
			return fmt.Errorf("rollout stopped before %s: %w", hostNames(d.cfg.Hosts[start:end]), err)
		}
		if err := d.fleetLost(); err != nil {
			return fmt.Errorf("rollout stopped before %s: %w", hostNames(d.cfg.Hosts[start:end]), err)
		}
		if start > 0 && !d.opts.Naive { // a naive deploy does not wait for rotation, nor look
			if err := d.alarmsBefore(ctx, version, rep, prev, b); err != nil {
				err = fmt.Errorf("rollout stopped before %s: %w", hostNames(d.cfg.Hosts[start:end]), err)
				var verdict *VerdictError
				if !errors.As(err, &verdict) {
					return err
				}
				return d.rollBackFleet(ctx, version, rep, prev.first, prev.end, err)
			}
			if err := d.reverify(ctx, version, rep, start); err != nil {
				return fmt.Errorf("rollout stopped before %s: %w", hostNames(d.cfg.Hosts[start:end]), err)
			}
			if err := d.batchLeavesHealthy(ctx, version, start, end, nil); err != nil {
				return fmt.Errorf("rollout stopped before %s: %w", hostNames(d.cfg.Hosts[start:end]), err)
			}
		}
		d.weighCanaryAhead(ctx, version, b)
		endAlarmWatch := d.alarmsDuringSteps(ctx)
		errs := make([]error, end-start)
		var wg sync.WaitGroup
		for i := start; i < end; i++ {
			wg.Add(1)
			go func() {
				defer wg.Done()
				errs[i-start] = d.deployHost(ctx, d.cfg.Hosts[i], version, &rep.Hosts[i])
			}()
		}
		wg.Wait()
		d.firedDuringSteps = endAlarmWatch()
		if err := errors.Join(errs...); err != nil {
			return err
		}
		var slowest time.Duration
		for _, hr := range rep.Hosts[start:end] {
			slowest = max(slowest, hr.Floor)
		}
		judged, err := d.judgeBatch(ctx, version, rep, b)
		d.firedDuringSteps = nil // judged by it, or no verdict to fail
		rep.Floor += slowest + judged
		rep.Judged += judged
		if err != nil {
			var verdict *VerdictError
			if !errors.As(err, &verdict) {
				return err
			}
			return d.rollBackFleet(ctx, version, rep, start, end, err)
		}
		if d.pausesAfterCanary(b) && judged > 0 { // never without a verdict that passed (canaryNotJudged)
			decision, err := d.pauseAfterCanary(ctx, version, rep, b)
			if err != nil {
				return err
			}
			if decision == Abort {
				return d.rollBackFleet(ctx, version, rep, start, end, fmt.Errorf("the deploy of %s paused after its canary was aborted", version))
			}
			d.unweighCanary(ctx, version) // weighed through the pause; promoted, it takes its full share beside the rest
		}
		prev = b
	}
	if d.opts.Naive {
		return nil
	}
	if err := ctx.Err(); err != nil {
		return fmt.Errorf("every host was deployed, but the last re-verify was cancelled: %w", err)
	}
	if err := d.reverify(ctx, version, rep, len(d.cfg.Hosts)); err != nil {
		return fmt.Errorf("every host was deployed, but: %w", err)
	}
	return nil
}

// deployHost is one host's step: lock, publish, swap each service through its drain, verify,
// release. On failure the host is rolled back to its last good spec, which survives any failed
// step.
func (d *Deployer) deployHost(ctx context.Context, h config.Host, version string, rep *report.HostReport) (err error) {
	ctx, clock := d.watchProgress(ctx, h)
	defer clock.end(&err, &rep.Error)
	if h.SSH != "" {
		return d.remoteStep(ctx, h, version, rep, false) // the same step, run on the host (remote.go)
	}
	rt := d.runtimes[h.Name]
	lock, err := d.lock(ctx, h, version)
	if err != nil { // its batch reached it, its step failed before changing anything: not "not reached"
		rep.Outcome, rep.Error = report.OutcomeUntouched, err.Error()
		return err
	}
	defer func() {
		lock.Release()
		d.emit(Event{Host: h.Name, Step: stepDone, Version: rep.Running, Message: rep.Outcome})
	}()
	begin := d.clock.Now()
	defer func() { rep.Duration = d.clock.Now().Sub(begin) }()

	plan, err := d.plan(ctx, h, rt, version)
	if err != nil {
		rep.Outcome, rep.Error = report.OutcomeUntouched, err.Error()
		return err
	}
	if plan.resume {
		if err := d.verify(ctx, h, rt, plan.want); err == nil {
			d.setBack(h, plan.back)
			rep.Outcome, rep.Running, rep.Target = report.OutcomeUnchanged, version, d.targetOf(plan.want)
			d.emit(Event{Host: h.Name, Step: stepUnchanged, Version: version,
				Message: "already runs " + version + " as published, healthy and in rotation: verified, not redeployed"})
			return nil
		}
	}
	if err := d.ensureImages(ctx, h, rt, plan.want); err != nil {
		rep.Outcome, rep.Error = report.OutcomeUntouched, err.Error()
		return err
	}

	dir := d.cfg.HostStateDir(h)
	specPath, prevPath := spec.Path(dir), filepath.Join(dir, previousFileName)
	switch {
	case plan.back != nil && !spec.Same(*plan.back, plan.want):
		if err := d.publish(h, prevPath, *plan.back); err != nil {
			err := fmt.Errorf("host %s: keep the previous spec: %w; nothing was changed on it", h.Name, err)
			rep.Outcome, rep.Error = report.OutcomeUntouched, err.Error()
			return err
		}
	case plan.back == nil:
		_ = os.Remove(prevPath) // a leftover of a host that was wiped, and its secret values
		_ = os.Remove(spec.SecretsPath(prevPath))
	}
	if err := d.publish(h, specPath, plan.want); err != nil {
		err := fmt.Errorf("host %s: publish spec %s: %w; nothing was changed on it", h.Name, specPath, err)
		rep.Outcome, rep.Error = report.OutcomeUntouched, err.Error()
		return err
	}
	d.emit(Event{Host: h.Name, Step: StepPublish, Version: version, Message: "spec published at " + specPath})

	err = d.converge(ctx, h, rt, plan.want, plan.resume, &trafficGate{previous: plan.previous()}, &rep.Timeline)
	if err == nil {
		err = d.stillVerifies(ctx, h, rt, plan.want)
	}
	if err == nil {
		err = d.postTraffic(ctx, h, plan)
	}
	if err == nil {
		d.setBack(h, plan.back)
		rep.Outcome, rep.Running, rep.Target = report.OutcomeDeployed, version, d.targetOf(plan.want)
		rep.Floor = d.StabilityWindow()
		if bsvc, ok := d.cfg.BalancedService(); !rep.Timeline.DrainStarted.IsZero() && (!ok || bsvc.Drain == config.DrainHandshake) {
			rep.Floor += d.cfg.Drain.Window // the handshake waits its window out; a balancer-side drain only until nothing is in flight
		}
		d.emit(Event{Host: h.Name, Step: stepVerified, Version: version, Message: "every service runs " + version})
		return nil
	}
	rep.Floor = 0
	return d.rollback(ctx, h, rt, plan.back, plan.want, rep, err)
}
