package deployer

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"slices"
	"time"

	"github.com/zero502/zero502/infra/config"
	"github.com/zero502/zero502/infra/runtime"
	"github.com/zero502/zero502/infra/runtime/process"
	"github.com/zero502/zero502/infra/trust"
)

// logFollowPoll is how often Logs looks for new output of a process service's log when following.
const logFollowPoll = 200 * time.Millisecond

// Logs copies the output of service on host to w: with the process runtime, the service's log
// under the host's state dir (every instance appends to it, each start marked by a "== zero502"
// line); with the Docker runtime, `docker logs` of its newest container (the docker client on
// PATH, pointed at rollout.docker_host). With follow it keeps copying new output until ctx ends.
// A host reached over ssh shows them there (zero502 host logs; opts.RemoteBinary and opts.SSH
// as for a deploy).
func Logs(ctx context.Context, cfg *config.Config, host, service string, follow bool, w io.Writer, opts Options) error {
	i := slices.IndexFunc(cfg.Hosts, func(h config.Host) bool { return h.Name == host })
	if i < 0 {
		return fmt.Errorf("--host %q: no such host in the config (hosts: %s)", host, hostNames(cfg.Hosts))
	}
	h := cfg.Hosts[i]
	if !slices.ContainsFunc(cfg.Services, func(s config.Service) bool { return s.Name == service }) {
		return fmt.Errorf("--service %q: no such service in the config", service)
	}
	if h.SSH != "" {
		return New(cfg, opts).remoteLogs(ctx, h, service, follow, w) // zero502 host logs, over ssh
	}
	switch cfg.Rollout.Runtime {
	case config.RuntimeProcess:
		rt, err := process.Open(cfg.HostStateDir(h)) // it only reads: a host never deployed gets no state dir
		if err != nil {
			return err
		}
		return copyLog(ctx, rt.LogPath(service), follow, w)
	case config.RuntimeDocker:
		rt, err := runtimeFor(cfg, h)
		if err != nil {
			return err
		}
		insts, err := rt.List(ctx, runtime.Filter{Host: h.Name, Service: service})
		if err != nil {
			return fmt.Errorf("host %s: list containers of %s: %w", h.Name, service, err)
		}
		if len(insts) == 0 {
			return fmt.Errorf("host %s: no container of %s (running or exited) to show the logs of", h.Name, service)
		}
		newest := slices.MaxFunc(insts, func(a, b runtime.Instance) int { return a.StartedAt.Compare(b.StartedAt) })
		args := []string{"logs"}
		if follow {
			args = append(args, "--follow")
		}
		docker, err := trust.Program("docker", os.Getuid()) // as every program zero502 runs
		if err != nil {
			return fmt.Errorf("docker logs %s: the docker client: %w", newest.ID, err)
		}
		cmd := exec.CommandContext(ctx, docker, append(args, newest.ID)...)
		cmd.Args[0] = "docker"
		cmd.Stdout, cmd.Stderr = w, w
		if cfg.Rollout.DockerHost != "" {
			cmd.Env = append(os.Environ(), "DOCKER_HOST="+cfg.Rollout.DockerHost)
		}
		if err := cmd.Run(); err != nil && ctx.Err() == nil {
			return fmt.Errorf("docker logs %s: %w (the docker client must be on PATH)", newest.ID, err)
		}
		return nil
	}
	return fmt.Errorf("rollout.runtime %q: must be process or docker", cfg.Rollout.Runtime)
}

// copyLog copies the file at path to w and, with follow, what is appended to it until ctx ends
// (starting over when it shrinks).
func copyLog(ctx context.Context, path string, follow bool, w io.Writer) error {
	f, err := os.Open(path)
	if errors.Is(err, os.ErrNotExist) {
		return fmt.Errorf("no log at %s: the service never started on this host (zero502 deploy starts it)", path)
	}
	if err != nil {
		return err
	}
	defer f.Close()
	var off int64
	for {
		n, err := io.Copy(w, f)
		off += n
		if err != nil {
			return fmt.Errorf("read %s: %w", path, err)
		}
		if !follow {
			return nil
		}
		if st, err := os.Stat(path); err == nil && st.Size() < off {
			if _, err := f.Seek(0, io.SeekStart); err != nil {
				return err
			}
			off = 0
		}
		select {
		case <-ctx.Done():
			return nil
		case <-time.After(logFollowPoll):
		}
	}
}
