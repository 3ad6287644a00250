// Package docker is the Docker Engine runtime of zero502: it starts a service's instance as a
// container from the host's published spec (image, command, environment, the service port
// published on the host's address by the service's network sandbox, whose network namespace the
// container joins (sandbox.go), labels zero502.host, zero502.service and zero502.version,
// exactly the configured environment (nothing of the deployer's; the image's own ENV stays as
// Docker defines it), the spec's stop_signal as the container's), stops it with the stop grace as
// the stop timeout (the stop signal, SIGTERM by default, starts the drain handshake; a SIGKILL
// or an OOM kill is reported as a violation of invariant I2, never hidden), inspects, lists by
// label and removes containers. Prepare creates a container ahead of its Start (while the old
// instance drains). Containers get no restart policy: the watchdog is the healer.
// Every VOLUME the image declares is mounted from a named volume of the host and service
// (VolumeName), never an anonymous one, and Remove removes no volume: the data an instance writes
// there is what the next version, or the watchdog's replacement, finds (as docker compose up keeps
// a recreated container's volumes).
// Start pulls a missing image from its registry (EnsureImage, with the docker CLI's credentials);
// BuildImage builds the zero502 image FROM scratch and PushImage pushes it. docs/ARCHITECTURE.md.
package docker

import (
	"context"
	"crypto/rand"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"math"
	"net"
	"net/netip"
	"path"
	"regexp"
	"sort"
	"strings"
	"sync"
	"time"

	cerrdefs "github.com/containerd/errdefs"
	"github.com/moby/moby/api/types/container"
	"github.com/moby/moby/api/types/mount"
	"github.com/moby/moby/client"

	"github.com/zero502/zero502/infra/runtime"
	"github.com/zero502/zero502/infra/spec"
)

// Labels every zero502 container carries; List selects by them.
const (
	LabelHost    = "zero502.host"
	LabelService = "zero502.service"
	LabelVersion = "zero502.version"
	// LabelAddress records host:port where the instance answers (empty without a port).
	LabelAddress = "zero502.address"
	// LabelDigest records the spec.Service.Digest the container was created from.
	LabelDigest = "zero502.digest"
	// LabelDestination is, on a volume (labelled LabelHost and LabelService as well), the path
	// in the container it is mounted at: a VOLUME of the service's image.
	LabelDestination = "zero502.destination"
)

// Runtime runs services as containers on one Docker Engine. It is safe for concurrent use.
type Runtime struct {
	cli      *client.Client
	endpoint string

	mu       sync.Mutex
	prepared map[string]string // preparedKey → the id of a container Prepare created, not yet started
}

var _ runtime.Runtime = (*Runtime)(nil)

// New connects to the Docker Engine at endpoint (unix:///var/run/docker.sock, tcp://host:2376
// …); an empty endpoint honours DOCKER_HOST, DOCKER_TLS_VERIFY and DOCKER_CERT_PATH, then the
// local socket. The API version is negotiated, so older engines (API 1.41) work. New does not
// contact the engine; Ping does.
func New(endpoint string) (*Runtime, error) {
	opts := []client.Opt{client.FromEnv} // the API version is negotiated by default
	if endpoint != "" {
		opts = append(opts, client.WithHost(endpoint))
	}
	cli, err := client.New(opts...)
	if err != nil {
		return nil, fmt.Errorf("docker endpoint %q: %w (set rollout.docker_host or DOCKER_HOST to unix:///var/run/docker.sock or tcp://host:2376)", endpoint, err)
	}
	return &Runtime{cli: cli, endpoint: cli.DaemonHost(), prepared: map[string]string{}}, nil
}

// Client is the underlying Engine API client (image builds, tests).
func (r *Runtime) Client() *client.Client { return r.cli }

// Close releases the client's connections.
func (r *Runtime) Close() error { return r.cli.Close() }

// Ping checks that the engine answers and negotiates the API version.
func (r *Runtime) Ping(ctx context.Context) error {
	if _, err := r.cli.Ping(ctx, client.PingOptions{NegotiateAPIVersion: true}); err != nil {
		return r.unreachable(err)
	}
	return nil
}

func (r *Runtime) unreachable(err error) error {
	return fmt.Errorf("docker engine at %s does not answer: %w; is the Docker Engine running? "+
		"(systemctl start docker, or point rollout.docker_host / DOCKER_HOST at it)", r.endpoint, err)
}

// engineErr adds what to do to an error from the engine.
func (r *Runtime) engineErr(what string, err error) error {
	if client.IsErrConnectionFailed(err) {
		return fmt.Errorf("%s: %w", what, r.unreachable(err))
	}
	if cerrdefs.IsNotFound(err) {
		return fmt.Errorf("%s: %w: %v", what, runtime.ErrNotFound, err)
	}
	return fmt.Errorf("%s: %w", what, err)
}

// Start creates and starts a container of svc on host and returns once it runs; a container
// Prepare created for the same spec is started instead of a new one. The service port is
// published on the IP of svc.Address to the same port inside the container's network namespace,
// its sandbox's, where the service must listen on 0.0.0.0. A name is resolved here, on the host: Docker's publishing bypasses the
// host's INPUT rules, so a port is never published on every interface unless the address says
// 0.0.0.0.
func (r *Runtime) Start(ctx context.Context, host string, svc spec.Service) (runtime.Instance, error) {
	id := r.takePrepared(host, svc)
	if id == "" {
		var err error
		if id, err = r.create(ctx, host, svc); err != nil {
			return runtime.Instance{}, err
		}
	}
	if svc.Port > 0 {
		// Its sandbox was made with it; it runs from the service's first start on (or stopped
		// with the engine, or is new for a new address or port set while the old instance ran).
		if _, err := r.sandbox(ctx, host, svc, true); err != nil {
			r.discard(ctx, id)
			return runtime.Instance{}, err
		}
	}
	if _, err := r.cli.ContainerStart(ctx, id, client.ContainerStartOptions{}); err != nil {
		r.discard(ctx, id)
		// Not the port: the sandbox publishes it, and the process binds it only once it runs.
		return runtime.Instance{}, r.engineErr(fmt.Sprintf("host %s: service %s: start container %.12s (check that services[].command "+
			"names a program in image %s, and services[].user a user of it)", host, svc.Name, id, svc.Image), err)
	}
	return r.Inspect(ctx, id)
}

// discard removes a created container that never ran, and its sandbox if nothing else uses
// it: a failed start leaves nothing half-made behind.
func (r *Runtime) discard(ctx context.Context, id string) {
	ctx = context.WithoutCancel(ctx)
	c, err := r.inspect(ctx, id)
	if err != nil {
		return
	}
	if _, err := r.cli.ContainerRemove(ctx, id, client.ContainerRemoveOptions{Force: true}); err == nil {
		r.releaseSandbox(ctx, c)
	}
}

// Prepare creates svc's container on host without starting it, for a Start once the old
// instance has stopped: the engine checks the image and the container's config while the old
// instance still serves, and the start after the stop is only a start. A second Prepare of the
// same spec replaces the first.
func (r *Runtime) Prepare(ctx context.Context, host string, svc spec.Service) error {
	id, err := r.create(ctx, host, svc)
	if err != nil {
		return err
	}
	r.mu.Lock()
	if r.prepared == nil {
		r.prepared = map[string]string{}
	}
	old := r.prepared[preparedKey(host, svc)]
	r.prepared[preparedKey(host, svc)] = id
	r.mu.Unlock()
	if old != "" {
		r.discard(ctx, old)
	}
	return nil
}

// Discard removes the container Prepare created for svc on host if Start never took it.
func (r *Runtime) Discard(ctx context.Context, host string, svc spec.Service) {
	if id := r.takePrepared(host, svc); id != "" {
		r.discard(ctx, id)
	}
}

// takePrepared removes and returns the id of the container prepared for svc on host ("": none).
func (r *Runtime) takePrepared(host string, svc spec.Service) string {
	r.mu.Lock()
	defer r.mu.Unlock()
	k := preparedKey(host, svc)
	id := r.prepared[k]
	delete(r.prepared, k)
	return id
}

// preparedKey names what a prepared container was created from: the host, and the service's
// spec as Start reads it (its digest).
func preparedKey(host string, svc spec.Service) string {
	return host + "\x00" + svc.Digest()
}

// create creates (does not start) a container of svc on host and returns its id, pulling a
// missing image first.
func (r *Runtime) create(ctx context.Context, host string, svc spec.Service) (string, error) {
	if svc.Image == "" {
		return "", fmt.Errorf("host %s: service %s: no image in the spec; set services[].image in the config (docker runtime)", host, svc.Name)
	}
	cfg := &container.Config{
		Image: svc.Image,
		Cmd:   svc.Command,
		Env:   runtime.EnvList(svc.Environment()),
		// services[].user as docker run --user takes it (a name in the image's /etc/passwd, or
		// uid[:gid]); unset keeps the image's USER.
		User: svc.User,
		Labels: map[string]string{
			LabelHost:    host,
			LabelService: svc.Name,
			LabelVersion: svc.Version,
			LabelAddress: svc.Address,
			LabelDigest:  svc.Digest(),
		},
	}
	if svc.StopSignal != "" {
		if _, err := runtime.StopSignal(svc.StopSignal); err != nil {
			return "", fmt.Errorf("host %s: service %s: %w", host, svc.Name, err)
		}
		cfg.StopSignal = svc.StopSignal
	}
	hc := &container.HostConfig{RestartPolicy: container.RestartPolicy{Name: container.RestartPolicyDisabled}}
	if err := r.EnsureImage(ctx, svc.Image); err != nil {
		return "", fmt.Errorf("host %s: service %s: %w", host, svc.Name, err)
	}
	mounts, err := r.volumeMounts(ctx, host, svc)
	if err != nil {
		return "", err
	}
	hc.Mounts = mounts
	if svc.Port > 0 {
		// The port is published by the service's network sandbox, whose namespace it joins.
		sb, err := r.sandbox(ctx, host, svc, false)
		if err != nil {
			return "", err
		}
		hc.NetworkMode = container.NetworkMode("container:" + sb)
	}
	name := containerName(host, svc.Name, svc.Version)
	created, err := r.cli.ContainerCreate(ctx, client.ContainerCreateOptions{Config: cfg, HostConfig: hc, Name: name})
	if err != nil {
		if cerrdefs.IsNotFound(err) {
			return "", fmt.Errorf("host %s: service %s: image %s is not on this engine (%w); build it with `zero502 image build --tag %s` (or push it to its registry)",
				host, svc.Name, svc.Image, runtime.ErrNotFound, svc.Image)
		}
		return "", r.engineErr(fmt.Sprintf("host %s: service %s: create container %s", host, svc.Name, name), err)
	}
	return created.ID, nil
}

// releaseSandbox removes the network sandbox c was in when no container in it runs or waits to
// start: the port is free once the service's last instance there is stopped. Best effort: a
// sandbox left by a failure here is removed before the service's next sandbox starts.
func (r *Runtime) releaseSandbox(ctx context.Context, c container.InspectResponse) {
	if sb := sandboxOf(c); sb != "" && c.Config != nil {
		_ = r.removeSandboxIfUnused(context.WithoutCancel(ctx), c.Config.Labels[LabelHost], sb)
	}
}

// Stop sends the container's stop signal (the spec's stop_signal, set at create; SIGTERM by
// default) and waits up to grace (rounded up to whole seconds, as docker stop -t) for
// the exit, then SIGKILLs. grace 0 kills at once (the naive deploy): Killed, but not an error. An
// instance that had to be killed, or that the kernel OOM-killed, returns Stopped.Killed and an
// error wrapping runtime.ErrKilled. An instance that had already exited is returned as it is.
func (r *Runtime) Stop(ctx context.Context, inst runtime.Instance, grace time.Duration) (runtime.Stopped, error) {
	before, err := r.inspect(ctx, inst.ID)
	if err != nil {
		return runtime.Stopped{}, r.engineErr(fmt.Sprintf("stop %s", describe(inst)), err)
	}
	if !before.State.Running {
		r.releaseSandbox(ctx, before)
		return runtime.Stopped{ExitCode: before.State.ExitCode}, nil
	}
	start := time.Now()
	if grace <= 0 {
		_, err = r.cli.ContainerKill(ctx, inst.ID, client.ContainerKillOptions{Signal: "KILL"})
		if err == nil {
			err = r.wait(ctx, inst.ID)
		}
	} else {
		secs := int(math.Ceil(grace.Seconds()))
		_, err = r.cli.ContainerStop(ctx, inst.ID, client.ContainerStopOptions{Timeout: &secs})
	}
	if err != nil {
		return runtime.Stopped{}, r.engineErr(fmt.Sprintf("stop %s", describe(inst)), err)
	}
	after, err := r.inspect(ctx, inst.ID)
	if err != nil {
		return runtime.Stopped{}, r.engineErr(fmt.Sprintf("inspect %s after stop", describe(inst)), err)
	}
	r.releaseSandbox(ctx, after)
	st := runtime.Stopped{ExitCode: after.State.ExitCode, Took: time.Since(start)}
	if grace <= 0 {
		st.Killed = true // asked for, so not an error
		return st, nil
	}
	if after.State.ExitCode == 137 || after.State.OOMKilled {
		st.Killed = true
		how := fmt.Sprintf("exit code %d after the stop grace of %s", after.State.ExitCode, grace)
		if after.State.OOMKilled {
			how = "OOM-killed by the kernel"
		}
		return st, fmt.Errorf("%s: %s: %w; raise drain.stop_grace or lower drain.window + drain.shutdown",
			describe(inst), how, runtime.ErrKilled)
	}
	return st, nil
}

// wait blocks until the container is not running.
func (r *Runtime) wait(ctx context.Context, id string) error {
	w := r.cli.ContainerWait(ctx, id, client.ContainerWaitOptions{Condition: container.WaitConditionNotRunning})
	select {
	case <-w.Result:
		return nil
	case err := <-w.Error:
		return err
	}
}

// inspect is the engine's inspect of a container.
func (r *Runtime) inspect(ctx context.Context, id string) (container.InspectResponse, error) {
	res, err := r.cli.ContainerInspect(ctx, id, client.ContainerInspectOptions{})
	return res.Container, err
}

// Inspect returns the container's current state, Docker health and exit code.
func (r *Runtime) Inspect(ctx context.Context, id string) (runtime.Instance, error) {
	c, err := r.inspect(ctx, id)
	if err != nil {
		return runtime.Instance{}, r.engineErr(fmt.Sprintf("inspect container %s", id), err)
	}
	inst := runtime.Instance{ID: c.ID, State: runtime.StateExited}
	if c.Config != nil {
		inst.Host = c.Config.Labels[LabelHost]
		inst.Service = c.Config.Labels[LabelService]
		inst.Version = c.Config.Labels[LabelVersion]
		inst.Address = c.Config.Labels[LabelAddress]
		inst.Digest = c.Config.Labels[LabelDigest]
		inst.StopSignal = c.Config.StopSignal
	}
	if c.State != nil {
		if c.State.Running {
			inst.State = runtime.StateRunning
		}
		inst.ExitCode = c.State.ExitCode
		if c.State.Health != nil {
			inst.Health = string(c.State.Health.Status)
		}
		if t, err := time.Parse(time.RFC3339Nano, c.State.StartedAt); err == nil && t.Year() > 1 {
			inst.StartedAt = t
		}
	}
	return inst, nil
}

// List returns the zero502 containers that match f, running or exited, oldest first.
func (r *Runtime) List(ctx context.Context, f runtime.Filter) ([]runtime.Instance, error) {
	args := make(client.Filters).Add("label", LabelService)
	for label, v := range map[string]string{LabelHost: f.Host, LabelService: f.Service, LabelVersion: f.Version} {
		if v != "" {
			args.Add("label", label+"="+v)
		}
	}
	cs, err := r.cli.ContainerList(ctx, client.ContainerListOptions{All: true, Filters: args})
	if err != nil {
		return nil, r.engineErr("list containers", err)
	}
	out := make([]runtime.Instance, 0, len(cs.Items))
	for _, c := range cs.Items {
		inst, err := r.Inspect(ctx, c.ID)
		if errors.Is(err, runtime.ErrNotFound) {
			continue // removed between list and inspect
		}
		if err != nil {
			return nil, err
		}
		out = append(out, inst)
	}
	sort.SliceStable(out, func(i, j int) bool { return out[i].StartedAt.Before(out[j].StartedAt) })
	return out, nil
}

// Remove removes an exited container. A running one is refused (stop it first); one that is
// already gone is not an error. No volume is removed with it: the named volumes of the image's
// VOLUMEs (volumeMounts) hold the service's data for its next container, and an anonymous volume
// (a container made before zero502 named them) is left as well, its data for the user to keep or
// drop (docker volume rm). The network sandbox the container was in goes when no container in it
// runs or waits to start (releaseSandbox; Stop has usually released it already).
func (r *Runtime) Remove(ctx context.Context, inst runtime.Instance) error {
	c, err := r.inspect(ctx, inst.ID)
	if cerrdefs.IsNotFound(err) {
		return nil
	}
	if err != nil {
		return r.engineErr(fmt.Sprintf("remove %s", describe(inst)), err)
	}
	_, err = r.cli.ContainerRemove(ctx, inst.ID, client.ContainerRemoveOptions{})
	if cerrdefs.IsNotFound(err) {
		return nil
	}
	if cerrdefs.IsConflict(err) {
		return fmt.Errorf("remove %s: it is still running; stop it first: %w", describe(inst), err)
	}
	if err != nil {
		return r.engineErr(fmt.Sprintf("remove %s", describe(inst)), err)
	}
	r.releaseSandbox(ctx, c)
	return nil
}

// describe names an instance in errors.
func describe(inst runtime.Instance) string {
	id := inst.ID
	if len(id) > 12 {
		id = id[:12]
	}
	if inst.Service == "" {
		return "container " + id
	}
	return fmt.Sprintf("host %s: service %s %s (container %s)", inst.Host, inst.Service, inst.Version, id)
}

// bindIP is the host IP a service port is published on: the IP of address, or all interfaces
// (the zero Addr) when the address is a name (Docker binds IPs, not names).
func bindIP(ctx context.Context, address string) (netip.Addr, error) {
	h, _, err := net.SplitHostPort(address)
	if err != nil {
		h = address
	}
	if ip, err := netip.ParseAddr(h); err == nil {
		return ip.Unmap(), nil // 0.0.0.0 or :: only when the config names it
	}
	if h == "" {
		return netip.Addr{}, fmt.Errorf("address %q names no host to publish on: set hosts[].address to this host's IP "+
			"(or 0.0.0.0 to publish on every interface)", address)
	}
	ctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	ips, err := net.DefaultResolver.LookupNetIP(ctx, "ip", h)
	if err != nil || len(ips) == 0 {
		return netip.Addr{}, fmt.Errorf("address %q: resolve %s to the IP to publish on: %w; Docker publishes a port on an "+
			"IP, never on every interface unless hosts[].address says 0.0.0.0: make the name resolve on the host or "+
			"set hosts[].address to its IP", address, h, errors.Join(err, errNoAddress(len(ips))))
	}
	for _, ip := range ips { // an IPv4 address first: what a name in /etc/hosts or a private zone usually means
		if ip.Unmap().Is4() {
			return ip.Unmap(), nil
		}
	}
	return ips[0], nil
}

// errNoAddress is the error of a lookup that answered no address (nil when it answered some).
func errNoAddress(n int) error {
	if n == 0 {
		return errors.New("no address in the answer")
	}
	return nil
}

// volumeMounts mounts every VOLUME svc's image declares (its config's Volumes, read by an
// image inspect) from the named volume VolumeName(host, svc.Name, path), where Docker would make
// an anonymous volume for each container and lose the data with the container. The name depends
// on nothing but the host, the service and the path, so every version of the service and every
// container the watchdog heals it with on that host mounts the same volume, whichever of the
// old container's removal and the new one's creation comes first; two instances that run at once
// (start-first, or a prepared container beside the old) share it, as two containers of one
// Compose service sharing a named volume would. The engine creates the volume on the first
// container's creation, labelled LabelHost, LabelService and LabelDestination, and copies the
// image's content at the path into it, as it does into an anonymous volume; an existing volume is
// mounted as it is (a later image's content at the path is not copied over the data).
func (r *Runtime) volumeMounts(ctx context.Context, host string, svc spec.Service) ([]mount.Mount, error) {
	img, err := r.cli.ImageInspect(ctx, svc.Image)
	if err != nil {
		return nil, r.engineErr(fmt.Sprintf("host %s: service %s: inspect image %s", host, svc.Name, svc.Image), err)
	}
	if img.Config == nil || len(img.Config.Volumes) == 0 {
		return nil, nil
	}
	dests := make([]string, 0, len(img.Config.Volumes))
	seen := map[string]bool{}
	for d := range img.Config.Volumes {
		d = path.Clean(d)
		if !seen[d] {
			seen[d] = true
			dests = append(dests, d)
		}
	}
	sort.Strings(dests)
	mounts := make([]mount.Mount, 0, len(dests))
	for _, d := range dests {
		mounts = append(mounts, mount.Mount{
			Type:   mount.TypeVolume,
			Source: VolumeName(host, svc.Name, d),
			Target: d,
			VolumeOptions: &mount.VolumeOptions{Labels: map[string]string{
				LabelHost:        host,
				LabelService:     svc.Name,
				LabelDestination: d,
			}},
		})
	}
	return mounts, nil
}

// VolumeName is the named volume that holds the VOLUME at path dest of service's image on host:
// zero502-<host>-<service>-<dest>-<8 hex>, the host and service as in a container's name, dest
// without its leading '/' and with every run of characters Docker refuses in a name (the other
// slashes too) replaced by '_', cut to 64 characters, and the hex the start of the SHA-256 of
// host, service and the cleaned dest, so that names the replacement or a '-' in a host or service
// name would make alike stay apart. It is the same for every version of the service.
func VolumeName(host, service, dest string) string {
	dest = path.Clean(dest)
	sum := sha256.Sum256([]byte(host + "\x00" + service + "\x00" + dest))
	d := nameUnsafe.ReplaceAllString(strings.TrimPrefix(dest, "/"), "_")
	if len(d) > 64 {
		d = d[:64]
	}
	if d == "" {
		d = "_"
	}
	return strings.Join([]string{"zero502", nameUnsafe.ReplaceAllString(host, "_"),
		nameUnsafe.ReplaceAllString(service, "_"), d, hex.EncodeToString(sum[:4])}, "-")
}

var nameUnsafe = regexp.MustCompile(`[^a-zA-Z0-9_.-]+`)

// containerName is zero502-<host>-<service>-<version>-<6 hex>, with characters Docker refuses
// in a name replaced by '_'.
func containerName(host, service, version string) string {
	var b [3]byte
	_, _ = rand.Read(b[:])
	parts := []string{"zero502", host, service, version, hex.EncodeToString(b[:])}
	for i, p := range parts {
		parts[i] = nameUnsafe.ReplaceAllString(p, "_")
	}
	return strings.Join(parts, "-")
}
