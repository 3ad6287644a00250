package docker

import (
	"archive/tar"
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"io"
	"net/netip"
	"strconv"
	"strings"

	cerrdefs "github.com/containerd/errdefs"
	"github.com/moby/moby/api/types/container"
	"github.com/moby/moby/api/types/network"
	"github.com/moby/moby/client"

	"github.com/zero502/zero502/infra/spec"
)

// A network sandbox holds a service's network namespace for one port on a host, as a
// Kubernetes pod's pause container does: one small container per host, service, bind IP and
// port that publishes the port and runs nothing but pauseProgram. Every container of the service
// on that port joins its namespace (network mode container:<sandbox>), so starting or stopping a
// version's container sets up and tears down no bridge endpoint, NAT rule or port proxy: on the
// engines measured that halves a container's start (about 380 → 110 ms) and takes 100 ms off its
// stop, time the host would otherwise stand out of rotation. The old and new container of a
// stop-first deploy bind the port in the same namespace one after the other; the two instances
// of a start-first service, on its two ports, run side by side in two sandboxes, each in a
// namespace of its own as before (a second listener of the program, an admin port, never
// collides with the other instance's).
//
// A sandbox is made on the first start on its port and reused while its IP and port stay the
// same. It goes once no container in it runs or waits for its start (a prepared one): Stop and
// Remove take it away with the last one, so a stopped service holds no port, and an exited
// container kept for its logs holds none; a service's other sandboxes nothing uses are removed
// before a new one of it starts, so the ports they held are free for it.
const (
	// LabelSandboxHost and LabelSandboxService mark a sandbox with its host and service (not
	// LabelHost and LabelService: a sandbox is no instance, and List does not return it).
	LabelSandboxHost    = "zero502.sandbox.host"
	LabelSandboxService = "zero502.sandbox.service"
	// SandboxRepository is the repository of the sandbox images: <arch>-<12 hex of the program>.
	SandboxRepository = "zero502/sandbox"
)

// sandboxName is zero502-<host>-<service>-sandbox-<port>-<8 hex>, the hex the start of the
// SHA-256 of the host, service, IP and port: what the sandbox publishes, so a change of them names
// a new one (a host address given as a name is resolved for every start, as it was for every
// container).
func sandboxName(host string, svc spec.Service, ip netip.Addr) string {
	sum := sha256.Sum256(fmt.Appendf(nil, "%s\x00%s\x00%s\x00%d", host, svc.Name, ip, svc.Port))
	return strings.Join([]string{"zero502", nameUnsafe.ReplaceAllString(host, "_"),
		nameUnsafe.ReplaceAllString(svc.Name, "_"), "sandbox", strconv.Itoa(svc.Port), hex.EncodeToString(sum[:4])}, "-")
}

// sandbox returns the id of the sandbox of svc's port on host, making it first. With start it is
// running too: the service's sandboxes that no container uses any more (of an earlier IP or
// port) are removed first, so the ports they hold are free for it. Without start (a container
// prepared while the old instance still serves) it may be only made.
func (r *Runtime) sandbox(ctx context.Context, host string, svc spec.Service, start bool) (string, error) {
	ip, err := bindIP(ctx, svc.Address)
	if err != nil {
		return "", fmt.Errorf("host %s: service %s: %w", host, svc.Name, err)
	}
	name := sandboxName(host, svc, ip)
	c, err := r.inspect(ctx, name)
	if cerrdefs.IsNotFound(err) {
		if err := r.makeSandbox(ctx, host, svc, ip, name); err != nil {
			return "", err
		}
		c, err = r.inspect(ctx, name)
	}
	if err != nil {
		return "", r.engineErr(fmt.Sprintf("host %s: service %s: inspect its network sandbox %s", host, svc.Name, name), err)
	}
	if !start || (c.State != nil && c.State.Running) {
		return c.ID, nil
	}
	// Made but not running: just made, or stopped with the engine or the machine.
	if err := r.removeUnusedSandboxes(ctx, host, svc.Name, c.ID); err != nil {
		return "", err
	}
	if _, err := r.cli.ContainerStart(ctx, c.ID, client.ContainerStartOptions{}); err != nil && !cerrdefs.IsNotModified(err) {
		return "", r.engineErr(fmt.Sprintf("host %s: service %s: start its network sandbox %s, which publishes port %d on %s "+
			"(is it free? `ss -ltnp` names what holds it; a container of the service made by a zero502 before network "+
			"sandboxes publishes it itself until it is stopped)", host, svc.Name, name, svc.Port, ip), err)
	}
	return c.ID, nil
}

// makeSandbox creates (does not start) the sandbox name publishing svc's port on ip on host.
// One another process made meanwhile under the same name is as good.
func (r *Runtime) makeSandbox(ctx context.Context, host string, svc spec.Service, ip netip.Addr, name string) error {
	image, err := r.sandboxImage(ctx)
	if err != nil {
		return fmt.Errorf("host %s: service %s: %w", host, svc.Name, err)
	}
	port, err := network.ParsePort(strconv.Itoa(svc.Port) + "/tcp")
	if err != nil {
		return fmt.Errorf("host %s: service %s: port %d: %w", host, svc.Name, svc.Port, err)
	}
	cfg := &container.Config{
		Image:        image,
		User:         "65534:65534",
		ExposedPorts: network.PortSet{port: struct{}{}},
		Labels:       map[string]string{LabelSandboxHost: host, LabelSandboxService: svc.Name},
	}
	hc := &container.HostConfig{
		RestartPolicy:  container.RestartPolicy{Name: container.RestartPolicyDisabled},
		PortBindings:   network.PortMap{port: {{HostIP: ip, HostPort: strconv.Itoa(svc.Port)}}},
		ReadonlyRootfs: true,
		CapDrop:        []string{"ALL"},
		SecurityOpt:    []string{"no-new-privileges"},
	}
	_, err = r.cli.ContainerCreate(ctx, client.ContainerCreateOptions{Config: cfg, HostConfig: hc, Name: name})
	if err != nil && !cerrdefs.IsConflict(err) {
		return r.engineErr(fmt.Sprintf("host %s: service %s: create its network sandbox %s", host, svc.Name, name), err)
	}
	return nil
}

// sandboxImage is the reference of the image of pauseProgram for the engine's architecture,
// imported on the engine (one file, no base image) unless it is there.
func (r *Runtime) sandboxImage(ctx context.Context) (string, error) {
	v, err := r.cli.ServerVersion(ctx, client.ServerVersionOptions{})
	if err != nil {
		return "", r.engineErr("read the engine's architecture", err)
	}
	prog, err := pauseProgram(v.Arch)
	if err != nil {
		return "", err
	}
	sum := sha256.Sum256(prog)
	ref := SandboxRepository + ":" + v.Arch + "-" + hex.EncodeToString(sum[:6])
	if _, err := r.cli.ImageInspect(ctx, ref); err == nil {
		return ref, nil
	} else if !cerrdefs.IsNotFound(err) {
		return "", r.engineErr("inspect the network sandbox image "+ref, err)
	}
	var layer bytes.Buffer
	tw := tar.NewWriter(&layer)
	_ = tw.WriteHeader(&tar.Header{Name: "pause", Mode: 0o555, Size: int64(len(prog)), Typeflag: tar.TypeReg})
	_, _ = tw.Write(prog)
	_ = tw.Close()
	rc, err := r.cli.ImageImport(ctx, client.ImageImportSource{Source: &layer, SourceName: "-"}, ref,
		client.ImageImportOptions{Changes: []string{`ENTRYPOINT ["/pause"]`}})
	if err != nil {
		return "", r.engineErr("import the network sandbox image "+ref, err)
	}
	out, _ := io.ReadAll(rc)
	rc.Close()
	if _, err := r.cli.ImageInspect(ctx, ref); err != nil {
		return "", r.engineErr(fmt.Sprintf("import the network sandbox image %s (the engine answered %q)", ref, out), err)
	}
	return ref, nil
}

// removeUnusedSandboxes removes service's sandboxes on host but keep that no container uses.
func (r *Runtime) removeUnusedSandboxes(ctx context.Context, host, service, keep string) error {
	sbs, err := r.cli.ContainerList(ctx, client.ContainerListOptions{All: true, Filters: make(client.Filters).
		Add("label", LabelSandboxHost+"="+host).Add("label", LabelSandboxService+"="+service)})
	if err != nil {
		return r.engineErr(fmt.Sprintf("host %s: service %s: list its network sandboxes", host, service), err)
	}
	for _, sb := range sbs.Items {
		if sb.ID == keep {
			continue
		}
		if err := r.removeSandboxIfUnused(ctx, host, sb.ID); err != nil {
			return err
		}
	}
	return nil
}

// removeSandboxIfUnused force-removes the sandbox id of host (its program ignores the stop
// signal) unless a container in its network namespace runs or is made and waits for its start.
// An exited one (kept for its logs) does not hold it: its logs stay readable, and no exited
// instance is started again (the watchdog heals with a new container).
func (r *Runtime) removeSandboxIfUnused(ctx context.Context, host, id string) error {
	cs, err := r.cli.ContainerList(ctx, client.ContainerListOptions{All: true, Filters: make(client.Filters).Add("label", LabelHost+"="+host)})
	if err != nil {
		return r.engineErr(fmt.Sprintf("host %s: list containers to see whether network sandbox %.12s is used", host, id), err)
	}
	for _, c := range cs.Items {
		if c.HostConfig.NetworkMode == "container:"+id && (c.State == container.StateRunning || c.State == container.StateCreated ||
			c.State == container.StateRestarting || c.State == container.StatePaused) {
			return nil
		}
	}
	_, err = r.cli.ContainerRemove(ctx, id, client.ContainerRemoveOptions{Force: true})
	if err != nil && !cerrdefs.IsNotFound(err) {
		return r.engineErr(fmt.Sprintf("host %s: remove network sandbox %.12s, which no container uses", host, id), err)
	}
	return nil
}

// sandboxOf is the id of the sandbox whose network namespace c joined ("" when none).
func sandboxOf(c container.InspectResponse) string {
	if c.HostConfig == nil {
		return ""
	}
	id, _ := strings.CutPrefix(string(c.HostConfig.NetworkMode), "container:")
	if id == string(c.HostConfig.NetworkMode) {
		return ""
	}
	return id
}
