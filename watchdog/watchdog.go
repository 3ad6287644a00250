// Package watchdog owns the self-healing watchdog of a host: one tick per run (a systemd timer
// runs it every minute). A tick takes the host lock without waiting and skips when a deploy, or
// any flock(1) script, holds it, leaving every failure counter untouched; it reads the host's
// published spec (never writes it), checks every service (by its own health rule from the spec,
// package healthcheck, or by the instance's state for a service without a port), counts
// consecutive failures in a state file, and on the heal_after-th consecutive failure recreates
// the service from the spec. A service the spec marks stopped is never started. Each heal is one
// JSON log line and a counter in a Prometheus textfile. A heal that fails makes the tick fail
// (Report.Err, a non-zero exit that systemd flags) without stopping the heals of the host's other
// services. Invariant I5 says why a draining service is never healed.
package watchdog

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
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

// ErrHealFailed is wrapped by Report.Err when a heal of the tick failed.
var ErrHealFailed = errors.New("heal failed")

// Err is nil unless a heal of this tick failed; then it names every failed heal and wraps
// ErrHealFailed. The other services were still checked and healed.
func (r Report) Err() error {
	var failed []string
	for _, v := range r.Services {
		if v.HealError != "" {
			failed = append(failed, v.Service+": "+v.HealError)
		}
	}
	if len(failed) == 0 {
		return nil
	}
	return fmt.Errorf("host %s: %w: %s (the next failing tick tries again; fix the cause)",
		r.Host, ErrHealFailed, strings.Join(failed, "; "))
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
	// HealError says why a heal failed; the next failing tick tries again.
	HealError string `json:"heal_error,omitempty"`
}

// Tick runs one watchdog round on the host. Only a corrupt spec or an unwritable state dir is
// an error; an unhealthy service, a failed heal or a held lock are results (a failed heal is in
// Report.Err, so the command still exits non-zero).
func (w *Watchdog) Tick(ctx context.Context) (Report, error) {
	rep := Report{Host: w.host.Name, At: w.clock.Now().UTC()}
	lockPath := w.cfg.HostLockPath(w.host)
	lock, err := hostlock.TryAcquire(lockPath, hostlock.Holder{Who: spec.Holder(), Command: "zero502 watchdog"})
	if errors.Is(err, hostlock.ErrHeld) {
		holder := hostlock.ReadHolder(lockPath)
		rep.Skipped, rep.HeldBy = true, holder.String()
		attrs := []any{"lock", lockPath, "holder", holder.String()}
		if !holder.Since.IsZero() {
			attrs = append(attrs, "since", holder.Since)
		}
		w.log.Info("host lock held; skipping this tick, failure counters untouched", attrs...)
		return rep, nil
	}
	if err != nil {
		return rep, fmt.Errorf("host %s: %w", w.host.Name, err)
	}
	defer lock.Release()

	stateDir := w.cfg.HostStateDir(w.host)
	published, err := spec.Read(spec.Path(stateDir))
	if errors.Is(err, spec.ErrNone) {
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

// watch checks one service, updates its streak s in place and heals it on the heal_after-th
// consecutive failure.
func (w *Watchdog) watch(ctx context.Context, svc spec.Service, s *streak) Verdict {
	v := Verdict{Service: svc.Name}
	if svc.Stopped {
		v.Stopped, v.Healthy = true, true
		return v
	}
	now := w.clock.Now().UTC()
	reason := w.check(ctx, svc)
	if ctx.Err() != nil { // called off (SIGTERM, Ctrl-C): the check said nothing of the service
		v.Reason = "not checked: the tick was called off"
		return v
	}
	if reason == "" {
		s.LastCheck = now
		s.Failures, s.LastError = 0, ""
		v.Healthy = true
		return v
	}
	// A failure less than half an interval after the last counted check (a manual run, or
	// --loop, beside the timer, whose own ticks are at least 5/6 of an interval apart) is
	// reported but not counted: quick runs add at most one failure per half interval to a
	// streak. A clock that went back counts, and so does every failure once a heal was due (a
	// failed heal is tried again).
	if gap := now.Sub(s.LastCheck); s.Failures > 0 && s.Failures < w.cfg.Watchdog.HealAfter && gap >= 0 && gap < w.cfg.Watchdog.Interval/2 {
		v.Reason, v.Streak = fmt.Sprintf("%s (not counted: %s after the last counted check, under half of watchdog.interval %s)",
			reason, gap, w.cfg.Watchdog.Interval), s.Failures
		return v
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
		w.log.Error("heal failed; the next failing tick tries again", "service", svc.Name,
			"version", svc.Version, "consecutive_failures", s.Failures, "reason", reason, "error", err.Error())
		return v
	}
	s.Heals++
	s.LastHeal = now
	s.Failures, s.LastError = 0, ""
	v.Healed, v.Streak, v.Instance = true, 0, inst.ID
	w.log.Info("heal", "service", svc.Name, "version", svc.Version,
		"consecutive_failures", w.cfg.Watchdog.HealAfter, "reason", reason,
		"instance", inst.ID, "took_ms", took.Milliseconds(), "heals_total", s.Heals)
	return v
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
		case v.Healthy:
			parts = append(parts, v.Service+" ok")
		default:
			parts = append(parts, fmt.Sprintf("%s failing %d× (%s)", v.Service, v.Streak, v.Reason))
		}
	}
	return fmt.Sprintf("%s %s: %s", r.Host, r.Version, strings.Join(parts, ", "))
}
