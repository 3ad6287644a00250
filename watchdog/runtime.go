package watchdog

import (
	"fmt"

	"github.com/zero502/zero502/infra/config"
	"github.com/zero502/zero502/infra/runtime/docker"
	"github.com/zero502/zero502/infra/runtime/process"
)

// runtimeFor builds the runtime rollout.runtime names for host h: the Docker Engine at
// rollout.docker_host (empty: DOCKER_HOST, then the local socket), or local processes recorded
// in the host's state dir.
func runtimeFor(cfg *config.Config, h config.Host) (Runtime, error) {
	switch cfg.Rollout.Runtime {
	case config.RuntimeDocker:
		rt, err := docker.New(cfg.Rollout.DockerHost)
		if err != nil {
			return nil, err
		}
		return rt, nil
	case config.RuntimeProcess:
		rt, err := process.New(cfg.HostStateDir(h))
		if err != nil {
			return nil, err
		}
		return rt, nil
	}
	return nil, fmt.Errorf("rollout.runtime %q: must be process or docker", cfg.Rollout.Runtime)
}
