package demo

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"sort"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/zero502/zero502/deployer"
	"github.com/zero502/zero502/examples"
	"github.com/zero502/zero502/infra/config"
	"github.com/zero502/zero502/infra/ports"
	"github.com/zero502/zero502/infra/runtime"
	"github.com/zero502/zero502/infra/runtime/docker"
	"github.com/zero502/zero502/infra/runtime/process"
)

// fleet is the demo's own copy of examples/local.yaml: free ports for the LB, its admin and each
// host's service, a state dir per host under one temp dir, the fast numbers unchanged; with the
// docker runtime, containers of the zero502 image on host names of this run alone.
type fleet struct {
	dir        string // temp dir holding the config, the host state dirs and the LB's log
	configPath string
	cfg        *config.Config
	lb         *exec.Cmd
	lbExited   chan struct{}
	lbLog      string
	// runtimes holds one runtime per host for the whole run: the v1 and v2 deploys and the final
	// stop share it, so the instances the first deploy started (with the process runtime:
	// children of this process, reaped by the runtime that started them) are tracked by one
	// runtime only.
	runtimes map[string]deployer.Runtime
	// engine is the Docker Engine of a docker run (nil with the process runtime).
	engine *docker.Runtime
}

// newFleet writes the rewritten config into a new temp dir and loads it. With the docker
// runtime, engine is the Docker Engine the containers run on and image their image.
func newFleet(engine *docker.Runtime, image, service string) (*fleet, error) {
	dir, err := os.MkdirTemp("", "zero502-demo-")
	if err != nil {
		return nil, fmt.Errorf("demo: temp dir: %w (is $TMPDIR writable?)", err)
	}
	source, name := examples.Local, "examples/local.yaml"
	if service == ServicePython {
		source, name = examples.AnyService, "examples/any-service.yaml"
		// http.server runs CGI scripts as nobody when it runs as root: it must reach them.
		if err := os.Chmod(dir, 0o755); err != nil {
			os.RemoveAll(dir)
			return nil, fmt.Errorf("demo: %w", err)
		}
	}
	f := &fleet{dir: dir, configPath: filepath.Join(dir, "local.yaml"), lbLog: filepath.Join(dir, "lb.log"), engine: engine}
	var ctr *containers
	if engine != nil {
		ctr = &containers{Image: image, Endpoint: engine.Client().DaemonHost(), RunID: runID()}
	}
	data, err := rewrite(source, dir, ctr)
	if err == nil {
		err = os.WriteFile(f.configPath, data, 0o644)
	}
	if err == nil {
		f.cfg, err = config.Load(f.configPath)
	}
	if err == nil {
		f.runtimes = map[string]deployer.Runtime{}
		for _, h := range f.cfg.Hosts {
			if engine != nil {
				f.runtimes[h.Name] = engine // one engine serves every host; labels keep them apart
				continue
			}
			var rt *process.Runtime
			if rt, err = process.New(f.cfg.HostStateDir(h)); err != nil {
				break
			}
			rt.EarlyExitWindow = deployer.EarlyExitWindow
			f.runtimes[h.Name] = rt
		}
	}
	if err != nil {
		os.RemoveAll(dir)
		return nil, fmt.Errorf("demo: config from %s: %w", name, err)
	}
	return f, nil
}

// containers says how rewrite turns local.yaml into a docker run.
type containers struct {
	// Image is the image every service runs (zero502/app:dev).
	Image string
	// Endpoint is the Docker Engine (rollout.docker_host).
	Endpoint string
	// RunID is appended to every host name: the containers' zero502.host labels are then this
	// run's alone, and the demo never touches another deploy's containers on the same engine.
	RunID string
}

// rewrite returns the config source (local.yaml, or any-service.yaml) with free loopback ports
// and every state dir under dir, encoded: it loads source into the typed config.Config, edits
// that, and writes it with config.Encode. With ctr, for the docker runtime: each service runs
// ctr.Image with its command made the container's ({self} → /zero502, the app listening on
// 0.0.0.0 inside), host names carry ctr.RunID.
func rewrite(source []byte, dir string, ctr *containers) ([]byte, error) {
	cfg, err := config.LoadBytes(source, "the demo's config")
	if err != nil {
		return nil, err
	}
	if err := cfg.RequireFleet(); err != nil {
		return nil, err
	}
	free, err := ports.Free(2 + len(cfg.Hosts))
	if err != nil {
		return nil, fmt.Errorf("demo: %w", err)
	}
	cfg.Balancer.Listen = fmt.Sprintf("127.0.0.1:%d", free[0])
	cfg.Balancer.Admin = fmt.Sprintf("127.0.0.1:%d", free[1])
	cfg.Watchdog.StateDir = dir
	cfg.Watchdog.LockPath = config.Defaults().Watchdog.LockPath // each host locks <its state_dir>/deploy.lock
	svcPorts := free[2:]
	sort.Ints(svcPorts)
	// Every host's balanced service listens on base + port_offset, so the offsets are what
	// separates the hosts: base is the lowest free port, each offset the distance to its own.
	for i := range cfg.Services {
		s := &cfg.Services[i]
		if s.Port > 0 {
			s.Port = svcPorts[0]
		}
		if len(s.Ports) == 2 {
			// start-first: the second port must be free at every host's offset too
			offsets := make([]int, len(svcPorts))
			for k, p := range svcPorts {
				offsets[k] = p - svcPorts[0]
			}
			second, err := ports.FreeAtOffsets(offsets, svcPorts)
			if err != nil {
				return nil, fmt.Errorf("demo: %w", err)
			}
			s.Ports = []int{svcPorts[0], second}
		}
		for j, a := range s.Command {
			s.Command[j] = strings.ReplaceAll(a, "/tmp/zero502-any", dir) // any-service.yaml's files
		}
		if ctr != nil {
			cmd, err := containerCommand(s.Command)
			if err != nil {
				return nil, fmt.Errorf("services[%d].command: %w", i, err)
			}
			s.Command, s.Image = cmd, ctr.Image
		}
	}
	for i := range cfg.Hosts {
		h := &cfg.Hosts[i]
		h.PortOffset = svcPorts[i] - svcPorts[0]
		h.StateDir = filepath.Join(dir, h.Name)
		h.Address = "127.0.0.1"
		h.LockPath = ""
		if ctr != nil {
			h.Name = fmt.Sprintf("%s-%s", h.Name, ctr.RunID)
		}
	}
	if ctr != nil {
		cfg.Rollout.Runtime = config.RuntimeDocker
		cfg.Rollout.DockerHost = ctr.Endpoint
	}
	return config.Encode(cfg)
}

// containerCommand turns a process-runtime command into the container's: {self} is the
// image's /zero502, and `app` listens on 0.0.0.0 so the port published on 127.0.0.1 reaches it.
func containerCommand(args []string) ([]string, error) {
	if len(args) == 0 {
		return nil, errors.New("is empty")
	}
	out := make([]string, 0, len(args)+2)
	for i, a := range args {
		if i == 0 && a == "{self}" {
			a = "/zero502"
		}
		out = append(out, a)
		if i == 1 && a == "app" && !slices.Contains(args, "--host") {
			out = append(out, "--host", "0.0.0.0")
		}
	}
	if out[0] != "/zero502" {
		return nil, fmt.Errorf("%q: the demo's containers run /zero502; want a command starting with {self}", args)
	}
	return out, nil
}

// runID is 4 random hex digits naming one docker demo run.
func runID() string {
	var b [2]byte
	_, _ = rand.Read(b[:])
	return hex.EncodeToString(b[:])
}

// startLB starts `self lb --config` as a child in its own process group (Ctrl-C is the demo's
// to handle) and waits until its admin API answers.
func (f *fleet) startLB(ctx context.Context, self string) error {
	logf, err := os.Create(f.lbLog)
	if err != nil {
		return fmt.Errorf("demo: LB log: %w", err)
	}
	// Nothing sits in front of the demo's LB and it is stopped only once the load is over, so
	// its own drain window (which protects balancers in front of it) is skipped.
	cmd := exec.Command(self, "lb", "--config", f.configPath, "--drain", "0s")
	cmd.Stdout, cmd.Stderr = logf, logf
	cmd.SysProcAttr = ownProcessGroup()
	if err := cmd.Start(); err != nil {
		logf.Close()
		return fmt.Errorf("demo: start the LB (%s lb): %w", self, err)
	}
	f.lb, f.lbExited = cmd, make(chan struct{})
	go func() { _ = cmd.Wait(); logf.Close(); close(f.lbExited) }()
	url := "http://" + f.cfg.Balancer.Admin + "/admin/health"
	err = poll(ctx, 10*time.Second, func() (bool, error) {
		select {
		case <-f.lbExited:
			return false, fmt.Errorf("the LB exited at start (%s); its log: %s", cmd.ProcessState, f.lbLog)
		default:
		}
		resp, err := http.Get(url)
		if err != nil {
			return false, nil
		}
		resp.Body.Close()
		return resp.StatusCode == http.StatusOK, nil
	})
	if err != nil {
		return fmt.Errorf("demo: LB admin %s: %w", url, err)
	}
	return nil
}

// backend is the part of the LB's /admin/backends answer the demo reads.
type backend struct {
	Address    string `json:"address"`
	State      string `json:"state"`
	InRotation bool   `json:"in_rotation"`
}

// waitInRotation polls the LB's admin API until every target is in rotation.
func (f *fleet) waitInRotation(ctx context.Context) error {
	url := "http://" + f.cfg.Balancer.Admin + "/admin/backends"
	var last []backend
	err := poll(ctx, 15*time.Second, func() (bool, error) {
		resp, err := http.Get(url)
		if err != nil {
			return false, nil
		}
		defer resp.Body.Close()
		var body struct {
			Backends []backend `json:"backends"`
		}
		if err := json.NewDecoder(resp.Body).Decode(&body); err != nil {
			return false, nil
		}
		last = body.Backends
		in := 0
		for _, b := range body.Backends {
			if b.InRotation {
				in++
			}
		}
		return in == len(f.cfg.Hosts) && in > 0, nil
	})
	if err != nil {
		return fmt.Errorf("demo: waiting for every host in rotation at the LB: %w (last view: %+v)", err, last)
	}
	return nil
}

// stop ends everything the demo started: the app instances on every host (killed: the load is
// over; containers are also removed, running or exited) and the LB (SIGTERM, then SIGKILL after
// a bound). It keeps going past errors.
func (f *fleet) stop(self string) error {
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	var remove func(context.Context, runtime.Instance) error
	if f.engine != nil {
		remove = f.engine.Remove
	}
	errs := killInstances(ctx, f.cfg.Hosts, f.runtimes, remove)
	if f.engine == nil {
		if pids := f.sweep(self); len(pids) > 0 {
			errs = append(errs, fmt.Errorf("the process runtime had lost track of app pids %v on the demo's ports; killed them", pids))
		}
	}
	if f.lb != nil && f.lb.Process != nil {
		_ = f.lb.Process.Signal(syscall.SIGTERM)
		select {
		case <-f.lbExited:
		case <-time.After(f.cfg.Drain.Window + f.cfg.Drain.Shutdown + time.Second):
			_ = f.lb.Process.Kill()
			<-f.lbExited
		}
	}
	return errors.Join(errs...)
}

// killInstances kills every instance the hosts' runtimes know of (the load is over) and, with
// remove, removes each one too (containers, running or exited). It keeps going past errors.
func killInstances(ctx context.Context, hosts []config.Host, runtimes map[string]deployer.Runtime,
	remove func(context.Context, runtime.Instance) error) []error {
	var errs []error
	for _, h := range hosts {
		rt := runtimes[h.Name]
		insts, err := rt.List(ctx, runtime.Filter{Host: h.Name})
		if err != nil {
			errs = append(errs, err)
		}
		for _, in := range insts {
			if in.Running() {
				if _, err := rt.Stop(ctx, in, 0); err != nil {
					errs = append(errs, fmt.Errorf("stop %s on %s: %w", in.ID, h.Name, err))
				}
			}
			if remove != nil {
				if err := remove(ctx, in); err != nil {
					errs = append(errs, fmt.Errorf("remove container %s of %s: %w", in.ID, h.Name, err))
				}
			}
		}
	}
	return errs
}

// sweep kills any `self app ... --port P` process on one of the fleet's service ports that is
// still alive after the runtime stopped what it knew of: the demo leaves nothing behind, even
// when a record was lost. It returns the pids it killed.
func (f *fleet) sweep(self string) []int {
	ports := map[string]bool{}
	for _, t := range f.cfg.Targets() {
		if _, p, err := net.SplitHostPort(t); err == nil {
			ports[p] = true
		}
	}
	entries, _ := os.ReadDir("/proc")
	var killed []int
	for _, e := range entries {
		pid, err := strconv.Atoi(e.Name())
		if err != nil || pid == os.Getpid() {
			continue
		}
		raw, err := os.ReadFile(filepath.Join("/proc", e.Name(), "cmdline"))
		if err != nil {
			continue
		}
		args := strings.Split(strings.TrimRight(string(raw), "\x00"), "\x00")
		if len(args) < 2 || args[0] != self || args[1] != "app" {
			continue
		}
		for i := 2; i+1 < len(args); i++ {
			if args[i] == "--port" && ports[args[i+1]] {
				if killProcess(pid) == nil {
					killed = append(killed, pid)
				}
				break
			}
		}
	}
	return killed
}

// runtime is the deployer's Runtime option: the run's one runtime per host.
func (f *fleet) runtime(h config.Host) (deployer.Runtime, error) {
	rt, ok := f.runtimes[h.Name]
	if !ok {
		return nil, fmt.Errorf("demo: no runtime for host %q", h.Name)
	}
	return rt, nil
}

// poll calls check every 50 ms until it says done, fails, or the deadline passes.
func poll(ctx context.Context, deadline time.Duration, check func() (bool, error)) error {
	ctx, cancel := context.WithTimeout(ctx, deadline)
	defer cancel()
	for {
		done, err := check()
		if err != nil || done {
			return err
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("not done after %s: %w", deadline, ctx.Err())
		case <-time.After(50 * time.Millisecond):
		}
	}
}
