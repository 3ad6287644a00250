package deployer

import (
	"context"
	"fmt"

	"github.com/zero502/zero502/deployer/balancer"
	"github.com/zero502/zero502/deployer/report"
	"github.com/zero502/zero502/infra/config"
	"github.com/zero502/zero502/infra/runtime"
)

// The balancer-side drain (services[].drain: balancer) is the handshake played by the deployer
// for a service that knows nothing of it (nginx, a Rails, Node or Python server: anything that
// exits on its stop signal and never answers 503 on health). The deployer takes the target out
// of rotation at the balancer itself (the in-house LB's admin API; ALB DeregisterTargets),
// waits until the balancer has nothing in flight to it, and only then sends the stop signal.

// drainAtBalancer takes target out of rotation at the balancer and waits until it is drained
// (nothing in flight), at most config.BalancerDrainWindow plus a few polls. A target still busy then
// is signalled anyway, and the event says how many requests that may cut: a request longer than
// the drain window (I9 keeps the window above balancer.header_timeout).
func (d *Deployer) drainAtBalancer(ctx context.Context, h config.Host, inst runtime.Instance, target string, tl *report.Timeline) error {
	rot, ok := d.bal.(balancer.Rotation)
	if !ok {
		return fmt.Errorf("host %s: service %s: drain: balancer needs a balancer the deployer can change (inhouse or alb); %s cannot",
			h.Name, inst.Service, d.bal.Name())
	}
	t0 := d.clock.Now()
	if err := rot.Drain(ctx, target); err != nil {
		return fmt.Errorf("host %s: service %s: drain %s at %s: %w; the old instance still runs and serves",
			h.Name, inst.Service, target, d.bal.Name(), err)
	}
	now := d.clock.Now()
	if tl != nil {
		tl.LeftRotation = now
	}
	d.emit(Event{Host: h.Name, Service: inst.Service, Step: stepLeftRotation, Version: inst.Version,
		Message: fmt.Sprintf("%s drained at the balancer by the deployer (drain: balancer) +%.2fs", target, now.Sub(t0).Seconds())})

	window := d.cfg.BalancerDrainWindow()
	deadline := t0.Add(window + 2*d.pollEvery())
	for {
		drained, err := rot.Drained(ctx, target)
		now := d.clock.Now()
		if err == nil && drained {
			d.emit(Event{Host: h.Name, Service: inst.Service, Step: stepLeftRotation, Version: inst.Version,
				Message: fmt.Sprintf("%s has nothing in flight at the balancer +%.2fs after the drain", target, now.Sub(t0).Seconds())})
			return nil
		}
		if now.After(deadline) {
			last := "still busy"
			if err != nil {
				last = err.Error()
			}
			d.emit(Event{Host: h.Name, Service: inst.Service, Step: stepLeftRotation, Version: inst.Version,
				Message: fmt.Sprintf("%s not drained after the drain window %s (%s): signalling anyway; a request still in flight may be cut",
					target, window, last)})
			return nil
		}
		if err := d.sleep(ctx, d.pollEvery()); err != nil {
			return fmt.Errorf("host %s: service %s: waiting for %s to drain: %w", h.Name, inst.Service, target, err)
		}
	}
}
