package deployer

import (
	"context"
	"errors"
	"fmt"
	"os"
	"slices"
	"strings"
	"time"

	"github.com/zero502/zero502/deployer/report"
	"github.com/zero502/zero502/infra/alarms"
)

// AlarmWatcher says which of the named CloudWatch alarms are in ALARM (*alarms.Watcher); a
// name that does not exist is an error, never a pass.
type AlarmWatcher interface {
	Firing(ctx context.Context, names []string) ([]alarms.Alarm, error)
}

// alarmWatcher is Options.Alarms, else a CloudWatch client in balancer.region (the endpoint in
// ZERO502_CLOUDWATCH_ENDPOINT when set); nil when rollout.alarms is empty.
func (d *Deployer) alarmWatcher(ctx context.Context) (AlarmWatcher, error) {
	if len(d.cfg.Rollout.Alarms) == 0 {
		return nil, nil
	}
	if d.opts.Alarms != nil {
		return d.opts.Alarms, nil
	}
	w, err := alarms.NewWatcher(ctx, d.cfg.Balancer.Region, strings.TrimSpace(os.Getenv(alarms.EnvEndpoint)))
	if err != nil {
		return nil, fmt.Errorf("rollout.alarms: %w", err)
	}
	return w, nil
}

// alarmsQuiet is preflight's look at rollout.alarms: every alarm exists and none is in ALARM
// now (a deploy into a firing alarm could never tell its own harm).
func (d *Deployer) alarmsQuiet(ctx context.Context) error {
	if d.alarms == nil {
		return nil
	}
	firing, err := d.alarms.Firing(ctx, d.cfg.Rollout.Alarms)
	if err != nil {
		return err
	}
	if len(firing) > 0 {
		return fmt.Errorf("rollout.alarms: %s before the deploy started; wait until it is OK, then deploy again", describeAlarms(firing))
	}
	return nil
}

// watchAlarms fails the batch's verdict when one of rollout.alarms is in ALARM: looked at every
// few seconds for window (when the analysis did not already watch the batch for it), and once at
// its end. It is the verdict behind a balancer that publishes no per-target outcomes (an ALB).
// A read that fails (throttled, CloudWatch unreachable) is tried again alarmPoll later; readTries
// in a row fail the verdict too: a gate that cannot look never passes a batch, and the failed
// verdict rolls it back as rollout.on_failure says, as CodeDeploy does when it cannot read its
// alarms and Argo Rollouts once its analysis's consecutiveErrorLimit is reached.
func (d *Deployer) watchAlarms(ctx context.Context, version string, rep *report.Report, b batch, window time.Duration, waited bool) error {
	if d.alarms == nil || d.opts.Naive {
		return nil
	}
	var hosts []string
	for _, hr := range rep.Hosts[b.first:b.end] {
		if hr.Outcome == report.OutcomeDeployed {
			hosts = append(hosts, hr.Host)
		}
	}
	if len(hosts) == 0 {
		return nil
	}
	end := d.clock.Now()
	if !waited {
		end = end.Add(window)
		d.emit(Event{Step: stepAnalysis, Version: version, Message: fmt.Sprintf("watching %s for %s: CloudWatch alarms %s must not fire (rollout.alarms)",
			strings.Join(hosts, ", "), window, strings.Join(d.cfg.Rollout.Alarms, ", "))})
	}
	fail := func(reason string) error {
		v := Verdict{Reason: "rollout.alarms: " + reason}
		for i := b.first; i < b.end; i++ {
			rep.Hosts[i].Verdict = v.Reason
		}
		d.emit(Event{Step: stepFailed, Version: version, Message: strings.Join(hosts, ", ") + ": " + v.Reason})
		return &VerdictError{Hosts: hosts, Verdict: v}
	}
	if fired := d.firedDuringSteps; len(fired) > 0 { // seen while the hosts took their steps: alarmsDuringSteps
		d.firedDuringSteps = nil
		return fail(describeAlarms(fired) + " while the hosts took their steps (drain, start, bake), though it may be OK again now")
	}
	failed := 0 // reads in a row that failed
	for {
		firing, err := d.alarms.Firing(ctx, d.cfg.Rollout.Alarms)
		var missing *alarms.MissingError
		switch {
		case err != nil && errors.As(err, &missing):
		case err != nil && ctx.Err() != nil: // called off: no verdict, as for any look called off
			return fmt.Errorf("watch rollout.alarms for %s: %w", strings.Join(hosts, ", "), err)
		case err != nil:
			if failed++; failed >= readTries {
				return fail(fmt.Sprintf("the alarm gate could not look: %d reads in a row failed, the last: %v; "+
					"a gate that cannot look never passes a batch: fix what the error names, then deploy again", failed, err))
			}
			d.emit(Event{Step: stepAnalysis, Version: version, Message: fmt.Sprintf("warning: %v; looking at rollout.alarms again in %s "+
				"(%d of %d reads in a row failed: %d fail the verdict)", err, alarmPoll, failed, readTries, readTries)})
			if err := d.sleep(ctx, alarmPoll); err != nil {
				return fmt.Errorf("watch rollout.alarms for %s: %w", strings.Join(hosts, ", "), err)
			}
			continue
		}
		failed = 0
		if len(firing) > 0 || missing != nil {
			reason := describeAlarms(firing)
			if missing != nil {
				reason = strings.TrimPrefix(strings.Join([]string{reason, missing.Error()}, "; "), "; ")
			}
			return fail(reason)
		}
		left := end.Sub(d.clock.Now())
		if left <= 0 {
			return nil
		}
		if err := d.sleep(ctx, min(left, alarmPoll)); err != nil {
			return fmt.Errorf("watch rollout.alarms for %s: %w", strings.Join(hosts, ", "), err)
		}
	}
}

// alarmsBefore looks at rollout.alarms once more before batch next rolls, prev the batch before
// it: an alarm that fired since prev was judged (during a pause after the canary, which may last
// hours, or between two batches) fails prev's verdict as it would have within its window, and
// next is never touched. A deploy into a firing alarm could never tell its own harm; preflight
// refuses one (alarmsQuiet), and a promote is no exception.
func (d *Deployer) alarmsBefore(ctx context.Context, version string, rep *report.Report, prev, next batch) error {
	if d.alarms == nil || d.opts.Naive || !deployedIn(rep, prev) {
		return nil
	}
	d.emit(Event{Step: stepAnalysis, Version: version, Message: fmt.Sprintf("before %s rolls: CloudWatch alarms %s must not fire (rollout.alarms), "+
		"else %s goes back", hostNames(d.cfg.Hosts[next.first:next.end]), strings.Join(d.cfg.Rollout.Alarms, ", "), hostNames(d.cfg.Hosts[prev.first:prev.end]))})
	return d.watchAlarms(ctx, version, rep, prev, 0, true)
}

// alarmsDuringSteps watches rollout.alarms every alarmPoll while the hosts of a batch take their
// steps (drain, start, bake), before the batch's window opens: an alarm that fires and clears
// meanwhile fails the batch's verdict all the same (watchAlarms, through d.firedDuringSteps), as
// CodeDeploy's alarms do at any time during a deployment. end stops the watch and returns the
// alarms seen in ALARM, each as first seen; a read that fails here is left to the window's own
// looks, which count failed reads.
func (d *Deployer) alarmsDuringSteps(ctx context.Context) (end func() []alarms.Alarm) {
	if d.alarms == nil || d.opts.Naive {
		return func() []alarms.Alarm { return nil }
	}
	ctx, cancel := context.WithCancel(ctx)
	var seen []alarms.Alarm
	done := make(chan struct{})
	go func() {
		defer close(done)
		for {
			if firing, err := d.alarms.Firing(ctx, d.cfg.Rollout.Alarms); err == nil {
				for _, a := range firing {
					if !slices.ContainsFunc(seen, func(s alarms.Alarm) bool { return s.Name == a.Name }) {
						seen = append(seen, a)
					}
				}
			}
			if d.sleep(ctx, alarmPoll) != nil {
				return
			}
		}
	}()
	return func() []alarms.Alarm {
		cancel()
		<-done
		return seen
	}
}

// alarmPoll is how often the alarms are looked at while a batch is watched (CloudWatch
// evaluates an alarm once per period, a minute at least for most metrics).
const alarmPoll = 2 * time.Second

func describeAlarms(as []alarms.Alarm) string {
	var parts []string
	for _, a := range as {
		parts = append(parts, a.String())
	}
	return strings.Join(parts, "; ")
}
