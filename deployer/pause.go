package deployer

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/zero502/zero502/deployer/report"
	"github.com/zero502/zero502/infra/config"
	"github.com/zero502/zero502/infra/hostlock"
	"github.com/zero502/zero502/infra/spec"
)

// A deploy with Options.PauseAfterCanary stops once the canary's verdict passed, with the fleet
// serving both versions, and records the pause in paused.json beside the fleet lock; it keeps
// holding the lock and waits there for a decision. `zero502 deploy promote` and `zero502 deploy
// abort`, from any shell, write the decision into that record, and the waiting deploy goes on or
// rolls the canary back. When no deploy waits any more (it was stopped), the command takes the
// fleet lock and does the work itself. The watchdog never fights a paused fleet: every host's
// published spec is what it runs.

// Pause is the record of a deploy paused after its canary (paused.json beside the fleet lock).
type Pause struct {
	Version string    `json:"version"`
	Canary  []string  `json:"canary"` // the canary's hosts
	Since   time.Time `json:"since"`
	By      string    `json:"by"` // the paused deploy's holder record
	// From is the version each canary host ran before the deploy, as its look saw it before its
	// step: a host over ssh keeps its previous spec there, out of reach of an abort that acts
	// itself.
	From map[string]string `json:"from,omitempty"`
	// Decision is "" while the deploy waits, then promote or abort.
	Decision string `json:"decision,omitempty"`
	// DecidedBy names who decided.
	DecidedBy string `json:"decided_by,omitempty"`
}

// Decisions on a paused deploy.
const (
	Promote = "promote"
	Abort   = "abort"
)

// ErrNotPaused says there is no paused deploy of this fleet to promote or abort.
var ErrNotPaused = errors.New("no deploy of this fleet is paused")

// pausePath is where a paused deploy of cfg's fleet is recorded.
func pausePath(cfg *config.Config) string {
	return filepath.Join(filepath.Dir(cfg.FleetLockPath()), "paused.json")
}

// readPause reads the pause record of cfg's fleet (ErrNotPaused when there is none).
func readPause(cfg *config.Config) (Pause, error) {
	data, err := os.ReadFile(pausePath(cfg))
	if errors.Is(err, os.ErrNotExist) {
		return Pause{}, fmt.Errorf("%w (%s does not exist): deploy with --pause-after-canary first", ErrNotPaused, pausePath(cfg))
	}
	if err != nil {
		return Pause{}, err
	}
	var p Pause
	if err := json.Unmarshal(data, &p); err != nil {
		return Pause{}, fmt.Errorf("pause record %s is corrupt: %w; remove it and deploy again", pausePath(cfg), err)
	}
	return p, nil
}

func writePause(cfg *config.Config, p Pause) error {
	data, err := json.MarshalIndent(p, "", "  ")
	if err != nil {
		return err
	}
	return spec.WriteAtomic(pausePath(cfg), append(data, '\n'))
}

// pauseAfterCanary records the pause and waits, holding the fleet lock, until promote or abort
// decides (nil: go on) or ctx ends (the record stays for a later promote or abort, which then
// takes the lock itself).
func (d *Deployer) pauseAfterCanary(ctx context.Context, version string, rep *report.Report, b batch) (decision string, err error) {
	p := Pause{Version: version, Since: d.clock.Now().UTC(), By: d.holder(version).String()}
	p.From = map[string]string{}
	for i, h := range d.cfg.Hosts[b.first:b.end] {
		p.Canary = append(p.Canary, h.Name)
		p.From[h.Name] = rep.Hosts[b.first+i].From
	}
	if err := writePause(d.cfg, p); err != nil {
		return "", fmt.Errorf("record the pause after the canary: %w", err)
	}
	d.emit(Event{Step: stepPaused, Version: version, Message: fmt.Sprintf("paused after the canary (%s on %s, the rest on the old version): "+
		"zero502 deploy promote --config F rolls the rest, zero502 deploy abort --config F rolls the canary back (pause record %s)",
		version, strings.Join(p.Canary, ", "), pausePath(d.cfg))})
	for {
		got, err := readPause(d.cfg)
		if err == nil && got.Decision != "" {
			_ = os.Remove(pausePath(d.cfg))
			d.emit(Event{Step: stepPaused, Version: version, Message: got.Decision + " by " + got.DecidedBy})
			return got.Decision, nil
		}
		if err != nil && !errors.Is(err, ErrNotPaused) {
			return "", err
		}
		if errors.Is(err, ErrNotPaused) {
			return "", fmt.Errorf("the pause record %s vanished: deploy again to go on", pausePath(d.cfg))
		}
		if err := d.sleep(ctx, d.pollEvery()); err != nil {
			return "", fmt.Errorf("paused after the canary, stopped waiting (%w): the fleet serves %s on %s; "+
				"zero502 deploy promote or zero502 deploy abort decides later", err, version, strings.Join(p.Canary, ", "))
		}
	}
}

// endPause removes the pause record of a deploy paused earlier and no longer waiting (it let go
// of the fleet lock this deploy holds), once this deploy passed its checks and is about to change
// the fleet: from here the fleet is this deploy's, and a promote or abort of that record later
// would undo it (promote the old paused version over it, or roll its canary hosts back). A deploy
// refused before this point leaves the record for the promote or abort it may be.
func (d *Deployer) endPause(version string) {
	p, err := readPause(d.cfg)
	if errors.Is(err, ErrNotPaused) {
		return
	}
	if rerr := os.Remove(pausePath(d.cfg)); rerr != nil && !errors.Is(rerr, os.ErrNotExist) {
		d.emit(Event{Step: stepPreflight, Version: version, Message: fmt.Sprintf("warning: the pause record %s could not be removed: %v; "+
			"remove it by hand: a promote or abort of it would undo this deploy", pausePath(d.cfg), rerr)})
		return
	}
	if err == nil {
		d.emit(Event{Step: stepPreflight, Version: version, Message: fmt.Sprintf("the deploy of %s paused after its canary (%s) is over: "+
			"this deploy of %s takes the fleet from here", p.Version, strings.Join(p.Canary, ", "), version)})
	}
}

// Decide promotes or aborts the paused deploy of cfg's fleet. When that deploy still waits
// (it holds the fleet lock), the decision is written into its record and Decide waits up to
// timeout for it to be taken; otherwise Decide takes the fleet lock and acts: promote deploys the
// paused version to the rest (the canary hosts, already on it, are verified, not redeployed),
// abort rolls the canary hosts back to the spec each ran before.
func Decide(ctx context.Context, cfg *config.Config, decision string, opts Options, timeout time.Duration) (*report.Report, error) {
	p, err := readPause(cfg)
	if err != nil {
		return nil, err
	}
	probeOpts := opts
	probeOpts.NoLockWait, probeOpts.Events = true, nil
	probe := New(cfg, probeOpts)
	probe.action = "zero502 deploy " + decision
	me := probe.holder(p.Version).String()
	if l, lerr := probe.fleetLock(ctx, p.Version); lerr == nil {
		// Nobody waits: act ourselves (Deploy and abort take the lock again). The record goes
		// once the decision is carried out: a promote's deploy removes it when it passed its
		// checks (endPause), an abort when the canary is back; refused or failed, it stays,
		// and the other decision can still be taken.
		_ = l.Release()
		if decision == Promote {
			return New(cfg, opts).Deploy(ctx, p.Version)
		}
		d := New(cfg, opts)
		d.action = "zero502 deploy abort"
		rep, err := d.abort(ctx, p)
		if err == nil {
			_ = os.Remove(pausePath(cfg))
		}
		return rep, err
	} else if !errors.Is(lerr, hostlock.ErrHeld) {
		return nil, fmt.Errorf("fleet lock %s: %w", cfg.FleetLockPath(), lerr)
	}
	p.Decision, p.DecidedBy = decision, me
	if err := writePause(cfg, p); err != nil {
		return nil, err
	}
	deadline := time.Now().Add(timeout)
	for time.Now().Before(deadline) {
		if _, err := readPause(cfg); errors.Is(err, ErrNotPaused) {
			return nil, nil // the waiting deploy took it: its own output says how it went
		}
		select {
		case <-ctx.Done():
			return nil, ctx.Err()
		case <-time.After(100 * time.Millisecond):
		}
	}
	return nil, fmt.Errorf("the paused deploy (%s) holds the fleet lock but did not take the %s within %s", p.By, decision, timeout)
}

// abort rolls the paused canary hosts back to the spec each ran before (kept beside its spec as
// previous.json), under the fleet lock and each host's lock, through the drain.
func (d *Deployer) abort(ctx context.Context, p Pause) (*report.Report, error) {
	d.started = d.clock.Now()
	rep := &report.Report{Version: p.Version, Started: d.started}
	for _, h := range d.cfg.Hosts {
		rep.Hosts = append(rep.Hosts, report.HostReport{Host: h.Name, To: p.Version, Outcome: report.OutcomeNotReached})
	}
	err := d.abortCanary(ctx, p, rep)
	d.readBack(ctx, rep)
	if d.fleet != nil {
		_ = d.fleet.Release()
	}
	rep.Duration = d.clock.Now().Sub(rep.Started)
	if err != nil {
		rep.Error = err.Error()
	}
	return rep, err
}

func (d *Deployer) abortCanary(ctx context.Context, p Pause, rep *report.Report) error {
	if err := d.setup(); err != nil {
		return err
	}
	fleet, err := d.fleetLock(ctx, p.Version)
	if err != nil {
		return err
	}
	d.fleet = fleet
	cause := fmt.Errorf("the deploy of %s paused after its canary was aborted", p.Version)
	var errs []error
	for i, h := range d.cfg.Hosts {
		if !contains(p.Canary, h.Name) {
			continue
		}
		hr := &rep.Hosts[i]
		hr.Outcome = report.OutcomeDeployed
		if h.SSH == "" {
			prev, err := spec.Read(filepath.Join(d.cfg.HostStateDir(h), previousFileName))
			if err != nil {
				errs = append(errs, fmt.Errorf("host %s: no previous spec to go back to (%w): deploy the version it should run", h.Name, err))
				continue
			}
			hr.From = prev.Version
			d.setBack(h, &prev)
		} else {
			from, ok := p.From[h.Name]
			if !ok {
				errs = append(errs, fmt.Errorf("host %s: the pause record %s does not say what it ran before %s: deploy the version it should run",
					h.Name, pausePath(d.cfg), p.Version))
				continue
			}
			hr.From = from // "" on a host fresh before the deploy: rollBackHost says there is nothing to go back to
		}
		if err := d.rollBackHost(ctx, h, p.Version, hr, cause); err != nil {
			errs = append(errs, err)
		}
	}
	return errors.Join(errs...) // the canary back where it was: the abort did what was asked
}

func contains(xs []string, x string) bool {
	for _, y := range xs {
		if y == x {
			return true
		}
	}
	return false
}

// PreviousVersion is the version `zero502 rollback` returns cfg's fleet to: what every host ran
// before its last deploy (the spec kept beside its published one). Hosts must agree; a host
// over ssh keeps its record there, so a fleet with one needs rollback --to.
func PreviousVersion(cfg *config.Config) (string, error) {
	var version, first string
	for _, h := range cfg.Hosts {
		if h.SSH != "" {
			return "", fmt.Errorf("host %s is reached over ssh: its previous spec is there; say which version with --to", h.Name)
		}
		prev, err := spec.Read(filepath.Join(cfg.HostStateDir(h), previousFileName))
		if err != nil {
			return "", fmt.Errorf("host %s has no previous version recorded (%w); say which version with --to", h.Name, err)
		}
		switch {
		case version == "":
			version, first = prev.Version, h.Name
		case prev.Version != version:
			return "", fmt.Errorf("the hosts ran different versions before (%s: %s, %s: %s); say which version with --to", first, version, h.Name, prev.Version)
		}
	}
	if version == "" {
		return "", errors.New("the config has no hosts")
	}
	return version, nil
}
