package deployer

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"time"

	"github.com/zero502/zero502/infra"
	"github.com/zero502/zero502/infra/runtime"
	"github.com/zero502/zero502/infra/spec"
)

// checkHealth GETs http://addr+path directly (no balancer) and wants 200.
func (d *Deployer) checkHealth(ctx context.Context, addr, path string) error {
	resp, err := d.get(ctx, addr, path)
	if err != nil {
		return err
	}
	if resp.StatusCode != http.StatusOK {
		return fmt.Errorf("answered %s", resp.Status)
	}
	return nil
}

// get is one direct GET on a fresh connection; the body is drained and closed.
func (d *Deployer) get(ctx context.Context, addr, path string) (*http.Response, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, "http://"+addr+path, nil)
	if err != nil {
		return nil, err
	}
	resp, err := d.client.Do(req)
	if err != nil {
		return nil, err
	}
	_, _ = io.Copy(io.Discard, io.LimitReader(resp.Body, 1<<20))
	resp.Body.Close()
	return resp, nil
}

// waitHealthy waits until inst answers its health check directly and, when watch is set, the
// balancer has it in rotation; bounded by rollout.healthy_deadline. The instance is inspected
// on every poll (startPoll: a new instance is watched closely), so one that exits meanwhile
// fails the step at once, naming host, service and exit code. It returns when the instance first
// answered healthy directly (its stability window counts from there).
func (d *Deployer) waitHealthy(ctx context.Context, h infra.Host, rt Runtime, inst runtime.Instance, svc spec.Service, watch bool, tl *Timeline) (time.Time, error) {
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
				round(d.clock.Now().Sub(begin)), d.cfg.Rollout.HealthyDeadline, logHint(rt, cur))
		case cur.Health == "unhealthy":
			last = fmt.Errorf("the runtime's health check says unhealthy")
		case !direct && svc.Port > 0:
			if err := d.checkHealth(ctx, svc.Address, svc.HealthPath); err != nil {
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
			d.emit(Event{Host: h.Name, Service: svc.Name, Step: StepHealthy, Version: svc.Version, Message: healthyMessage(svc)})
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
				d.emit(Event{Host: h.Name, Service: svc.Name, Step: StepInRotation, Version: svc.Version,
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
		if _, paced := d.bal.(PacedViewer); paced && direct {
			wait = d.pollEvery() // the next look is the balancer's view: an API call
		}
		if err := d.sleep(ctx, wait); err != nil {
			return time.Time{}, fmt.Errorf("host %s: service %s: waiting for health: %w", h.Name, svc.Name, err)
		}
	}
}

func healthyMessage(svc spec.Service) string {
	if svc.Port > 0 {
		return fmt.Sprintf("%s answers %s 200", svc.Address, svc.HealthPath)
	}
	return "running (no port: checked by its runtime state)"
}

// verify checks every service of host h against the spec s: exactly one running instance at
// the spec's version (none for a stopped service) and, for a service with a port, GET / names
// that version in X-Version.
func (d *Deployer) verify(ctx context.Context, h infra.Host, rt Runtime, s spec.Spec) error {
	for _, svc := range s.Services {
		insts, err := running(ctx, rt, h.Name, svc.Name)
		if err != nil {
			return err
		}
		if svc.Stopped {
			if len(insts) > 0 {
				return fmt.Errorf("host %s: verify: service %s must be stopped but %d instance(s) run", h.Name, svc.Name, len(insts))
			}
			continue
		}
		if len(insts) != 1 || insts[0].Version != svc.Version {
			var got []string
			for _, in := range insts {
				got = append(got, in.Version)
			}
			return fmt.Errorf("host %s: verify: service %s: want one running instance of %s, found %d %v",
				h.Name, svc.Name, svc.Version, len(insts), got)
		}
		if svc.Port == 0 {
			if insts[0].Health == "unhealthy" {
				return fmt.Errorf("host %s: verify: service %s: runtime health says unhealthy", h.Name, svc.Name)
			}
			continue
		}
		resp, err := d.get(ctx, svc.Address, "/")
		if err != nil {
			return fmt.Errorf("host %s: verify: service %s: GET / on %s: %w", h.Name, svc.Name, svc.Address, err)
		}
		if got := resp.Header.Get("X-Version"); got != svc.Version {
			return fmt.Errorf("host %s: verify: service %s: GET / on %s answered %s with X-Version %q, want %q",
				h.Name, svc.Name, svc.Address, resp.Status, got, svc.Version)
		}
	}
	return nil
}
