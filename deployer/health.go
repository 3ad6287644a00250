package deployer

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strings"
	"time"

	"github.com/zero502/zero502/infra"
	"github.com/zero502/zero502/infra/runtime"
	"github.com/zero502/zero502/infra/spec"
)

// healthCheck is a service's direct health check (services[].health).
type healthCheck struct {
	Path    string
	Status  int
	Timeout time.Duration
}

// checkOf is the health check of a published service.
func checkOf(svc spec.Service) healthCheck {
	return healthCheck{Path: svc.HealthPath, Status: svc.HealthStatus, Timeout: svc.HealthTimeout}
}

// configCheck is the health check of a configured service.
func configCheck(svc infra.Service) healthCheck {
	return healthCheck{Path: svc.Health.Path, Status: svc.Health.ExpectStatus, Timeout: svc.Health.Timeout}
}

// checkHealth GETs http://addr+path directly (no balancer), within the check's timeout, and
// wants its status (200 unless the config says otherwise). The response (body read) is returned
// for a version check.
func (d *Deployer) checkHealth(ctx context.Context, addr string, hc healthCheck) (*http.Response, []byte, error) {
	if hc.Timeout > 0 {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, hc.Timeout)
		defer cancel()
	}
	resp, body, err := d.get(ctx, addr, hc.Path)
	if err != nil {
		return nil, nil, err
	}
	want := hc.Status
	if want == 0 {
		want = http.StatusOK
	}
	if resp.StatusCode != want {
		return resp, body, fmt.Errorf("answered %s, want %d", resp.Status, want)
	}
	return resp, body, nil
}

// get is one direct GET on a fresh connection; the body (up to 1 MiB) is read and closed.
func (d *Deployer) get(ctx context.Context, addr, path string) (*http.Response, []byte, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, "http://"+addr+path, nil)
	if err != nil {
		return nil, nil, err
	}
	resp, err := d.client.Do(req)
	if err != nil {
		return nil, nil, err
	}
	body, err := io.ReadAll(io.LimitReader(resp.Body, 1<<20))
	resp.Body.Close()
	if err != nil {
		return nil, nil, fmt.Errorf("read the answer of GET %s on %s: %w", path, addr, err)
	}
	return resp, body, nil
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
			if _, _, err := d.checkHealth(ctx, svc.Address, checkOf(svc)); err != nil {
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
		return fmt.Sprintf("%s answers %s %d", svc.Address, svc.HealthPath, max(svc.HealthStatus, 200))
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
func (d *Deployer) verify(ctx context.Context, h infra.Host, rt Runtime, s spec.Spec) error {
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
		if len(insts) != 1 || insts[0].Version != svc.Version || insts[0].Address != "" && svc.Address != "" && insts[0].Address != svc.Address {
			var got []string
			for _, in := range insts {
				got = append(got, in.Version+"@"+in.Address)
			}
			return fmt.Errorf("host %s: verify: service %s: want one running instance of %s on %s, found %d %v: %w",
				h.Name, svc.Name, svc.Version, svc.Address, len(insts), got, errNotRunning)
		}
		if svc.Port == 0 {
			if insts[0].Health == "unhealthy" {
				return fmt.Errorf("host %s: verify: service %s: runtime health says unhealthy", h.Name, svc.Name)
			}
			continue
		}
		resp, _, err := d.checkHealth(ctx, svc.Address, checkOf(svc))
		if err != nil {
			return fmt.Errorf("host %s: verify: service %s: GET %s on %s: %w", h.Name, svc.Name, svc.HealthPath, svc.Address, err)
		}
		if svc.VersionHeader != "" {
			if got := resp.Header.Get(svc.VersionHeader); got != svc.Version {
				return fmt.Errorf("host %s: verify: service %s: GET %s on %s answered %s %q, want %q (services[].verify.version_header)",
					h.Name, svc.Name, svc.HealthPath, svc.Address, svc.VersionHeader, got, svc.Version)
			}
		}
		if svc.VersionPath != "" {
			resp, body, err := d.get(ctx, svc.Address, svc.VersionPath)
			switch {
			case err != nil:
				return fmt.Errorf("host %s: verify: service %s: GET %s on %s: %w", h.Name, svc.Name, svc.VersionPath, svc.Address, err)
			case resp.StatusCode != http.StatusOK || !strings.Contains(string(body), svc.ExpectBody):
				return fmt.Errorf("host %s: verify: service %s: GET %s on %s answered %s %.80q, want 200 with %q (services[].verify)",
					h.Name, svc.Name, svc.VersionPath, svc.Address, resp.Status, body, svc.ExpectBody)
			}
		}
		if balanced && svc.Name == bsvc.Name && d.view && !d.opts.Naive {
			st, err := d.bal.TargetState(ctx, svc.Address)
			if err != nil {
				return fmt.Errorf("host %s: verify: service %s: %w", h.Name, svc.Name, err)
			}
			if !st.InRotation {
				return fmt.Errorf("host %s: verify: service %s: %s is not in rotation at %s (it says %s)", h.Name, svc.Name, svc.Address, d.bal.Name(), st.State)
			}
		}
	}
	return nil
}
