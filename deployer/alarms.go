package deployer

import (
	"context"
	"errors"
	"fmt"
	"os"
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
	for {
		firing, err := d.alarms.Firing(ctx, d.cfg.Rollout.Alarms)
		var missing *alarms.MissingError
		if err != nil && !errors.As(err, &missing) {
			return fmt.Errorf("watch rollout.alarms for %s: %w", strings.Join(hosts, ", "), err)
		}
		if len(firing) > 0 || missing != nil {
			reason := describeAlarms(firing)
			if missing != nil {
				reason = strings.TrimPrefix(strings.Join([]string{reason, missing.Error()}, "; "), "; ")
			}
			v := Verdict{Reason: "rollout.alarms: " + reason}
			for i := b.first; i < b.end; i++ {
				rep.Hosts[i].Verdict = v.Reason
			}
			d.emit(Event{Step: stepFailed, Version: version, Message: strings.Join(hosts, ", ") + ": " + v.Reason})
			return &VerdictError{Hosts: hosts, Verdict: v}
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
