package watchdog

import (
	"context"
	"fmt"

	"github.com/zero502/zero502/infra/healthcheck"
	"github.com/zero502/zero502/infra/runtime"
	"github.com/zero502/zero502/infra/spec"
)

// check returns "" when svc is healthy, else why not. A service with an address is checked by
// its own health rule as the spec publishes it (healthcheck: GET its health path on a fresh
// connection, never following a redirect, wanting exactly its expected status, within its
// health timeout; watchdog.check_timeout only when the spec carries no timeout); one without is
// checked by its instance's state and, where the runtime has one, its own health verdict. An
// error is a runtime that did not answer (the Docker daemon restarting): no verdict on svc.
func (w *Watchdog) check(ctx context.Context, svc spec.Service) (string, error) {
	if svc.Address != "" {
		return w.checkHTTP(ctx, svc), nil
	}
	return w.checkInstance(ctx, svc)
}

func (w *Watchdog) checkHTTP(ctx context.Context, svc spec.Service) string {
	return w.checkAt(ctx, svc, svc.Address)
}

// checkAt is checkHTTP of an instance of svc that answers at addr (svc's own rule).
func (w *Watchdog) checkAt(ctx context.Context, svc spec.Service, addr string) string {
	rule := svc.HealthRule()
	if rule.Path == "" {
		rule.Path = w.cfg.Balancer.HealthPath
	}
	if rule.Timeout <= 0 {
		rule.Timeout = w.cfg.Watchdog.CheckTimeout
	}
	if _, err := healthcheck.Check(ctx, addr, rule, "zero502-watchdog"); err != nil {
		return fmt.Sprintf("health http://%s%s: %v", addr, rule.Path, err)
	}
	return ""
}

func (w *Watchdog) checkInstance(ctx context.Context, svc spec.Service) (string, error) {
	insts, err := w.rt.List(ctx, runtime.Filter{Host: w.host.Name, Service: svc.Name})
	if err != nil {
		return "", fmt.Errorf("the runtime did not list the instances of %s: %w", svc.Name, err)
	}
	var last *runtime.Instance
	for i, in := range insts {
		if in.Running() && in.Health != "unhealthy" {
			return "", nil
		}
		last = &insts[i]
	}
	switch {
	case last == nil:
		return "no instance", nil
	case last.Running():
		return "runtime health: unhealthy", nil
	default:
		return fmt.Sprintf("not running (exit code %d)", last.ExitCode), nil
	}
}
