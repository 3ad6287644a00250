package docker_test

import (
	"context"
	"fmt"
	"net"
	"net/netip"
	"strconv"
	"strings"
	"testing"
	"time"

	cerrdefs "github.com/containerd/errdefs"
	"github.com/moby/moby/api/types/container"
	"github.com/moby/moby/api/types/network"
	"github.com/moby/moby/client"

	"github.com/zero502/zero502/infra/runtime"
	"github.com/zero502/zero502/infra/runtime/docker"
	"github.com/zero502/zero502/infra/runtime/docker/dockertest"
	"github.com/zero502/zero502/internal/testrig/tcpserver"
)

// sandboxOf is the engine's inspect of the network sandbox container c joined.
func sandboxOf(t *testing.T, rt *docker.Runtime, c container.InspectResponse) container.InspectResponse {
	t.Helper()
	id, ok := strings.CutPrefix(string(c.HostConfig.NetworkMode), "container:")
	if !ok {
		t.Fatalf("container %s has network mode %q, want container:<its sandbox>", c.Name, c.HostConfig.NetworkMode)
	}
	sb, err := inspectContainer(context.Background(), rt, id)
	if err != nil {
		t.Fatalf("the sandbox %s of container %s: %v", id, c.Name, err)
	}
	if sb.Config.Labels[docker.LabelSandboxHost] == "" || sb.Config.Labels[docker.LabelService] != "" {
		t.Fatalf("sandbox %s labels %v, want %s and no %s (List must not take it for an instance)",
			sb.Name, sb.Config.Labels, docker.LabelSandboxHost, docker.LabelService)
	}
	return sb
}

func sandboxOfInstance(t *testing.T, rt *docker.Runtime, inst runtime.Instance) container.InspectResponse {
	t.Helper()
	c, err := inspectContainer(context.Background(), rt, inst.ID)
	if err != nil {
		t.Fatal(err)
	}
	return sandboxOf(t, rt, c)
}

// assertGone fails unless container id is gone from the engine.
func assertGone(t *testing.T, rt *docker.Runtime, id, what string) {
	t.Helper()
	if _, err := inspectContainer(context.Background(), rt, id); !cerrdefs.IsNotFound(err) {
		t.Errorf("%s %.12s: inspect = %v, want it removed", what, id, err)
	}
}

// assertFree fails unless the port can be listened on at 127.0.0.1: nothing publishes it.
func assertFree(t *testing.T, port int) {
	t.Helper()
	ln, err := net.Listen("tcp", fmt.Sprintf("127.0.0.1:%d", port))
	if err != nil {
		t.Errorf("port %d is still held: %v", port, err)
		return
	}
	ln.Close()
}

// A stop-first replacement joins the sandbox its predecessor ran in (made while the old one
// still serves, started once it stopped); the sandbox outlives the old container and goes with
// the stop of the last one, freeing the port.
func TestAReplacementRunsInItsPredecessorsSandboxAndTheLastStopFreesThePort(t *testing.T) {
	rt := dockertest.Engine(t)
	image := dockertest.Image(t, rt)
	host := dockertest.HostName(t, rt)
	port := tcpserver.FreePort(t)
	ctx := context.Background()
	v1 := startApp(t, rt, host, appService(image, "web", "v1", port, 200*time.Millisecond, 200*time.Millisecond))
	sb := sandboxOfInstance(t, rt, v1)
	if sb.State == nil || !sb.State.Running || sb.HostConfig.ReadonlyRootfs != true || sb.Config.User != "65534:65534" {
		t.Fatalf("sandbox %s: state %+v, read-only %v, user %q; want running, read-only, as nobody",
			sb.Name, sb.State, sb.HostConfig.ReadonlyRootfs, sb.Config.User)
	}

	v2svc := appService(image, "web", "v2", port, 200*time.Millisecond, 200*time.Millisecond)
	if err := rt.Prepare(ctx, host, v2svc); err != nil {
		t.Fatalf("prepare v2 while v1 serves on its port: %v", err)
	}
	if _, err := rt.Stop(ctx, v1, 5*time.Second); err != nil {
		t.Fatal(err)
	}
	if got, err := inspectContainer(ctx, rt, sb.ID); err != nil || !got.State.Running {
		t.Fatalf("after v1's stop, with v2 prepared in it, the sandbox: %v; want it kept", err)
	}
	v2, err := rt.Start(ctx, host, v2svc)
	if err != nil {
		t.Fatalf("start the prepared v2: %v", err)
	}
	waitBody(t, "http://"+v2svc.Address+"/", "version v2")
	if got := sandboxOfInstance(t, rt, v2); got.ID != sb.ID {
		t.Fatalf("v2 runs in sandbox %s, want v1's %s (a new one would have re-made the network)", got.Name, sb.Name)
	}
	if err := rt.Remove(ctx, v1); err != nil {
		t.Fatal(err)
	}
	waitBody(t, "http://"+v2svc.Address+"/", "version v2")

	if _, err := rt.Stop(ctx, v2, 5*time.Second); err != nil {
		t.Fatal(err)
	}
	assertGone(t, rt, sb.ID, "the sandbox of the service's last stopped container")
	assertFree(t, port)
	if err := rt.Remove(ctx, v2); err != nil {
		t.Fatal(err)
	}
}

// A container killed (kept for its logs, never removed) holds no port: its sandbox goes with it.
func TestAKilledContainerKeptForItsLogsHoldsNoPort(t *testing.T) {
	rt := dockertest.Engine(t)
	image := dockertest.Image(t, rt)
	host := dockertest.HostName(t, rt)
	port := tcpserver.FreePort(t)
	v1 := startApp(t, rt, host, appService(image, "web", "v1", port, 200*time.Millisecond, 200*time.Millisecond))
	if _, err := rt.Stop(context.Background(), v1, 0); err != nil {
		t.Fatal(err)
	}
	assertFree(t, port)
}

// A sandbox removed by hand, or stopped with the engine, is made or started again by the next
// Start: the watchdog's heal after a reboot finds the port published again.
func TestAStartMakesAGoneSandboxAgainAndStartsAStoppedOne(t *testing.T) {
	rt := dockertest.Engine(t)
	image := dockertest.Image(t, rt)
	host := dockertest.HostName(t, rt)
	port := tcpserver.FreePort(t)
	ctx := context.Background()
	v1 := startApp(t, rt, host, appService(image, "web", "v1", port, 200*time.Millisecond, 200*time.Millisecond))
	sb := sandboxOfInstance(t, rt, v1)
	if _, err := rt.Client().ContainerRemove(ctx, sb.ID, client.ContainerRemoveOptions{Force: true}); err != nil {
		t.Fatal(err)
	}
	if _, err := rt.Stop(ctx, v1, 5*time.Second); err != nil {
		t.Fatal(err)
	}
	v2 := startApp(t, rt, host, appService(image, "web", "v2", port, 200*time.Millisecond, 200*time.Millisecond))
	sb2 := sandboxOfInstance(t, rt, v2)
	if sb2.ID == sb.ID {
		t.Fatal("v2 claims the removed sandbox")
	}

	// The engine stops both (a restart of it, a reboot): killed behind the runtime's back.
	for _, id := range []string{v2.ID, sb2.ID} {
		if _, err := rt.Client().ContainerKill(ctx, id, client.ContainerKillOptions{Signal: "KILL"}); err != nil {
			t.Fatal(err)
		}
	}
	v3 := startApp(t, rt, host, appService(image, "web", "v3", port, 200*time.Millisecond, 200*time.Millisecond))
	if got := sandboxOfInstance(t, rt, v3); got.ID != sb2.ID || !got.State.Running {
		t.Fatalf("v3 runs in sandbox %s (running %v), want the stopped %s started again", got.Name, got.State.Running, sb2.Name)
	}
}

// A start-first service's two instances, on its two ports, run side by side in two sandboxes,
// each its own network namespace as before. When the service becomes stop-first on one port, the
// new instance gets that port's sandbox, and the other port is free.
func TestAStartFirstServiceHasASandboxPerPort(t *testing.T) {
	rt := dockertest.Engine(t)
	image := dockertest.Image(t, rt)
	host := dockertest.HostName(t, rt)
	ps := tcpserver.FreePorts(t, 2)
	ctx := context.Background()
	a := appService(image, "web", "v1", ps[0], 200*time.Millisecond, 200*time.Millisecond)
	a.Ports = []int{ps[0], ps[1]}
	b := appService(image, "web", "v2", ps[1], 200*time.Millisecond, 200*time.Millisecond)
	b.Ports = a.Ports
	v1 := startApp(t, rt, host, a)
	v2 := startApp(t, rt, host, b)
	sa, sb := sandboxOfInstance(t, rt, v1), sandboxOfInstance(t, rt, v2)
	if sa.ID == sb.ID || len(sa.HostConfig.PortBindings) != 1 || len(sb.HostConfig.PortBindings) != 1 {
		t.Fatalf("start-first sandboxes %s %+v and %s %+v: want one per port, each publishing its own",
			sa.Name, sa.HostConfig.PortBindings, sb.Name, sb.HostConfig.PortBindings)
	}
	waitBody(t, "http://"+a.Address+"/", "version v1")

	for _, in := range []runtime.Instance{v1, v2} {
		if _, err := rt.Stop(ctx, in, 5*time.Second); err != nil {
			t.Fatal(err)
		}
	}
	if err := rt.Remove(ctx, v2); err != nil { // v1 stays, exited, as a killed instance is kept for its logs
		t.Fatal(err)
	}
	one := appService(image, "web", "v3", ps[0], 200*time.Millisecond, 200*time.Millisecond)
	startApp(t, rt, host, one)
	assertFree(t, ps[1])
}

// The first start-first deploy after an upgrade from a zero502 without sandboxes: the old
// container publishes its port itself; the new instance's sandbox publishes only the other port,
// so it starts beside it.
func TestAStartFirstInstanceStartsBesideAContainerFromBeforeSandboxes(t *testing.T) {
	rt := dockertest.Engine(t)
	image := dockertest.Image(t, rt)
	host := dockertest.HostName(t, rt)
	ps := tcpserver.FreePorts(t, 2)
	ctx := context.Background()
	old := appService(image, "web", "v1", ps[0], 200*time.Millisecond, 200*time.Millisecond)
	port, _ := network.ParsePort(strconv.Itoa(ps[0]) + "/tcp")
	c, err := rt.Client().ContainerCreate(ctx, client.ContainerCreateOptions{
		Config: &container.Config{Image: image, Cmd: old.Command, ExposedPorts: network.PortSet{port: {}},
			Labels: map[string]string{docker.LabelHost: host, docker.LabelService: "web", docker.LabelVersion: "v1", docker.LabelAddress: old.Address}},
		HostConfig: &container.HostConfig{PortBindings: network.PortMap{port: {{HostIP: netip.MustParseAddr("127.0.0.1"), HostPort: strconv.Itoa(ps[0])}}}},
	})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := rt.Client().ContainerStart(ctx, c.ID, client.ContainerStartOptions{}); err != nil {
		t.Fatal(err)
	}
	waitBody(t, "http://"+old.Address+"/", "version v1")
	next := appService(image, "web", "v2", ps[1], 200*time.Millisecond, 200*time.Millisecond)
	next.Ports = []int{ps[0], ps[1]}
	startApp(t, rt, host, next)
	waitBody(t, "http://"+old.Address+"/", "version v1")
}
