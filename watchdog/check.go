package watchdog

import (
	"context"
	"fmt"
	"io"
	"net/http"

	"github.com/zero502/zero502/infra/runtime"
	"github.com/zero502/zero502/infra/spec"
)

// check returns "" when svc is healthy, else why not. A service with an address is checked by
// HTTP GET on its health path (any 2xx passes) within watchdog.check_timeout; one without is
// checked by its instance's state and, where the runtime has one, its own health verdict.
func (w *Watchdog) check(ctx context.Context, svc spec.Service) string {
	if svc.Address != "" {
		return w.checkHTTP(ctx, svc)
	}
	return w.checkInstance(ctx, svc)
}

func (w *Watchdog) checkHTTP(ctx context.Context, svc spec.Service) string {
	path := svc.HealthPath
	if path == "" {
		path = w.cfg.Balancer.HealthPath
	}
	url := "http://" + svc.Address + path
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
	if err != nil {
		return fmt.Sprintf("health %s: %v", url, err)
	}
	req.Header.Set("User-Agent", "zero502-watchdog")
	resp, err := w.http.Do(req)
	if err != nil {
		return fmt.Sprintf("health %s: %v", url, err)
	}
	defer resp.Body.Close()
	_, _ = io.Copy(io.Discard, io.LimitReader(resp.Body, 64<<10))
	if resp.StatusCode < 200 || resp.StatusCode > 299 {
		return fmt.Sprintf("health %s: status %d", url, resp.StatusCode)
	}
	return ""
}

func (w *Watchdog) checkInstance(ctx context.Context, svc spec.Service) string {
	insts, err := w.rt.List(ctx, runtime.Filter{Host: w.host.Name, Service: svc.Name})
	if err != nil {
		return fmt.Sprintf("list instances: %v", err)
	}
	var last *runtime.Instance
	for i, in := range insts {
		if in.Running() && in.Health != "unhealthy" {
			return ""
		}
		last = &insts[i]
	}
	switch {
	case last == nil:
		return "no instance"
	case last.Running():
		return "runtime health: unhealthy"
	default:
		return fmt.Sprintf("not running (exit code %d)", last.ExitCode)
	}
}
