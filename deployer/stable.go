package deployer

import (
	"context"
	"errors"
	"fmt"
	"os"
	"strings"
	"time"

	"github.com/zero502/zero502/deployer/report"
	"github.com/zero502/zero502/infra/config"
	"github.com/zero502/zero502/infra/runtime"
	"github.com/zero502/zero502/infra/spec"
)

// fresh is an instance a converge started (or kept from an interrupted deploy), with when it
// first answered healthy: its stability window counts from there.
type fresh struct {
	inst runtime.Instance
	svc  spec.Service
	at   time.Time
}

// StabilityWindow is the bake: how long every new instance must stay up and healthy, counted
// from its first healthy answer, before its host is reported verified and the host lock
// released. It is rollout.bake, and never less than balancer.healthy_threshold ×
// balancer.interval, the time the balancer itself needs to trust a target. A version that passes
// its first health check and dies a moment later (the source's bug: a host left without its
// gateway while the deploy reported success) fails the step instead. The window overlaps the
// wait for the balancer, which already takes about as long, so the floor costs the balanced
// service next to nothing; a service the balancer does not see is held for the whole window.
func (d *Deployer) StabilityWindow() time.Duration {
	return max(d.cfg.Rollout.Bake, d.cfg.Balancer.Recovery())
}

// stable waits until every instance in started has been up for the bake, re-inspecting each one
// all along: it must still run, at its spec's version, and a service with a port must keep
// answering its health check, checked once per balancer.interval (balancer.unhealthy_threshold
// failures in a row fail it: the balancer's own rule at the balancer's own pace). An instance that exits fails the step at once, naming host, service and
// exit code.
func (d *Deployer) stable(ctx context.Context, h config.Host, rt Runtime, started []fresh) error {
	if len(started) == 0 {
		return nil
	}
	window := d.StabilityWindow()
	begin := d.clock.Now()
	failures := make([]int, len(started))
	checked := make([]time.Time, len(started)) // the balancer's pace: one health check per interval
	for {
		now := d.clock.Now()
		var wait time.Duration
		for i, f := range started {
			cur, err := rt.Inspect(ctx, f.inst.ID)
			if err != nil {
				return fmt.Errorf("host %s: service %s: re-inspect new instance %s during its bake: %w",
					h.Name, f.svc.Name, f.inst.ID, err)
			}
			up := now.Sub(f.at)
			exited := func(cur runtime.Instance) error {
				return fmt.Errorf("host %s: service %s: new version %s %s +%s after its first healthy answer, within its bake of %s "+
					"(rollout.bake, at least balancer.healthy_threshold %d × interval %s): it must stay up that long before the host counts as deployed%s",
					h.Name, f.svc.Name, f.svc.Version, exitedWith(cur.ExitCode), report.Round(d.clock.Now().Sub(f.at)), window,
					d.cfg.Balancer.HealthyThreshold, d.cfg.Balancer.Interval, logHint(rt, cur))
			}
			if !cur.Running() {
				return exited(cur)
			}
			if cur.Version != f.svc.Version {
				return fmt.Errorf("host %s: service %s: instance %s runs version %q, want %q", h.Name, f.svc.Name, f.inst.ID, cur.Version, f.svc.Version)
			}
			if f.svc.Port > 0 && !d.opts.Naive && now.Sub(checked[i]) >= d.cfg.Balancer.Interval {
				checked[i] = now
				if _, err := d.checkHealth(ctx, f.svc.Address, f.svc.HealthRule()); err != nil {
					failures[i]++
					if failures[i] >= d.cfg.Balancer.UnhealthyThreshold {
						if cur, ok := d.exitsWithin(ctx, rt, f.inst.ID, d.cfg.Balancer.Interval); ok {
							return exited(cur) // the checks failed because it is exiting: say so
						}
						return fmt.Errorf("host %s: service %s: new version %s failed its health check %d times in a row +%s into its bake of %s "+
							"(balancer.unhealthy_threshold %d): %w", h.Name, f.svc.Name, f.svc.Version, failures[i], report.Round(up), window,
							d.cfg.Balancer.UnhealthyThreshold, err)
					}
				} else {
					failures[i] = 0
				}
			}
			wait = max(wait, window-up)
		}
		if wait <= 0 {
			break
		}
		if err := d.sleep(ctx, min(wait, d.pollEvery())); err != nil {
			return fmt.Errorf("host %s: waiting out the bake: %w", h.Name, err)
		}
	}
	names := make([]string, 0, len(started))
	for _, f := range started {
		names = append(names, f.svc.Name)
	}
	d.emit(Event{Host: h.Name, Step: stepStable, Version: started[0].svc.Version, Message: fmt.Sprintf(
		"%s up and healthy for the bake %s (rollout.bake %s, at least healthy_threshold %d × interval %s), re-inspected (%s of it after the wait for health)",
		strings.Join(names, ", "), window, d.cfg.Rollout.Bake, d.cfg.Balancer.HealthyThreshold, d.cfg.Balancer.Interval, report.Round(d.clock.Now().Sub(begin)))})
	return nil
}

// exitsWithin re-inspects instance id until the runtime reports it ended or within has passed:
// a health streak that ends because the instance is exiting (its socket closed a moment before
// the runtime saw the exit) is reported as that exit, the cause, not as failed checks.
func (d *Deployer) exitsWithin(ctx context.Context, rt Runtime, id string, within time.Duration) (runtime.Instance, bool) {
	deadline := d.clock.Now().Add(within)
	for {
		cur, err := rt.Inspect(ctx, id)
		if err == nil && !cur.Running() {
			return cur, true
		}
		if err != nil || !d.clock.Now().Before(deadline) || d.sleep(ctx, min(within, d.pollEvery())) != nil {
			return runtime.Instance{}, false
		}
	}
}

// exitedWith says how an instance ended: "exited with code N" ("exited" when the runtime
// could not learn the code).
func exitedWith(code int) string {
	if code < 0 {
		return "exited"
	}
	return fmt.Sprintf("exited with code %d", code)
}

// logHint says where to read an instance's output: the end of the process runtime's log
// file, or the docker logs command of its container.
func logHint(rt Runtime, inst runtime.Instance) string {
	if lp, ok := rt.(interface{ LogPath(string) string }); ok {
		path := lp.LogPath(inst.Service)
		return fmt.Sprintf("; end of its log %s:\n%s", path, logTail(path, 8))
	}
	id := inst.ID
	if len(id) > 12 {
		id = id[:12]
	}
	return fmt.Sprintf("; see its output with `docker logs %s`", id)
}

// logTail is the last n lines of the file at path.
func logTail(path string, n int) string {
	data, err := os.ReadFile(path)
	if err != nil {
		return "(log unreadable: " + err.Error() + ")"
	}
	lines := strings.Split(strings.TrimRight(string(data), "\n"), "\n")
	if len(lines) > n {
		lines = lines[len(lines)-n:]
	}
	return strings.Join(lines, "\n")
}

// remover is a runtime that can forget an exited instance (a stopped container is removed).
type remover interface {
	Remove(ctx context.Context, inst runtime.Instance) error
}

// forget removes an old instance that stopped cleanly, so exited containers do not pile up
// deploy after deploy. One that had to be killed is kept for its logs. A failure to remove is
// reported as an event, never a deploy failure: the instance is stopped either way.
func (d *Deployer) forget(ctx context.Context, h config.Host, rt Runtime, inst runtime.Instance) {
	r, ok := rt.(remover)
	if !ok {
		return
	}
	if err := r.Remove(ctx, inst); err != nil && !errors.Is(err, runtime.ErrNotFound) {
		d.emit(Event{Host: h.Name, Service: inst.Service, Step: stepStopped, Version: inst.Version,
			Message: fmt.Sprintf("stopped, but removing %s failed (remove it by hand): %v", inst.ID, err)})
	}
}
