package deployer

import (
	"context"
	"errors"
	"fmt"
	"strings"

	"github.com/zero502/zero502/deployer/report"
	"github.com/zero502/zero502/infra/config"
	"github.com/zero502/zero502/infra/spec"
)

// rollBackFleet answers a failed verdict on the batch first..end: with rollout.on_failure
// rollback (the default) every host this deploy moved to the new version goes back to the spec
// it ran before, newest first, each under its host lock and through the same drain; with stop,
// only the judged batch does. A host this deploy found already on the version goes back too
// when it keeps the spec of another version from before (an earlier run of this version, cut
// short or paused, moved it there, maybe never judged): the verdict is on the version, not on
// the run. It returns the error the deploy ends with: the verdict, and which host runs what now.
func (d *Deployer) rollBackFleet(ctx context.Context, version string, rep *report.Report, first, end int, verdict error) error {
	from := first
	if d.cfg.Rollout.OnFailure == config.OnFailureRollback {
		from = 0
	}
	var back, failed []string
	var errs []error
	for i := end - 1; i >= from; i-- {
		hr := &rep.Hosts[i]
		h := d.cfg.Hosts[i]
		switch prev := d.previous[h.Name]; {
		case hr.Outcome == report.OutcomeUnchanged && prev != "":
			hr.From = prev // what the earlier run moved it from, and where it goes back to
		case hr.Outcome != report.OutcomeDeployed:
			continue // the rest never got the version, or kept nothing to go back to
		}
		if err := d.rollBackHost(ctx, h, version, hr, verdict); err != nil {
			errs = append(errs, err)
			failed = append(failed, fmt.Sprintf("%s (runs %s)", h.Name, orDefault(hr.Running, "what is unknown")))
			continue
		}
		back = append(back, fmt.Sprintf("%s runs %s", h.Name, orNothing(hr.Running)))
	}
	msg := fmt.Sprintf("%v; rollout.on_failure %s: ", verdict, d.cfg.Rollout.OnFailure)
	switch {
	case len(back) > 0:
		msg += "rolled back (" + strings.Join(back, ", ") + ")"
	case len(failed) == 0:
		msg += "no host to roll back"
	}
	if len(failed) > 0 {
		if len(back) > 0 {
			msg += "; "
		}
		msg += "the rollback failed on " + strings.Join(failed, ", ") + ": look at them"
	}
	return errors.Join(&rolledBackError{msg: msg, verdict: verdict}, errors.Join(errs...))
}

// fleetLostBefore is the error of a fleet-level change of host h (a rollback after cause) once
// the fleet lock was lost: another deploy may hold the fleet by now, so h is left as it is and
// its report says so. nil while the lock holds.
func (d *Deployer) fleetLostBefore(h config.Host, hr *report.HostReport, cause error) error {
	lost := d.fleetLost()
	if lost == nil {
		return nil
	}
	err := fmt.Errorf("host %s not rolled back (it runs %s): the fleet lock was lost (%w), and another deploy may hold the "+
		"fleet now; once the lock is yours, roll it back with zero502 rollback or deploy again", h.Name, orDefault(hr.Running, "what is unknown"), lost)
	if hr.Error == "" {
		hr.Error = fmt.Sprintf("%v; %v", cause, err)
	} else {
		hr.Error += "; " + err.Error()
	}
	return err
}

// rolledBackError is a failed verdict after the rollback it caused; errors.As finds the
// *VerdictError in it.
type rolledBackError struct {
	msg     string
	verdict error
}

func (e *rolledBackError) Error() string { return e.msg }
func (e *rolledBackError) Unwrap() error { return e.verdict }

// rollBackHost returns one host that finished its step on version to its last good spec: a
// local host under its lock through rollback; a host over ssh by a step back on the host, to
// the spec it keeps from before (host step --back).
func (d *Deployer) rollBackHost(ctx context.Context, h config.Host, version string, hr *report.HostReport, cause error) (err error) {
	if err := d.fleetLostBefore(h, hr, cause); err != nil {
		return err
	}
	ctx, clock := d.watchProgress(ctx, h) // a step back stalls as a step forward does
	defer clock.end(&err, &hr.Error)
	if h.SSH != "" {
		if hr.From == "" {
			return fmt.Errorf("host %s: nothing ran before %s to go back to: stop it with zero502 stop --host %s", h.Name, version, h.Name)
		}
		prev := *hr
		// The step back starts from what the host was last seen running (the new version, or
		// nothing claimed once a re-verify saw it not run it): a step that cannot reach the host
		// reports that, not the version it was to go back to.
		hr.From = prev.Running
		err := d.remoteStep(ctx, h, prev.From, hr, true)
		hr.From, hr.To = prev.From, prev.To
		if err != nil {
			notBack(hr)
			runs := orDefault(hr.Running, "what is unknown")
			hr.Error = fmt.Sprintf("%v; rollback to %s failed too: %v; it runs %s", cause, prev.From, err, runs)
			return fmt.Errorf("host %s: roll back to %s: %w; it runs %s", h.Name, prev.From, err, runs)
		}
		hr.Outcome, hr.Error, hr.Verdict = report.OutcomeRolledBack, cause.Error(), prev.Verdict
		return nil
	}
	rt := d.runtimes[h.Name]
	lock, err := d.lock(ctx, h, version)
	if err != nil {
		hr.Outcome, hr.Error = report.OutcomeFailed, fmt.Sprintf("%v; no rollback: %v", cause, err)
		return fmt.Errorf("host %s: %s", h.Name, hr.Error)
	}
	defer lock.Release()
	// Read under the host lock: what the host runs now is what its last holder published.
	published, err := spec.Read(spec.Path(d.cfg.HostStateDir(h)))
	if err != nil {
		published = spec.Render(d.cfg, h, version, d.self)
	}
	d.backsMu.Lock()
	back := d.backs[h.Name]
	d.backsMu.Unlock()
	verdict := hr.Verdict
	err = d.rollback(ctx, h, rt, back, published, hr, cause)
	hr.Verdict = verdict
	if hr.Outcome == report.OutcomeRolledBack {
		return nil
	}
	return err
}

// notBack corrects host hr's outcome after its step back to the version it ran before failed:
// whatever that step said of itself ("rolled back": to its own last good spec, the version it
// was to leave), the host is not back, so it is failed; unreachable or unknown already say what
// is known.
func notBack(hr *report.HostReport) {
	if hr.Outcome != report.OutcomeUnknown && hr.Outcome != report.OutcomeUnreachable {
		hr.Outcome = report.OutcomeFailed
	}
}

func orNothing(v string) string {
	if v == "" {
		return "nothing"
	}
	return v
}
