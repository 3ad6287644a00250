package deployer

import (
	"context"
	"fmt"
	"strings"
	"sync"

	"github.com/zero502/zero502/infra/config"
	"github.com/zero502/zero502/infra/healthcheck"
	"github.com/zero502/zero502/infra/spec"
)

// smoke sends the service's services[].smoke requests straight to its new instance (no
// balancer), one after another, and fails at the first answer that is not the expected one. It
// runs once the instance answers its health check and before the balancer sends it users.
func (d *Deployer) smoke(ctx context.Context, h config.Host, svc spec.Service, checks []config.SmokeRequest) error {
	for i, c := range checks {
		want := strings.ReplaceAll(c.ExpectBody, "{version}", svc.Version)
		a, err := healthcheck.Do(ctx, svc.Address, c.Method, c.Path, c.Body, "zero502-smoke", c.Timeout)
		switch {
		case err != nil:
			err = fmt.Errorf("no answer: %w", err)
		case a.Status != c.ExpectStatus:
			err = fmt.Errorf("answered %d, want %d", a.Status, c.ExpectStatus)
		case want != "" && !strings.Contains(string(a.Body), want):
			err = fmt.Errorf("answered %d without %q in its body (%.80q)", a.Status, want, a.Body)
		}
		if err != nil {
			return fmt.Errorf("host %s: service %s: new version %s failed services[].smoke[%d] %s %s on %s before taking traffic: %w",
				h.Name, svc.Name, svc.Version, i, c.Method, c.Path, svc.Address, err)
		}
		if len(checks) > 1 { // each one said: progress, within its own timeout
			d.emit(Event{Host: h.Name, Service: svc.Name, Step: stepSmoke, Version: svc.Version,
				Message: fmt.Sprintf("services[].smoke[%d] %s %s answered %d as expected", i, c.Method, c.Path, a.Status)})
		}
	}
	d.emit(Event{Host: h.Name, Service: svc.Name, Step: stepSmoke, Version: svc.Version,
		Message: fmt.Sprintf("%d smoke request(s) answered as expected on %s before it takes traffic", len(checks), svc.Address)})
	return nil
}

// trafficGate is what a host's step checks before a new instance takes users: its smoke requests
// and, for the balanced service, the pre_traffic hook. previous is the version the host ran.
type trafficGate struct {
	previous string
}

// gates reports whether service name has checks before traffic.
func (d *Deployer) gates(name string, balanced bool) bool {
	return len(d.smokeOf(name)) > 0 || balanced && d.cfg.Hooks.PreTraffic.Set()
}

// beforeTraffic runs svc's checks before traffic on its new instance, which answers its health
// check: the smoke requests, then (for the balanced service) hooks.pre_traffic.
func (d *Deployer) beforeTraffic(ctx context.Context, h config.Host, svc spec.Service, balanced bool, gate *trafficGate) error {
	if checks := d.smokeOf(svc.Name); len(checks) > 0 {
		if err := d.smoke(ctx, h, svc, checks); err != nil {
			return err
		}
	}
	if !balanced {
		return nil
	}
	if err := d.runHook(ctx, "pre_traffic", d.cfg.Hooks.PreTraffic, svc.Version, hostHookVars(h, svc.Name, svc.Address, gate.previous)); err != nil {
		return fmt.Errorf("host %s: service %s: new version %s on %s before taking traffic: %w", h.Name, svc.Name, svc.Version, svc.Address, err)
	}
	return nil
}

// postTraffic runs hooks.post_traffic on host h once its new version is in rotation, baked and
// verified; its failure rolls the host back.
func (d *Deployer) postTraffic(ctx context.Context, h config.Host, plan hostPlan) error {
	vars := map[string]string{HookEnvHost: h.Name, HookEnvPreviousVersion: plan.previous()}
	if bsvc, ok := d.cfg.BalancedService(); ok {
		if svc, ok := plan.want.Service(bsvc.Name); ok {
			vars = hostHookVars(h, svc.Name, svc.Address, plan.previous())
		}
	}
	if err := d.runHook(ctx, "post_traffic", d.cfg.Hooks.PostTraffic, plan.want.Version, vars); err != nil {
		return fmt.Errorf("host %s: %s in rotation: %w", h.Name, plan.want.Version, err)
	}
	return nil
}

// smokeOf is the configured smoke requests of service name.
func (d *Deployer) smokeOf(name string) []config.SmokeRequest {
	for _, s := range d.cfg.Services {
		if s.Name == name {
			return s.Smoke
		}
	}
	return nil
}

// heldOut are the targets the deployer drained at the balancer to keep a new instance from users
// until its smoke requests passed; whichever instance runs there next is added back once it
// started (the rollback's old one too).
type heldOut struct {
	mu      sync.Mutex
	targets map[string]bool
}

func (o *heldOut) hold(target string) {
	o.mu.Lock()
	defer o.mu.Unlock()
	if o.targets == nil {
		o.targets = map[string]bool{}
	}
	o.targets[target] = true
}

// release reports whether target was held and forgets it.
func (o *heldOut) release(target string) bool {
	o.mu.Lock()
	defer o.mu.Unlock()
	held := o.targets[target]
	delete(o.targets, target)
	return held
}
