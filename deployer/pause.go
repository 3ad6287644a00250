package deployer

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/zero502/zero502/deployer/report"
	"github.com/zero502/zero502/deployer/ssh"
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
//
// The record lives where the fleet lock does, on rollout.lock_host: on a lock host reached over
// ssh it is read, written and removed there, through `zero502 host pause read|write|remove`
// (HostPause) with the config on stdin, as the lock is held through `zero502 host fleet-lock`;
// so a promote or abort from any machine finds it, and a deployer needs no local copy of the
// lock host's state dir.

// Pause is the record of a deploy paused after its canary (paused.json beside the fleet lock).
type Pause struct {
	Version string    `json:"version"`
	Canary  []string  `json:"canary"` // the canary's hosts
	Since   time.Time `json:"since"`
	By      string    `json:"by"` // the paused deploy's holder record
	// Holder is the paused deploy as the fleet lock's holder record names it: Decide tells by it
	// whether the deploy holding the lock is the paused one waiting for a decision, or another.
	Holder hostlock.Holder `json:"holder,omitzero"`
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

// readPause reads the pause record of cfg's fleet on this machine (ErrNotPaused when there is
// none).
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

// writePause writes the pause record of cfg's fleet on this machine, atomically, readable by
// its owner alone, as the fleet lock is.
func writePause(cfg *config.Config, p Pause) error {
	data, err := json.MarshalIndent(p, "", "  ")
	if err != nil {
		return err
	}
	return spec.WritePrivate(pausePath(cfg), append(data, '\n'))
}

// removePause removes the pause record of cfg's fleet on this machine; none there is no error.
func removePause(cfg *config.Config) error {
	if err := os.Remove(pausePath(cfg)); err != nil && !errors.Is(err, os.ErrNotExist) {
		return err
	}
	return nil
}

// Operations of `zero502 host pause` on the pause record, on the lock host.
const (
	PauseReadOp   = "read"
	PauseWriteOp  = "write"
	PauseRemoveOp = "remove"
)

// PauseLine is the one line `zero502 host pause` prints: where the record is, and the record
// (read), or that there is none (read, remove), or why the operation failed.
type PauseLine struct {
	Path      string `json:"path"`
	Pause     *Pause `json:"pause,omitempty"`
	NotPaused bool   `json:"not_paused,omitempty"`
	Error     string `json:"error,omitempty"`
}

// maxPauseRecord bounds the record `zero502 host pause write` reads on its stdin.
const maxPauseRecord = 1 << 20

// ErrPauseUsage marks a `zero502 host pause` asked wrongly (an unknown operation, a host that is
// not the lock host, a record that is not one): nothing was read or changed.
var ErrPauseUsage = errors.New("bad zero502 host pause request")

// HostPause is `zero502 host pause OP` on this machine, host name of cfg, which must be its
// rollout.lock_host: read, write (the record, one JSON line read from record) or remove the
// pause record beside the fleet lock. Its line says how it went; the error (wrapping
// ErrPauseUsage when the request itself is wrong) is the line's error too.
func HostPause(cfg *config.Config, name, op string, record io.Reader) (PauseLine, error) {
	line := PauseLine{Path: pausePath(cfg)}
	fail := func(err error) (PauseLine, error) {
		line.Error = err.Error()
		return line, err
	}
	lh, ok := cfg.FleetLockHost()
	switch {
	case !ok || lh.Name != name:
		return fail(fmt.Errorf("%w: --host %q is not this fleet's lock host (rollout.lock_host %q): the pause record lives beside the fleet lock; "+
			"run zero502 host pause on that host, with its name", ErrPauseUsage, name, lh.Name))
	case op == PauseReadOp:
		p, err := readPause(cfg)
		if errors.Is(err, ErrNotPaused) {
			line.NotPaused = true
			return line, nil
		}
		if err != nil {
			return fail(err)
		}
		line.Pause = &p
		return line, nil
	case op == PauseWriteOp:
		p, err := decodePause(record)
		if err != nil {
			return fail(err)
		}
		if err := writePause(cfg, p); err != nil {
			return fail(fmt.Errorf("write the pause record %s: %w; make its directory writable by this user or set rollout.lock_path", line.Path, err))
		}
		line.Pause = &p
		return line, nil
	case op == PauseRemoveOp:
		if _, err := os.Stat(line.Path); errors.Is(err, os.ErrNotExist) {
			line.NotPaused = true
			return line, nil
		}
		if err := removePause(cfg); err != nil {
			return fail(fmt.Errorf("remove the pause record: %w", err))
		}
		return line, nil
	}
	return fail(fmt.Errorf("%w: operation %q: must be %s, %s or %s", ErrPauseUsage, op, PauseReadOp, PauseWriteOp, PauseRemoveOp))
}

// decodePause reads one pause record, as JSON, from r, strictly: a record of another shape (a
// field misspelt, a decision neither promote nor abort) is refused, not half written.
func decodePause(r io.Reader) (Pause, error) {
	if r == nil {
		return Pause{}, fmt.Errorf("%w: write needs the record as JSON on stdin (after the config when --config -)", ErrPauseUsage)
	}
	dec := json.NewDecoder(io.LimitReader(r, maxPauseRecord))
	dec.DisallowUnknownFields()
	var p Pause
	if err := dec.Decode(&p); errors.Is(err, io.EOF) {
		return Pause{}, fmt.Errorf("%w: write needs the record as JSON on stdin; got nothing", ErrPauseUsage)
	} else if err != nil {
		return Pause{}, fmt.Errorf("%w: the record on stdin is not a pause record: %v", ErrPauseUsage, err)
	}
	switch {
	case strings.TrimSpace(p.Version) == "":
		return Pause{}, fmt.Errorf("%w: the record on stdin names no version (\"version\")", ErrPauseUsage)
	case len(p.Canary) == 0:
		return Pause{}, fmt.Errorf("%w: the record on stdin names no canary host (\"canary\")", ErrPauseUsage)
	case p.Decision != "" && p.Decision != Promote && p.Decision != Abort:
		return Pause{}, fmt.Errorf("%w: the record's decision %q: must be %s, %s or empty (still waiting)", ErrPauseUsage, p.Decision, Promote, Abort)
	}
	return p, nil
}

// remotePausePoll is the least time between two reads of the pause record on a lock host over
// ssh: each is an ssh session there.
const remotePausePoll = 500 * time.Millisecond

// pauseHost is the lock host that keeps the pause record when it is reached over ssh; false
// when the record is on this machine.
func (d *Deployer) pauseHost() (config.Host, bool) {
	h, ok := d.cfg.FleetLockHost()
	return h, ok && h.SSH != ""
}

// pauseWhere names the pause record in messages: its path, and its host when that is over ssh.
func (d *Deployer) pauseWhere() string {
	if h, remote := d.pauseHost(); remote {
		return fmt.Sprintf("%s on host %s (rollout.lock_host)", pausePath(d.cfg), h.Name)
	}
	return pausePath(d.cfg)
}

// pausePollEvery is how often a wait for the pause record reads it: every local poll, at most
// every remotePausePoll over ssh.
func (d *Deployer) pausePollEvery(local time.Duration) time.Duration {
	if _, remote := d.pauseHost(); remote {
		return max(local, remotePausePoll)
	}
	return local
}

// loadPause reads the fleet's pause record where it lives (ErrNotPaused when there is none).
func (d *Deployer) loadPause(ctx context.Context) (Pause, error) {
	h, remote := d.pauseHost()
	if !remote {
		return readPause(d.cfg)
	}
	l, err := d.remotePause(ctx, h, PauseReadOp, nil)
	switch {
	case err != nil:
		return Pause{}, err
	case l.NotPaused:
		return Pause{}, fmt.Errorf("%w (%s on host %s, rollout.lock_host, does not exist): deploy with --pause-after-canary first",
			ErrNotPaused, l.Path, h.Name)
	case l.Pause == nil:
		return Pause{}, fmt.Errorf("host %s (rollout.lock_host): zero502 host pause read printed no record: check that it runs this zero502 version "+
			"(zero502 host install --ssh %s)", h.Name, h.SSH)
	}
	return *l.Pause, nil
}

// savePause writes the fleet's pause record where it lives and says where that is. A write goes
// on after ctx ends (bounded over ssh): a paused deploy stopped meanwhile leaves its record for
// a later promote or abort.
func (d *Deployer) savePause(ctx context.Context, p Pause) (string, error) {
	h, remote := d.pauseHost()
	if !remote {
		return pausePath(d.cfg), writePause(d.cfg, p)
	}
	l, err := d.remotePause(context.WithoutCancel(ctx), h, PauseWriteOp, &p)
	if err != nil {
		return d.pauseWhere(), err
	}
	return fmt.Sprintf("%s on host %s (rollout.lock_host)", l.Path, h.Name), nil
}

// dropPause removes the fleet's pause record where it lives; none there is no error. It goes on
// after ctx ends (bounded over ssh), as savePause does.
func (d *Deployer) dropPause(ctx context.Context) error {
	h, remote := d.pauseHost()
	if !remote {
		return removePause(d.cfg)
	}
	_, err := d.remotePause(context.WithoutCancel(ctx), h, PauseRemoveOp, nil)
	return err
}

// remotePause runs `zero502 host pause OP` on lock host h over ssh, within lookWithin: the
// config on stdin (this host's entry, no admin token: the record needs nothing of the balancer,
// nor the services' secrets), then, for write, the record as one JSON line.
func (d *Deployer) remotePause(ctx context.Context, h config.Host, op string, p *Pause) (PauseLine, error) {
	ctx, cancel := context.WithTimeout(ctx, d.lookWithin())
	defer cancel()
	args := []string{"host", "pause", op, "--config", "-", "--host", h.Name}
	c := d.configFor(h, args)
	c.Balancer.AdminToken = ""
	cfgYAML, err := config.Encode(c)
	if err != nil {
		return PauseLine{}, fmt.Errorf("host %s: %w", h.Name, err)
	}
	input := configStream(cfgYAML, nil)
	if p != nil {
		rec, err := json.Marshal(p)
		if err != nil {
			return PauseLine{}, err
		}
		input = append(append(input, rec...), '\n')
	}
	var got *PauseLine
	s := ssh.Session{Host: h.Name, Target: h.SSH, SSH: d.opts.SSH, Binary: d.opts.RemoteBinary, Mux: d.mux, Args: args,
		Input: input, Budget: lookEndBudget, Line: func(b []byte) {
			var l PauseLine
			if json.Unmarshal(b, &l) == nil && l.Path != "" {
				got = &l
			}
		}}
	err = s.Run(ctx)
	where := "the pause record on host " + h.Name + " (rollout.lock_host)"
	switch {
	case got != nil && got.Error != "":
		return *got, fmt.Errorf("%s: %s", where, got.Error)
	case errors.Is(ctx.Err(), context.DeadlineExceeded) && got == nil:
		return PauseLine{}, fmt.Errorf("%s: zero502 host pause %s did not answer within %s; look at the host (is it reachable, is its zero502 stuck?), then try again: %w",
			where, op, d.lookWithin(), ssh.ErrUnreachable)
	case err != nil:
		return PauseLine{}, fmt.Errorf("%s: %w; check that the host is reachable over ssh and runs this zero502 version (zero502 host install --ssh %s)",
			where, err, h.SSH)
	case got == nil:
		return PauseLine{}, fmt.Errorf("%s: zero502 host pause %s printed no answer; check that the host runs this zero502 version (zero502 host install --ssh %s)",
			where, op, h.SSH)
	}
	return *got, nil
}

// readTries is how many reads in a row may fail before the deploy stops relying on them: of the
// pause record over ssh (the paused deploy stops waiting), of rollout.alarms (watchAlarms: the
// gate could not look, a failed verdict). One hiccup, an ssh session or a throttled
// DescribeAlarms, ends neither a pause nor a batch.
const readTries = 3

// pauseAfterCanary records the pause and waits, holding the fleet lock, until promote or abort
// decides (nil: go on) or ctx ends (the record stays for a later promote or abort, which then
// takes the lock itself).
func (d *Deployer) pauseAfterCanary(ctx context.Context, version string, rep *report.Report, b batch) (decision string, err error) {
	me := d.holder(version)
	p := Pause{Version: version, Since: d.clock.Now().UTC(), By: me.String(), Holder: me}
	p.From = map[string]string{}
	for i, h := range d.cfg.Hosts[b.first:b.end] {
		p.Canary = append(p.Canary, h.Name)
		p.From[h.Name] = rep.Hosts[b.first+i].From
	}
	where, err := d.savePause(ctx, p)
	if err != nil {
		return "", fmt.Errorf("record the pause after the canary: %w", err)
	}
	d.emit(Event{Step: stepPaused, Version: version, Message: fmt.Sprintf("paused after the canary (%s on %s, the rest on the old version): "+
		"zero502 deploy promote --config F rolls the rest, zero502 deploy abort --config F rolls the canary back (pause record %s)",
		version, strings.Join(p.Canary, ", "), where)})
	stopped := func(err error) error {
		return fmt.Errorf("paused after the canary, stopped waiting (%w): the fleet serves %s on %s; "+
			"zero502 deploy promote or zero502 deploy abort decides later", err, version, strings.Join(p.Canary, ", "))
	}
	_, remote := d.pauseHost()
	failed := 0
	for {
		got, err := d.loadPause(ctx)
		if err == nil && got.Decision != "" {
			if rerr := d.dropPause(ctx); rerr != nil && remote {
				d.emit(Event{Step: stepPaused, Version: version, Message: fmt.Sprintf("warning: %v; the %s goes on: remove the record there by hand "+
					"(zero502 host pause remove --config F --host NAME on that host)", rerr, got.Decision)})
			}
			d.emit(Event{Step: stepPaused, Version: version, Message: got.Decision + " by " + got.DecidedBy})
			return got.Decision, nil
		}
		switch {
		case errors.Is(err, ErrNotPaused):
			return "", fmt.Errorf("the pause record %s vanished: deploy again to go on", where)
		case err != nil && remote && ctx.Err() != nil:
			return "", stopped(ctx.Err())
		case err != nil && remote:
			if lost := d.fleetLost(); lost != nil {
				return "", fmt.Errorf("paused after the canary: %w", lost)
			}
			if failed++; failed >= readTries {
				return "", fmt.Errorf("paused after the canary, stopped waiting: %d reads of the pause record in a row failed, the last: %w; "+
					"the fleet serves %s on %s and the record stays: zero502 deploy promote or zero502 deploy abort decides later",
					failed, err, version, strings.Join(p.Canary, ", "))
			}
			d.emit(Event{Step: stepPaused, Version: version, Message: fmt.Sprintf("warning: %v; still paused, reading it again", err)})
		case err != nil:
			return "", err
		default:
			failed = 0
		}
		if err := d.sleep(ctx, d.pausePollEvery(d.pollEvery())); err != nil {
			return "", stopped(err)
		}
	}
}

// endPause removes the pause record of a deploy paused earlier and no longer waiting (it let go
// of the fleet lock this deploy holds), once this deploy passed its checks and is about to change
// the fleet: from here the fleet is this deploy's, and a promote or abort of that record later
// would undo it (promote the old paused version over it, or roll its canary hosts back). A deploy
// refused before this point leaves the record for the promote or abort it may be.
func (d *Deployer) endPause(version string) {
	ctx := context.Background() // the record's calls over ssh are bounded each (remotePause)
	if _, remote := d.pauseHost(); remote && d.lockedSaidPause && d.pausedAtLock == nil {
		return // the lock host said, as it gave this deploy the lock, that nothing is paused
	}
	p, err := d.loadPause(ctx)
	if errors.Is(err, ErrNotPaused) {
		return
	}
	if rerr := d.dropPause(ctx); rerr != nil {
		d.emit(Event{Step: stepPreflight, Version: version, Message: fmt.Sprintf("warning: the pause record %s could not be removed: %v; "+
			"remove it by hand: a promote or abort of it would undo this deploy", d.pauseWhere(), rerr)})
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
// abort rolls the canary hosts back to the spec each ran before. The record is read and written
// where it lives: on the lock host, over ssh when it has ssh.
func Decide(ctx context.Context, cfg *config.Config, decision string, opts Options, timeout time.Duration) (*report.Report, error) {
	probeOpts := opts
	probeOpts.NoLockWait, probeOpts.Events = true, nil
	probe := New(cfg, probeOpts)
	probe.action = "zero502 deploy " + decision
	lh, remote := probe.pauseHost()
	if remote { // the record's reads and the lock's probe go over one connection to the lock host
		probe.mux = ssh.NewMux(probe.opts.SSH)
		defer probe.mux.Close()
	}
	p, err := probe.loadPause(ctx)
	if err != nil {
		return nil, err
	}
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
			if rerr := d.dropPause(ctx); rerr != nil && remote {
				return rep, fmt.Errorf("the canary is back, but %w; remove the record there by hand (zero502 host pause remove --config F --host %s on that host): "+
					"a promote of it would deploy %s again", rerr, lh.Name, p.Version)
			}
		}
		return rep, err
	} else if !errors.Is(lerr, hostlock.ErrHeld) {
		return nil, fmt.Errorf("fleet lock %s: %w", cfg.FleetLockPath(), lerr)
	}
	if p.Holder.Who != "" { // a record from before Holder: take the holder for the paused deploy, as then
		// Another deploy holding the lock (the paused one was stopped) would never take the
		// decision, and, once past its checks, ends the pause: its record's removal must not read
		// as the decision taken.
		if st, serr := LockOp(ctx, cfg, LockStatusOp, "", opts); serr == nil && st.Deploy != nil && !isPausedDeploy(*st.Deploy, p.Holder) {
			return nil, fmt.Errorf("the fleet lock is held by %s, not by the paused deploy of %s (%s): nothing was decided; "+
				"a deploy that passes its checks ends the pause: wait for it to end (zero502 lock status), then see whether anything is still paused",
				st.Deploy, p.Version, p.By)
		}
	}
	p.Decision, p.DecidedBy = decision, me
	if _, err := probe.savePause(ctx, p); err != nil {
		return nil, err
	}
	deadline := time.Now().Add(timeout)
	var lastErr error // over ssh: the last read of the record that failed
	for time.Now().Before(deadline) {
		rctx, cancel := context.WithDeadline(ctx, deadline)
		_, err := probe.loadPause(rctx)
		cancel()
		if errors.Is(err, ErrNotPaused) {
			return nil, nil // the waiting deploy took it: its own output says how it went
		}
		if remote {
			lastErr = err
		}
		select {
		case <-ctx.Done():
			return nil, ctx.Err()
		case <-time.After(probe.pausePollEvery(100 * time.Millisecond)):
		}
	}
	if lastErr != nil {
		return nil, fmt.Errorf("the paused deploy (%s) holds the fleet lock, and the %s is recorded on host %s, but reading its record back failed within %s: %w; "+
			"zero502 lock status --config F shows whether the deploy still holds the lock", p.By, decision, lh.Name, timeout, lastErr)
	}
	return nil, fmt.Errorf("the paused deploy (%s) holds the fleet lock but did not take the %s within %s: the %s stays in its record, "+
		"and the deploy takes it when it next looks (if it was stopped meanwhile, run the command again once zero502 lock status shows the lock free)",
		p.By, decision, timeout, decision)
}

// isPausedDeploy reports whether holder, the fleet lock's holder record, is the paused deploy
// whose own record is paused: the same user and process (on a lock host over ssh, the record
// names the deployer's pid on its machine).
func isPausedDeploy(holder, paused hostlock.Holder) bool {
	if holder.Who != paused.Who {
		return false
	}
	return holder.PID == paused.PID || strings.Contains(holder.Command, fmt.Sprintf("pid %d on its machine", paused.PID))
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
					h.Name, d.pauseWhere(), p.Version))
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
