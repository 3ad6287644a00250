package docker

import (
	"archive/tar"
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"io"
	"net"
	"sort"
	"strconv"
	"strings"

	cerrdefs "github.com/containerd/errdefs"
	"github.com/moby/moby/api/types/container"
	"github.com/moby/moby/api/types/network"
	"github.com/moby/moby/client"

	"github.com/zero502/zero502/infra/spec"
)

// A network sandbox holds a service's network namespace on a host, as a Kubernetes pod's pause
// container does: one small container per host, service, address and ports that publishes the
// service's ports (both of a start-first service) and runs nothing but pauseProgram. Every
// container of the service joins its namespace (network mode container:<sandbox>), so starting
// or stopping a version's container sets up and tears down no bridge endpoint, NAT rule or
// port proxy: on the engines measured that halves a container's start (about 380 → 110 ms) and
// takes 100 ms off its stop, time the host would otherwise stand out of rotation. The old and new
// container of a stop-first deploy bind the same port in the same namespace one after the other.
//
// A sandbox is made on a service's first start and reused while its address and ports stay
// the same; Remove takes it away with the last container that uses it (runs, or is made and
// not yet started), so a stopped service holds no port. A different address or port set gets a
// new sandbox beside the old, whose containers keep serving until they go; the service's
// sandboxes nothing uses are removed before a new one starts, so the ports they held are free.
const (
	// LabelSandboxHost and LabelSandboxService mark a sandbox with its host and service (not
	// LabelHost and LabelService: a sandbox is no instance, and List does not return it).
	LabelSandboxHost    = "zero502.sandbox.host"
	LabelSandboxService = "zero502.sandbox.service"
	// SandboxRepository is the repository of the sandbox images: <arch>-<12 hex of the program>.
	SandboxRepository = "zero502/sandbox"
)

// sandboxPorts are the ports svc's sandbox publishes: a start-first service's two, else its one.
func sandboxPorts(svc spec.Service) []int {
	ports := append([]int(nil), svc.Ports...)
	if len(ports) == 0 || !containsInt(ports, svc.Port) {
		ports = append(ports, svc.Port)
	}
	sort.Ints(ports)
	return ports
}

func containsInt(xs []int, x int) bool {
	for _, v := range xs {
		if v == x {
			return true
		}
	}
	return false
}

// sandboxAddress is the host part of svc's address: where its sandbox publishes (the port of
// a start-first service's address is one of two).
func sandboxAddress(svc spec.Service) string {
	if h, _, err := net.SplitHostPort(svc.Address); err == nil {
		return h
	}
	return svc.Address
}

// sandboxName is zero502-<host>-<service>-sandbox-<8 hex>, the hex the start of the SHA-256 of
// the host, service, address and ports: what the sandbox publishes, so a change of them names a
// new one.
func sandboxName(host string, svc spec.Service) string {
	sum := sha256.Sum256(fmt.Appendf(nil, "%s\x00%s\x00%s\x00%v", host, svc.Name, sandboxAddress(svc), sandboxPorts(svc)))
	return strings.Join([]string{"zero502", nameUnsafe.ReplaceAllString(host, "_"),
		nameUnsafe.ReplaceAllString(svc.Name, "_"), "sandbox", hex.EncodeToString(sum[:4])}, "-")
}

// sandbox returns the id of svc's sandbox on host, making it first. With start it is running
// too: its sandboxes that no container uses any more (of an earlier address or port set) are
// removed first, so the ports they hold are free for it. Without start (a container prepared
// while the old instance still serves) it may be only made: its ports may still be another's.
func (r *Runtime) sandbox(ctx context.Context, host string, svc spec.Service, start bool) (string, error) {
	name := sandboxName(host, svc)
	c, err := r.inspect(ctx, name)
	if cerrdefs.IsNotFound(err) {
		if err := r.makeSandbox(ctx, host, svc, name); err != nil {
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
		return "", r.engineErr(fmt.Sprintf("host %s: service %s: start its network sandbox %s, which publishes port(s) %v on %s "+
			"(are they free? `ss -ltnp` names what holds one)", host, svc.Name, name, sandboxPorts(svc), sandboxAddress(svc)), err)
	}
	return c.ID, nil
}

// makeSandbox creates (does not start) the sandbox name of svc on host. One another process
// made meanwhile under the same name is as good.
func (r *Runtime) makeSandbox(ctx context.Context, host string, svc spec.Service, name string) error {
	image, err := r.sandboxImage(ctx)
	if err != nil {
		return fmt.Errorf("host %s: service %s: %w", host, svc.Name, err)
	}
	ip, err := bindIP(ctx, svc.Address)
	if err != nil {
		return fmt.Errorf("host %s: service %s: %w", host, svc.Name, err)
	}
	cfg := &container.Config{
		Image:        image,
		User:         "65534:65534",
		ExposedPorts: network.PortSet{},
		Labels:       map[string]string{LabelSandboxHost: host, LabelSandboxService: svc.Name},
	}
	hc := &container.HostConfig{
		RestartPolicy:  container.RestartPolicy{Name: container.RestartPolicyDisabled},
		PortBindings:   network.PortMap{},
		ReadonlyRootfs: true,
		CapDrop:        []string{"ALL"},
		SecurityOpt:    []string{"no-new-privileges"},
	}
	for _, p := range sandboxPorts(svc) {
		port, err := network.ParsePort(strconv.Itoa(p) + "/tcp")
		if err != nil {
			return fmt.Errorf("host %s: service %s: port %d: %w", host, svc.Name, p, err)
		}
		cfg.ExposedPorts[port] = struct{}{}
		hc.PortBindings[port] = []network.PortBinding{{HostIP: ip, HostPort: strconv.Itoa(p)}}
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
