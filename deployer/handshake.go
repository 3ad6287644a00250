package deployer

import (
	"context"
	"errors"
	"fmt"
	"strings"

	"github.com/zero502/zero502/deployer/balancer"
	"github.com/zero502/zero502/deployer/report"
	"github.com/zero502/zero502/infra/config"
	"github.com/zero502/zero502/infra/runtime"
	"github.com/zero502/zero502/infra/spec"
)

// errStillInRotation is wrapped when a draining target had not left the balancer's rotation
// by the end of drain.window: the balancer would have sent requests to a stopped server.
var errStillInRotation = errors.New("target still in rotation at the balancer")

// stop ends inst, an instance of svc, through its drain. With drain: handshake it sends the
// stop signal (svc.stop_signal, SIGTERM by default) with grace drain.stop_grace (the app's
// /health answers 503 for drain.window while it keeps serving) and, when watch is set, polls the
// balancer's view of the target every interval/5 to record when it left rotation (at every
// instance of a tier: leftState). Not leaving before drain.window elapsed is a finding that
// stops the rollout; so is a SIGKILL (invariant I2). With drain: balancer the deployer first takes the target out of rotation at the balancer
// and waits until nothing is in flight to it (drainAtBalancer), and only then signals. A naive
// deploy kills at once (grace 0) without watching.
func (d *Deployer) stop(ctx context.Context, h config.Host, rt Runtime, inst runtime.Instance, svc spec.Service, watch bool, tl *report.Timeline) error {
	target := inst.Address
	if target == "" {
		target = svc.Address
	}
	signal := svc.StopSignal
	if signal == "" {
		signal = "SIGTERM"
	}
	grace := d.cfg.Drain.StopGrace
	step, msg := StepDrain, fmt.Sprintf("%s %s (pid/id %s), drain.window %s, stop_grace %s", signal, inst.Version, inst.ID, d.cfg.Drain.Window, grace)
	if d.opts.Naive {
		grace, watch = 0, false
		msg = fmt.Sprintf("naive: SIGKILL %s (pid/id %s) at once, no drain", inst.Version, inst.ID)
	}
	t0 := d.clock.Now()
	if tl != nil {
		tl.DrainStarted = t0
	}
	if watch && svc.Drain == config.DrainBalancer {
		if err := d.drainAtBalancer(ctx, h, inst, target, tl); err != nil {
			return err
		}
		watch = false // out of rotation already: the signal only ends the process
		msg = fmt.Sprintf("%s %s (pid/id %s) once drained at the balancer, stop_grace %s", signal, inst.Version, inst.ID, grace)
	}
	d.emit(Event{Host: h.Name, Service: inst.Service, Step: step, Version: inst.Version, Message: msg})

	type result struct {
		st  runtime.Stopped
		err error
	}
	done := make(chan result, 1)
	go func() {
		// A started stop runs to its end (bounded by the grace) even when the deploy is
		// cancelled, so the host is never left with a half-drained instance.
		st, err := rt.Stop(context.WithoutCancel(ctx), inst, grace)
		done <- result{st, err}
	}()

	var finding, cancelled error
	var res result
	stopped := false
	if watch {
		window := t0.Add(d.cfg.Drain.Window)
		var lastErr error
		var still []string // the balancer instances that still had it in rotation at the last look
		for {
			if cancelled = ctx.Err(); cancelled != nil {
				break // no view any more: the stop goes on, and the balancer's part is not known
			}
			st, in, err := d.leftState(ctx, target)
			if err == nil {
				still = in
			}
			now := d.clock.Now()
			if err == nil && !st.InRotation {
				if tl != nil {
					tl.LeftRotation = now
				}
				d.emit(Event{Host: h.Name, Service: inst.Service, Step: stepLeftRotation, Version: inst.Version,
					Message: fmt.Sprintf("%s %s at the balancer +%.2fs after SIGTERM (detection: interval %s × unhealthy_threshold %d = %s)",
						target, st.State, now.Sub(t0).Seconds(), d.cfg.Balancer.Interval, d.cfg.Balancer.UnhealthyThreshold, d.cfg.Balancer.Detection())})
				break
			}
			lastErr = err
			if now.After(window) {
				finding = fmt.Errorf("host %s: %s: %w at the end of drain.window %s after SIGTERM, though its detection "+
					"(interval × unhealthy_threshold) is %s: does the balancer check this health path?%s (last view: %s)",
					h.Name, target, errStillInRotation, d.cfg.Drain.Window, d.cfg.Balancer.Detection(), stillAt(still), viewString(st, lastErr))
				break
			}
			if stopped {
				finding = fmt.Errorf("host %s: %s: the old instance exited +%.2fs after SIGTERM with the %w: requests sent to it "+
					"went nowhere (502); its drain must outlast the balancer's detection, interval × unhealthy_threshold = %s (I1)%s "+
					"(last view: %s)", h.Name, target, now.Sub(t0).Seconds(), errStillInRotation, d.cfg.Balancer.Detection(), stillAt(still), viewString(st, lastErr))
				break
			}
			select {
			case res = <-done:
				stopped = true // look once more: did the balancer see it go?
			case <-d.clock.After(d.pollEvery()):
			case <-ctx.Done():
			}
		}
	}
	if !stopped {
		res = <-done
	}
	now := d.clock.Now()
	if tl != nil {
		tl.Stopped = now
	}
	switch {
	case res.err != nil && errors.Is(res.err, runtime.ErrKilled):
		return errors.Join(fmt.Errorf("host %s: service %s: old instance %s killed after drain.stop_grace %s "+
			"(invariant I2: drain.window %s + drain.shutdown %s must be < drain.stop_grace): %w",
			h.Name, inst.Service, inst.ID, grace, d.cfg.Drain.Window, d.cfg.Drain.Shutdown, res.err), finding)
	case res.err != nil:
		return errors.Join(fmt.Errorf("host %s: service %s: stop %s: %w", h.Name, inst.Service, inst.ID, res.err), finding)
	case res.st.Killed && grace > 0:
		return errors.Join(fmt.Errorf("host %s: service %s: old instance %s killed after drain.stop_grace %s: %w",
			h.Name, inst.Service, inst.ID, grace, runtime.ErrKilled), finding)
	}
	exit := fmt.Sprintf("exit %d", res.st.ExitCode)
	if res.st.ExitCode < 0 {
		exit = "exited" // another process reaped it: its code is unknown here
	}
	d.emit(Event{Host: h.Name, Service: inst.Service, Step: stepStopped, Version: inst.Version,
		Message: fmt.Sprintf("%s +%.2fs after the signal", exit, now.Sub(t0).Seconds())})
	if finding == nil {
		d.forget(context.WithoutCancel(ctx), h, rt, inst)
	}
	if cancelled != nil && finding == nil {
		return fmt.Errorf("host %s: service %s: the deploy was cancelled while %s drained: the old instance %s stopped (%s), "+
			"when the balancer took it out was not seen: %w", h.Name, inst.Service, target, inst.ID, exit, cancelled)
	}
	return finding
}

// leftState is the balancer's view of target for a drain: with several instances (a
// balancer.LeaveViewer, a Tier), out of rotation only once every instance took it out, and still
// naming the instances that have it in; a single balancer's TargetState otherwise.
func (d *Deployer) leftState(ctx context.Context, target string) (balancer.TargetState, []string, error) {
	if lv, ok := d.bal.(balancer.LeaveViewer); ok {
		return lv.LeftState(ctx, target)
	}
	st, err := d.bal.TargetState(ctx, target)
	return st, nil, err
}

// stillAt names the balancer instances that still route to a target, for a finding ("" when
// none is known).
func stillAt(still []string) string {
	if len(still) == 0 {
		return ""
	}
	return " (still routed to by " + strings.Join(still, ", ") + ")"
}

func viewString(st balancer.TargetState, err error) string {
	if err != nil {
		return err.Error()
	}
	return fmt.Sprintf("%s, in rotation %v, since %s", st.State, st.InRotation, st.Since.Format("15:04:05.000"))
}
