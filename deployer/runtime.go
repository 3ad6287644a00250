package deployer

import (
	"context"
	"fmt"
	"sync"
	"time"

	"github.com/zero502/zero502/infra"
	"github.com/zero502/zero502/infra/runtime"
	"github.com/zero502/zero502/infra/runtime/process"
	"github.com/zero502/zero502/infra/spec"
)

// Runtime is what the deployer needs of a host's runtime (the subset of infra/runtime.Runtime
// it uses): start an instance from a spec, stop it with a grace period, inspect and list.
type Runtime interface {
	Start(ctx context.Context, host string, svc spec.Service) (runtime.Instance, error)
	Stop(ctx context.Context, inst runtime.Instance, grace time.Duration) (runtime.Stopped, error)
	Inspect(ctx context.Context, id string) (runtime.Instance, error)
	List(ctx context.Context, f runtime.Filter) ([]runtime.Instance, error)
}

// RuntimeFor builds the runtime cfg's rollout.runtime names for host h: the process runtime on
// the host's state dir. The docker runtime plugs in here once it lands (infra/runtime/docker).
func RuntimeFor(cfg *infra.Config, h infra.Host) (Runtime, error) {
	switch cfg.Rollout.Runtime {
	case infra.RuntimeProcess:
		return process.New(cfg.HostStateDir(h))
	case infra.RuntimeDocker:
		return nil, fmt.Errorf("rollout.runtime %q: the deployer has no docker runtime built in yet; use process", cfg.Rollout.Runtime)
	}
	return nil, fmt.Errorf("rollout.runtime %q: must be process or docker", cfg.Rollout.Runtime)
}

// SharedRuntimes returns an Options.Runtime that builds each host's runtime once (RuntimeFor)
// and hands the same one to every Deployer it is given to. A process that runs several deploys
// (the demo: v1, then v2) must share its runtimes: with the process runtime, the Runtime that
// started an instance is the one that reaps it and records its exit.
func SharedRuntimes(cfg *infra.Config) func(infra.Host) (Runtime, error) {
	var mu sync.Mutex
	made := map[string]Runtime{}
	return func(h infra.Host) (Runtime, error) {
		mu.Lock()
		defer mu.Unlock()
		if rt, ok := made[h.Name]; ok {
			return rt, nil
		}
		rt, err := RuntimeFor(cfg, h)
		if err != nil {
			return nil, err
		}
		made[h.Name] = rt
		return rt, nil
	}
}

// running returns the running instances of service on host.
func running(ctx context.Context, rt Runtime, host, service string) ([]runtime.Instance, error) {
	all, err := rt.List(ctx, runtime.Filter{Host: host, Service: service})
	if err != nil {
		return nil, fmt.Errorf("host %s: list instances of %s: %w", host, service, err)
	}
	var out []runtime.Instance
	for _, in := range all {
		if in.Running() {
			out = append(out, in)
		}
	}
	return out, nil
}
