package deployer

import (
	"context"
	"fmt"
	"time"

	"github.com/zero502/zero502/infra/config"
	"github.com/zero502/zero502/infra/runtime"
	"github.com/zero502/zero502/infra/runtime/docker"
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

// EarlyExitWindow is how long the process runtime's Start watches a new process for an
// immediate exit before it returns. It is kept short: the deployer does not rely on it, since
// waitHealthy inspects the instance on every poll and fails the step the moment it exits, and
// the stability window (see stable) covers the exits that come later. A longer wait here would
// only add pure waiting to every host's step.
const EarlyExitWindow = 10 * time.Millisecond

// runtimeFor builds the runtime cfg's rollout.runtime names for host h: the process runtime on
// the host's state dir (EarlyExitWindow), or the Docker Engine at rollout.docker_host (empty:
// DOCKER_HOST, then the local socket), pinged so an unreachable engine is refused before
// anything changes.
func runtimeFor(cfg *config.Config, h config.Host) (Runtime, error) {
	switch cfg.Rollout.Runtime {
	case config.RuntimeProcess:
		rt, err := process.New(cfg.HostStateDir(h))
		if err != nil {
			return nil, err // never a typed nil *process.Runtime inside the interface
		}
		rt.EarlyExitWindow = EarlyExitWindow
		return rt, nil
	case config.RuntimeDocker:
		rt, err := docker.New(cfg.Rollout.DockerHost)
		if err != nil {
			return nil, fmt.Errorf("rollout.docker_host %q: %w", cfg.Rollout.DockerHost, err)
		}
		ctx, cancel := context.WithTimeout(context.Background(), dockerPingTimeout)
		defer cancel()
		if err := rt.Ping(ctx); err != nil {
			rt.Close()
			return nil, fmt.Errorf("rollout.runtime docker: %w", err)
		}
		return rt, nil
	}
	return nil, fmt.Errorf("rollout.runtime %q: must be process or docker", cfg.Rollout.Runtime)
}

// dockerPingTimeout bounds runtimeFor's first contact with the Docker Engine.
const dockerPingTimeout = 10 * time.Second

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
