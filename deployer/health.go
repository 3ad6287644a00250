package deployer

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"strings"
	"time"

	"github.com/zero502/zero502/deployer/balancer"
	"github.com/zero502/zero502/deployer/report"
	"github.com/zero502/zero502/infra/config"
	"github.com/zero502/zero502/infra/healthcheck"
	"github.com/zero502/zero502/infra/runtime"
	"github.com/zero502/zero502/infra/spec"
)

// checkHealth runs a service's health rule against addr directly (no balancer): one GET of its
// path on a fresh connection, never following a redirect, wanting exactly its status, within its
// timeout (d.checkTimeout when the rule has none). The answer (status, header, bounded body) is
// returned for a version check.
func (d *Deployer) checkHealth(ctx context.Context, addr string, rule healthcheck.Rule) (healthcheck.Answer, error) {
	if rule.Timeout <= 0 {
		rule.Timeout = d.checkTimeout
	}
	return healthcheck.Check(ctx, addr, rule, "")
}

// get is one direct GET of path on addr, the way a health check asks (healthcheck.Get), within
// d.checkTimeout.
func (d *Deployer) get(ctx context.Context, addr, path string) (healthcheck.Answer, error) {
	return healthcheck.Get(ctx, addr, path, "", d.checkTimeout)
}

// waitHealthy waits until inst answers its health check directly and, when watch is set, the
// balancer has it in rotation; bounded by rollout.healthy_deadline. The instance is inspected
// on every poll (startPoll: a new instance is watched closely), so one that exits meanwhile
// fails the step at once, naming host, service and exit code. It returns when the instance first
// answered healthy directly (its stability window counts from there).
func (d *Deployer) waitHealthy(ctx context.Context, h config.Host, rt Runtime, inst runtime.Instance, svc spec.Service, watch bool, tl *report.Timeline) (time.Time, error) {
	begin := d.clock.Now()
	deadline := begin.Add(d.cfg.Rollout.HealthyDeadline)
	var last error
	direct, saidHealthy := false, false
	var healthyAt time.Time
	for {
		cur, err := rt.Inspect(ctx, inst.ID)
		switch {
		case errors.Is(err, runtime.ErrNotFound):
			return time.Time{}, fmt.Errorf("host %s: service %s: new version %s (%s) vanished from its runtime before it was healthy: %w",
				h.Name, svc.Name, svc.Version, inst.ID, err)
		case err != nil:
			last = fmt.Errorf("inspect %s: %w", inst.ID, err)
		case !cur.Running():
			return time.Time{}, fmt.Errorf("host %s: service %s: new version %s %s +%s after its start, before it was healthy "+
				"(not waiting out rollout.healthy_deadline %s)%s", h.Name, svc.Name, svc.Version, exitedWith(cur.ExitCode),
				report.Round(d.clock.Now().Sub(begin)), d.cfg.Rollout.HealthyDeadline, logHint(rt, cur))
		case cur.Health == "unhealthy":
			last = fmt.Errorf("the runtime's health check says unhealthy")
		case !direct && svc.Port > 0:
			if _, err := d.checkHealth(ctx, svc.Address, svc.HealthRule()); err != nil {
				last = fmt.Errorf("direct %s on %s: %w", svc.HealthPath, svc.Address, err)
				break
			}
			direct = true
		case !direct && (cur.Health == "" || cur.Health == "healthy"):
			direct = true
		}
		if direct && !saidHealthy {
			saidHealthy = true
			healthyAt = d.clock.Now()
			if tl != nil {
				tl.HealthyDirect = d.clock.Now()
			}
			d.emit(Event{Host: h.Name, Service: svc.Name, Step: stepHealthy, Version: svc.Version, Message: healthyMessage(svc)})
		}
		if direct && last == nil {
			if !watch {
				return healthyAt, nil
			}
			st, err := d.bal.TargetState(ctx, svc.Address)
			switch {
			case err != nil:
				last = err
			case st.InRotation:
				if tl != nil {
					tl.BackInRotation = d.clock.Now()
				}
				d.emit(Event{Host: h.Name, Service: svc.Name, Step: stepInRotation, Version: svc.Version,
					Message: fmt.Sprintf("%s healthy directly and back in rotation at %s", svc.Address, d.bal.Name())})
				return healthyAt, nil
			default:
				last = fmt.Errorf("healthy directly but the balancer says %s", st.State)
			}
		}
		if d.clock.Now().After(deadline) {
			return time.Time{}, fmt.Errorf("host %s: service %s: new version %s not healthy after rollout.healthy_deadline %s (last check: %w)",
				h.Name, svc.Name, svc.Version, d.cfg.Rollout.HealthyDeadline, last)
		}
		last = nil
		wait := d.startPoll()
		if _, paced := d.bal.(balancer.PacedViewer); paced && direct {
			wait = d.pollEvery() // the next look is the balancer's view: an API call
		}
		if err := d.sleep(ctx, wait); err != nil {
			return time.Time{}, fmt.Errorf("host %s: service %s: waiting for health: %w", h.Name, svc.Name, err)
		}
	}
}

func healthyMessage(svc spec.Service) string {
	if svc.Port > 0 {
		return fmt.Sprintf("%s answers %s %d", svc.Address, svc.HealthPath, svc.HealthRule().Want())
	}
	return "running (no port: checked by its runtime state)"
}

// errNotRunning is wrapped by verify when the runtime itself contradicts the spec (the instance
// exited, or another version runs): no later look can change that, unlike a health check or the
// balancer's view, which may be passing trouble.
var errNotRunning = errors.New("the runtime does not run the spec's instance")

// verify checks every service of host h against the spec s, which is what "this host runs
// version V" means: the runtime runs exactly one instance of it, started from V's spec, on its
// address (none for a stopped service); a service with a port answers its health check directly
// and, the balanced one, is in rotation at the balancer; and where services[].verify asks, the
// service itself names V (a header on its health answer, or a body on a version path). Nothing
// assumes GET / answers anything in particular.
func (d *Deployer) verify(ctx context.Context, h config.Host, rt Runtime, s spec.Spec) error {
	bsvc, balanced := d.cfg.BalancedService()
	for _, svc := range s.Services {
		insts, err := running(ctx, rt, h.Name, svc.Name)
		if err != nil {
			return err
		}
		if svc.Stopped {
			if len(insts) > 0 {
				return fmt.Errorf("host %s: verify: service %s must be stopped but %d instance(s) run: %w", h.Name, svc.Name, len(insts), errNotRunning)
			}
			continue
		}
		if len(insts) != 1 || !insts[0].Runs(svc) {
			var got []string
			for _, in := range insts {
				one := in.Version + "@" + in.Address
				if in.Digest != "" && in.Digest != svc.Digest() {
					one += " started from another config (digest " + in.Digest + ")"
				}
				got = append(got, one)
			}
			return fmt.Errorf("host %s: verify: service %s: want one running instance of %s on %s, started from the published config (digest %s), found %d %v: %w",
				h.Name, svc.Name, svc.Version, svc.Address, svc.Digest(), len(insts), got, errNotRunning)
		}
		if svc.Port == 0 {
			if insts[0].Health == "unhealthy" {
				return fmt.Errorf("host %s: verify: service %s: runtime health says unhealthy", h.Name, svc.Name)
			}
			continue
		}
		if err := d.answers(ctx, h, svc, balanced && svc.Name == bsvc.Name); err != nil {
			return err
		}
	}
	return nil
}

// answers is verify's part that asks the service and the balancer, not the runtime: svc answers
// its health check directly on its address, names its version where services[].verify asks,
// and, when balanced, is in rotation at the balancer.
func (d *Deployer) answers(ctx context.Context, h config.Host, svc spec.Service, balanced bool) error {
	answer, err := d.checkHealth(ctx, svc.Address, svc.HealthRule())
	if err != nil {
		return fmt.Errorf("host %s: verify: service %s: GET %s on %s: %w", h.Name, svc.Name, svc.HealthPath, svc.Address, err)
	}
	if svc.VersionHeader != "" {
		if got := answer.Header.Get(svc.VersionHeader); got != svc.Version {
			return fmt.Errorf("host %s: verify: service %s: GET %s on %s answered %s %q, want %q (services[].verify.version_header)",
				h.Name, svc.Name, svc.HealthPath, svc.Address, svc.VersionHeader, got, svc.Version)
		}
	}
	if svc.VersionPath != "" {
		a, err := d.get(ctx, svc.Address, svc.VersionPath)
		switch {
		case err != nil:
			return fmt.Errorf("host %s: verify: service %s: GET %s on %s: %w", h.Name, svc.Name, svc.VersionPath, svc.Address, err)
		case a.Status != http.StatusOK || !strings.Contains(string(a.Body), svc.ExpectBody):
			return fmt.Errorf("host %s: verify: service %s: GET %s on %s answered %d %.80q, want 200 with %q (services[].verify)",
				h.Name, svc.Name, svc.VersionPath, svc.Address, a.Status, a.Body, svc.ExpectBody)
		}
	}
	if balanced && d.view && !d.opts.Naive {
		st, err := d.bal.TargetState(ctx, svc.Address)
		if err != nil {
			return fmt.Errorf("host %s: verify: service %s: %w", h.Name, svc.Name, err)
		}
		if !st.InRotation {
			return fmt.Errorf("host %s: verify: service %s: %s is not in rotation at %s (it says %s)", h.Name, svc.Name, svc.Address, d.bal.Name(), st.State)
		}
	}
	return nil
}
