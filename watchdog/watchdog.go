// Package watchdog owns the self-healing watchdog of a host: one tick per run (a systemd timer
// runs it every watchdog.interval). A tick takes the host lock without waiting and skips when a
// deploy, or any flock(1) script, holds it, leaving every failure counter untouched; it reads the
// host's published spec (never writes it; with none, it fails when the host's configured
// services run anyway, since a deploy then published it at another state dir), checks every
// service (by its own health rule from the spec, package healthcheck, or by the instance's state
// for a service without a port), counts consecutive failures in a state file (one per
// watchdog.interval, whatever runs the ticks: notCounted), and on the heal_after-th consecutive
// failure recreates the service from the spec. A service the spec marks stopped is never
// started. Each heal is one JSON log line and a counter in a Prometheus textfile. A heal that
// fails makes the tick fail (Report.Err, a non-zero exit that systemd flags) without stopping the
// heals of the host's other services. Invariant I5 says why a draining service is never healed.
package watchdog

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/zero502/zero502/infra/clock"
	"github.com/zero502/zero502/infra/config"
	"github.com/zero502/zero502/infra/hostlock"
	"github.com/zero502/zero502/infra/runtime"
	"github.com/zero502/zero502/infra/spec"
)

// Runtime is what the watchdog needs of a host's runtime (docker or process): find the
// instances of a service, stop and remove them, start one from the spec.
type Runtime interface {
	Start(ctx context.Context, host string, svc spec.Service) (runtime.Instance, error)
	Stop(ctx context.Context, inst runtime.Instance, grace time.Duration) (runtime.Stopped, error)
	List(ctx context.Context, f runtime.Filter) ([]runtime.Instance, error)
	Remove(ctx context.Context, inst runtime.Instance) error
}

// Options are the watchdog's collaborators; zero values pick the production ones.
type Options struct {
	// Runtime runs the host's services; nil builds the one rollout.runtime names (runtimeFor).
	Runtime Runtime
	// Clock stamps ticks, streaks and heals; nil is the wall clock.
	Clock clock.Clock
	// Logger receives the tick's structured lines (one per heal); nil discards them.
	Logger *slog.Logger
}

// Watchdog watches one host.
type Watchdog struct {
	cfg   *config.Config
	host  config.Host
	rt    Runtime
	clock clock.Clock
	log   *slog.Logger
}

// New returns the watchdog of host h.
func New(cfg *config.Config, h config.Host, opts Options) (*Watchdog, error) {
	w := &Watchdog{cfg: cfg, host: h, rt: opts.Runtime, clock: opts.Clock, log: opts.Logger}
	if w.rt == nil {
		rt, err := runtimeFor(cfg, h)
		if err != nil {
			return nil, err
		}
		w.rt = rt
	}
	if w.clock == nil {
		w.clock = clock.Real{}
	}
	if w.log == nil {
		w.log = slog.New(slog.NewJSONHandler(io.Discard, nil))
	}
	w.log = w.log.With("host", h.Name)
	return w, nil
}

// Report is what one tick saw and did.
type Report struct {
	Host string    `json:"host"`
	At   time.Time `json:"at"`
	// Skipped is true when the host lock was held: nothing was checked or counted.
	Skipped bool `json:"skipped,omitempty"`
	// HeldBy names the lock's holder when Skipped.
	HeldBy string `json:"held_by,omitempty"`
	// NoSpec is true when the host has no published spec yet: nothing to watch.
	NoSpec bool `json:"no_spec,omitempty"`
	// Version is the published spec's version.
	Version  string    `json:"version,omitempty"`
	Services []Verdict `json:"services,omitempty"`
}

// Healed is how many services this tick recreated.
func (r Report) Healed() int {
	n := 0
	for _, v := range r.Services {
		if v.Healed {
			n++
		}
	}
	return n
}

// errAnotherServes: a heal was not done because an instance the spec does not name still passes.
var errAnotherServes = errors.New("not healed")

// ErrSpecElsewhere is wrapped by Tick's error when no spec is published at the host's state dir
// while instances of its configured services run: a past deploy published it elsewhere.
var ErrSpecElsewhere = errors.New("no published spec, but the host's services run")

// ErrHealFailed is wrapped by Report.Err when a heal of the tick failed.
var ErrHealFailed = errors.New("heal failed")

// ErrNotChecked is wrapped by Report.Err when a service could not be checked: its runtime did not
// answer (the Docker daemon down, a corrupt instance record). That is no verdict on the service,
// and is not counted towards a heal, but it is not silence either.
var ErrNotChecked = errors.New("not checked")

// Err is nil unless a heal of this tick failed or a service could not be checked; then it names
// each and wraps ErrHealFailed, ErrNotChecked or both. The other services were still checked and
// healed.
func (r Report) Err() error {
	var failed, unchecked []string
	for _, v := range r.Services {
		if v.HealError != "" {
			failed = append(failed, v.Service+": "+v.HealError)
		}
		if v.CheckError != "" {
			unchecked = append(unchecked, v.Service+": "+v.CheckError)
		}
	}
	var errs []error
	if len(failed) > 0 {
		errs = append(errs, fmt.Errorf("host %s: %w: %s (the first failing tick a watchdog.interval later tries again; fix the cause)",
			r.Host, ErrHealFailed, strings.Join(failed, "; ")))
	}
	if len(unchecked) > 0 {
		errs = append(errs, fmt.Errorf("host %s: %w: %s (not counted towards a heal; fix the runtime)",
			r.Host, ErrNotChecked, strings.Join(unchecked, "; ")))
	}
	return errors.Join(errs...)
}

// Verdict is one service's check and what followed.
type Verdict struct {
	Service string `json:"service"`
	// Stopped is true when the spec marks the service stopped: not checked, never started.
	Stopped bool `json:"stopped,omitempty"`
	Healthy bool `json:"healthy"`
	// Reason says why the check failed.
	Reason string `json:"reason,omitempty"`
	// Streak is the consecutive failures after this tick (0 after a success or a heal).
	Streak int `json:"consecutive_failures"`
	// Healed is true when the service was recreated from the spec in this tick.
	Healed bool `json:"healed,omitempty"`
	// Instance is the new instance's id after a heal.
	Instance string `json:"instance,omitempty"`
	// HealError says why a heal failed; the first failing tick a watchdog.interval later tries again.
	HealError string `json:"heal_error,omitempty"`
	// CheckError says why the service could not be checked (its runtime did not answer): no
	// verdict, not counted.
	CheckError string `json:"check_error,omitempty"`
}

// skip makes rep a tick skipped because the host lock at path is held, logged with its holder.
func (w *Watchdog) skip(rep *Report, path string) {
	holder := hostlock.ReadHolder(path)
	rep.Skipped, rep.HeldBy = true, holder.String()
	attrs := []any{"lock", path, "holder", holder.String()}
	if !holder.Since.IsZero() {
		attrs = append(attrs, "since", holder.Since)
	}
	w.log.Info("host lock held; skipping this tick, failure counters untouched", attrs...)
}

// Tick runs one watchdog round on the host. Only a corrupt spec, an unwritable state dir, or no
// spec while the host's services run (ErrSpecElsewhere; a fresh host, nothing running, is
// Report.NoSpec) is an error; an unhealthy service, a failed heal or a held lock are results (a
// failed heal is in Report.Err, so the command still exits non-zero).
func (w *Watchdog) Tick(ctx context.Context) (Report, error) {
	rep := Report{Host: w.host.Name, At: w.clock.Now().UTC()}
	lockPath := w.cfg.HostLockPath(w.host)
	lock, err := hostlock.TryAcquire(lockPath, hostlock.Holder{Who: spec.Holder(), Command: "zero502 watchdog"})
	if errors.Is(err, hostlock.ErrHeld) {
		w.skip(&rep, lockPath)
		return rep, nil
	}
	if err != nil {
		return rep, fmt.Errorf("host %s: %w", w.host.Name, err)
	}
	defer lock.Release()

	stateDir := w.cfg.HostStateDir(w.host)
	published, err := spec.Read(spec.Path(stateDir))
	if errors.Is(err, spec.ErrNone) {
		if err := w.unwatched(ctx, spec.Path(stateDir)); err != nil {
			return rep, err
		}
		rep.NoSpec = true
		w.log.Info("no published spec yet; nothing to watch (zero502 deploy publishes it)", "spec", spec.Path(stateDir))
		return rep, writeMetrics(stateDir, rep.At, streaks{})
	}
	if err != nil {
		return rep, fmt.Errorf("host %s: %w", w.host.Name, err)
	}
	if published.Host != w.host.Name {
		// Two hosts of the config share this state dir (or --host names the wrong one): healing
		// here would start another host's services under this host's name.
		return rep, fmt.Errorf("host %s: the spec at %s was published for host %q: refused to watch it as %s; "+
			"give each host of this machine its own hosts[].state_dir, or run the watchdog with --host %s",
			w.host.Name, spec.Path(stateDir), published.Host, w.host.Name, published.Host)
	}
	if other := published.LockPath; other != "" && !sameFile(other, lockPath) {
		// The deploy that published the spec holds another lock than this watchdog's config names
		// (the server's copy of the config differs from the deployer's): that lock is taken too,
		// so the watchdog never acts while the deploy holds it.
		w.log.Warn("the spec was published under another host lock than this watchdog's config names; taking it too: "+
			"make hosts[].lock_path and watchdog.lock_path in the server's config match the deployer's",
			"spec_lock", other, "config_lock", lockPath)
		theirs, err := hostlock.TryAcquire(other, hostlock.Holder{Who: spec.Holder(), Command: "zero502 watchdog"})
		if errors.Is(err, hostlock.ErrHeld) {
			w.skip(&rep, other)
			return rep, nil
		}
		if err != nil {
			return rep, fmt.Errorf("host %s: the spec at %s was published under the host lock %s, which this watchdog's config "+
				"does not name (it names %s), and taking it failed: %w; make hosts[].lock_path and watchdog.lock_path in the "+
				"server's config match the deployer's", w.host.Name, spec.Path(stateDir), other, lockPath, err)
		}
		defer theirs.Release()
	}
	rep.Version = published.Version

	st := w.loadStreaks(stateDir)
	st.since(published.PublishedAt)
	next := streaks{Host: w.host.Name, Spec: published.PublishedAt, Services: map[string]*streak{}}
	for _, svc := range published.Services {
		prev := st.get(svc.Name)
		v := w.watch(ctx, svc, prev)
		rep.Services = append(rep.Services, v)
		if !svc.Stopped {
			next.Services[svc.Name] = prev
		}
	}
	// Saved even when called off: what this tick did before (a heal) stays counted; a check it
	// cut short changed nothing (watch).
	next.UpdatedAt = rep.At
	if err := saveStreaks(stateDir, next); err != nil {
		return rep, fmt.Errorf("host %s: %w", w.host.Name, err)
	}
	if err := writeMetrics(stateDir, rep.At, next); err != nil {
		return rep, fmt.Errorf("host %s: %w", w.host.Name, err)
	}
	if err := ctx.Err(); err != nil {
		return rep, fmt.Errorf("host %s: the tick was called off before it finished (%w): the checks it cut short were not counted", w.host.Name, err)
	}
	return rep, nil
}

// unwatched is nil on a fresh host: no instance of a configured service runs (or the runtime
// could not say, which is logged). When some run while no spec is published at specPath, a deploy
// published it elsewhere (the server's config names another state dir than the deployer's), so
// the watchdog would watch nothing for ever: the error names the spec path and what runs, and
// wraps ErrSpecElsewhere. A first deploy publishes its spec under the host lock, which Tick holds,
// so a deploy in progress is never taken for this.
func (w *Watchdog) unwatched(ctx context.Context, specPath string) error {
	var running []string
	for _, svc := range w.cfg.Services {
		insts, err := w.rt.List(ctx, runtime.Filter{Host: w.host.Name, Service: svc.Name})
		if err != nil {
			w.log.Warn("no published spec, and the runtime could not list the instances of a configured service: "+
				"the tick cannot tell a fresh host from a spec published elsewhere", "spec", specPath, "service", svc.Name, "error", err.Error())
			return nil
		}
		for _, in := range insts {
			if in.Running() {
				running = append(running, fmt.Sprintf("%s %s, instance %s", in.Service, in.Version, in.ID))
			}
		}
	}
	if len(running) == 0 {
		return nil
	}
	return fmt.Errorf("host %s: %w (%s): none at %s, so a deploy published it elsewhere and this watchdog watches nothing; "+
		"make hosts[].state_dir (or watchdog.state_dir) in the server's config match the deployer's, "+
		"or deploy once with zero502 deploy to publish the spec at %s",
		w.host.Name, ErrSpecElsewhere, strings.Join(running, "; "), specPath, specPath)
}

// watch checks one service, updates its streak s in place and heals it on the heal_after-th
// consecutive failure.
func (w *Watchdog) watch(ctx context.Context, svc spec.Service, s *streak) Verdict {
	v := Verdict{Service: svc.Name}
	if svc.Stopped {
		v.Stopped, v.Healthy = true, true
		return v
	}
	now := w.clock.Now().UTC()
	reason, unanswered := w.check(ctx, svc)
	if ctx.Err() != nil { // called off (SIGTERM, Ctrl-C): the check said nothing of the service
		v.Reason = "not checked: the tick was called off"
		return v
	}
	if unanswered != nil { // the runtime said nothing of the service: neither healthy nor failing
		v.CheckError, v.Streak = unanswered.Error(), s.Failures
		w.log.Warn("check not made: the runtime did not answer; not counted", "service", svc.Name,
			"consecutive_failures", s.Failures, "error", unanswered.Error())
		return v
	}
	if reason == "" {
		s.LastCheck = now
		s.Failures, s.LastError, s.FailingSince = 0, "", time.Time{}
		v.Healthy = true
		return v
	}
	healAfter := w.cfg.Watchdog.HealAfter
	if s.Failures > 0 && s.FailingSince.IsZero() {
		// A streak counted by an older zero502, which did not record when it began: taken to
		// begin at its last counted failure, so it can only heal later, never sooner.
		s.FailingSince = s.LastCheck
	}
	if s.Failures > 0 { // past heal_after too: a heal that failed is tried again once per interval
		if why := w.notCounted(now, s); why != "" {
			v.Reason, v.Streak = fmt.Sprintf("%s (not counted: %s)", reason, why), s.Failures
			w.log.Info("check failed; not counted", "service", svc.Name, "consecutive_failures", s.Failures,
				"heal_after", healAfter, "reason", reason, "not_counted", why)
			return v
		}
	}
	switch {
	case s.Failures == 0:
		s.FailingSince = now
	case now.Before(s.LastCheck):
		// The wall clock went back: the failure counts, and the streak is taken to have begun
		// one watchdog.interval before each of its counted failures.
		s.FailingSince = now.Add(-config.MulDuration(w.cfg.Watchdog.Interval, s.Failures))
	}
	s.LastCheck = now
	s.Failures++
	s.LastError = reason
	v.Reason, v.Streak = reason, s.Failures
	if s.Failures < w.cfg.Watchdog.HealAfter {
		w.log.Info("check failed", "service", svc.Name, "consecutive_failures", s.Failures,
			"heal_after", w.cfg.Watchdog.HealAfter, "reason", reason)
		return v
	}
	inst, took, err := w.heal(ctx, svc)
	if err != nil {
		v.HealError = err.Error()
		w.log.Error("heal failed; the first failing tick a watchdog.interval later tries again", "service", svc.Name,
			"version", svc.Version, "consecutive_failures", s.Failures, "reason", reason, "error", err.Error())
		return v
	}
	s.Heals++
	s.LastHeal = now
	s.Failures, s.LastError, s.FailingSince = 0, "", time.Time{}
	v.Healed, v.Streak, v.Instance = true, 0, inst.ID
	w.log.Info("heal", "service", svc.Name, "version", svc.Version,
		"consecutive_failures", w.cfg.Watchdog.HealAfter, "reason", reason,
		"instance", inst.ID, "took_ms", took.Milliseconds(), "heals_total", s.Heals)
	return v
}

// CountTolerance is how much sooner than watchdog.interval after the last counted failure a
// failure still counts: a twentieth of the interval (3s of the shipped 60s). The systemd timer
// never runs a tick before it is due (it counts from the start of the last tick, OnUnitActiveSec=;
// AccuracySec= and RandomizedDelaySec= only ever delay it), so the ticks' starts are at least an
// interval apart; what the watchdog compares, though, are the times it checked the service, each
// later than its tick's start by the process's start and by the checks of the services before it
// (each up to its health timeout), which differ from tick to tick. A tolerance too small would
// make such a tick's failure not counted, and the heal one interval later; one too large would
// count a run by hand shortly before a timer tick. Neither makes a heal sooner than invariant I5
// counts on: the heal_after-th failure must come (heal_after − 1) × interval after the streak's
// first, with no tolerance (notCounted).
func CountTolerance(interval time.Duration) time.Duration { return interval / 20 }

// notCounted says why the failure of a service seen at now, s being its streak of counted
// failures (heal_after or more after a heal that failed), is not counted; "" when it counts. A
// failure counts once per watchdog.interval (less CountTolerance): a run by hand or `--loop`
// beside the timer, or a timer that ticks more often than watchdog.interval, adds no failure to a
// streak, nor tries a failed heal again sooner. And the
// heal_after-th counts only (heal_after − 1) × interval after the streak's first, so that a
// service is healed only after failing for longer than invariant I5 says a drain lasts, whatever
// ran the ticks and however the tolerances added up. A clock that went back counts.
func (w *Watchdog) notCounted(now time.Time, s *streak) string {
	interval, healAfter := w.cfg.Watchdog.Interval, w.cfg.Watchdog.HealAfter
	gap := now.Sub(s.LastCheck)
	if gap < 0 {
		return ""
	}
	if tol := CountTolerance(interval); gap < interval-tol {
		return fmt.Sprintf("%s after the last counted failure, under watchdog.interval %s less its %s tolerance: "+
			"a failure counts once per interval, so a run beside the timer (by hand or --loop), or a timer ticking more often "+
			"than watchdog.interval, never hastens a heal (I5); the timer's OnUnitActiveSec= should be watchdog.interval",
			gap, interval, tol)
	}
	if s.Failures+1 < healAfter {
		return ""
	}
	if patience, span := config.MulDuration(interval, healAfter-1), now.Sub(s.FailingSince); span < patience {
		return fmt.Sprintf("it would be failure %d of watchdog.heal_after %d, %s after the streak's first, under "+
			"(watchdog.heal_after − 1) × watchdog.interval %s = %s: a service failing for less may only be draining (I5); "+
			"the next failing check heals it",
			healAfter, healAfter, span, interval, patience)
	}
	return ""
}

// sameFile reports whether paths a and b name one file: by name, or by two names of one file (a
// link, /var/run and /run). The tick must not flock the lock it holds a second time under another
// name: the second flock would conflict with its own first, and every tick be skipped.
func sameFile(a, b string) bool {
	if filepath.Clean(a) == filepath.Clean(b) {
		return true
	}
	fa, errA := os.Stat(a)
	fb, errB := os.Stat(b)
	return errA == nil && errB == nil && os.SameFile(fa, fb)
}

// heal recreates svc from the published spec: whatever instance of it exists is stopped (with
// the stop grace) and removed, then one is started at the spec's version. Not while an instance
// at another address than the spec's still passes svc's check: that is a deploy cut short
// between its steps (a start-first deploy published the spec of an instance it had not started
// yet, or had not verified), and the instance that passes is the one the balancer routes to.
func (w *Watchdog) heal(ctx context.Context, svc spec.Service) (runtime.Instance, time.Duration, error) {
	start := time.Now()
	insts, err := w.rt.List(ctx, runtime.Filter{Host: w.host.Name, Service: svc.Name})
	if err != nil {
		return runtime.Instance{}, 0, fmt.Errorf("list instances of %s: %w", svc.Name, err)
	}
	for _, in := range insts {
		if in.Running() && in.Address != "" && in.Address != svc.Address && w.checkAt(ctx, svc, in.Address) == "" {
			return runtime.Instance{}, 0, fmt.Errorf("%w: %s %s at %s (instance %s) passes its check while the spec's %s at %s does not: "+
				"a deploy was cut short; finish it (zero502 deploy --version %s) or roll back (zero502 rollback)",
				errAnotherServes, svc.Name, in.Version, in.Address, in.ID, svc.Version, svc.Address, svc.Version)
		}
	}
	for _, in := range insts {
		// An exited one is stopped too: what its first process left in its process group (a
		// wrapper's server) may still hold the port, and its runtime removes it only once gone.
		if _, err := w.rt.Stop(ctx, in, w.cfg.Drain.StopGrace); err != nil && !errors.Is(err, runtime.ErrKilled) && !errors.Is(err, runtime.ErrNotFound) {
			return runtime.Instance{}, 0, fmt.Errorf("stop the old instance %s of %s: %w", in.ID, svc.Name, err)
		}
		if err := w.rt.Remove(ctx, in); err != nil {
			return runtime.Instance{}, 0, fmt.Errorf("remove the old instance %s of %s: %w", in.ID, svc.Name, err)
		}
	}
	inst, err := w.rt.Start(ctx, w.host.Name, svc)
	if err != nil {
		return runtime.Instance{}, 0, fmt.Errorf("start %s %s from the published spec: %w", svc.Name, svc.Version, err)
	}
	return inst, time.Since(start), nil
}

// String is the tick in one line for people: the host, then each service's verdict.
func (r Report) String() string {
	switch {
	case r.Skipped:
		return fmt.Sprintf("%s: skipped, the host lock is held by %s", r.Host, r.HeldBy)
	case r.NoSpec:
		return fmt.Sprintf("%s: no published spec yet, nothing to watch", r.Host)
	}
	parts := make([]string, 0, len(r.Services))
	for _, v := range r.Services {
		switch {
		case v.Stopped:
			parts = append(parts, v.Service+" stopped by the spec")
		case v.Healed:
			parts = append(parts, fmt.Sprintf("%s HEALED (%s)", v.Service, v.Reason))
		case v.HealError != "":
			parts = append(parts, fmt.Sprintf("%s heal FAILED: %s", v.Service, v.HealError))
		case v.CheckError != "":
			parts = append(parts, fmt.Sprintf("%s NOT CHECKED (not counted): %s", v.Service, v.CheckError))
		case v.Healthy:
			parts = append(parts, v.Service+" ok")
		default:
			parts = append(parts, fmt.Sprintf("%s failing %d× (%s)", v.Service, v.Streak, v.Reason))
		}
	}
	return fmt.Sprintf("%s %s: %s", r.Host, r.Version, strings.Join(parts, ", "))
}
