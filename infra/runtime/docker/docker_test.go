package docker_test

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/moby/moby/api/types/container"
	"github.com/moby/moby/client"

	"github.com/zero502/zero502/infra/runtime"
	"github.com/zero502/zero502/infra/runtime/docker"
	"github.com/zero502/zero502/infra/runtime/docker/dockertest"
	"github.com/zero502/zero502/infra/secrets"
	"github.com/zero502/zero502/infra/spec"
	"github.com/zero502/zero502/internal/testrig/osuser"
	"github.com/zero502/zero502/internal/testrig/poll"
	"github.com/zero502/zero502/internal/testrig/tcpserver"
	"github.com/zero502/zero502/internal/testrig/testmain"
)

func TestMain(m *testing.M) { os.Exit(dockertest.Main(m, testmain.Options{})) }

// appService is a spec for `zero502 app` in the test image, published on 127.0.0.1:port.
func appService(image, name, version string, port int, drain, shutdown time.Duration, extra ...string) spec.Service {
	cmd := []string{"/zero502", "app", "--host", "0.0.0.0", "--port", fmt.Sprint(port), "--version", version,
		"--drain", drain.String(), "--shutdown", shutdown.String()}
	return spec.Service{
		Name: name, Version: version, Image: image,
		Command: append(cmd, extra...),
		Address: fmt.Sprintf("127.0.0.1:%d", port), Port: port, HealthPath: "/health",
		Env: map[string]string{"ZERO502_TEST": "1"},
	}
}

// waitBody polls url until it answers 200 with a body containing want.
func waitBody(t *testing.T, url, want string) {
	t.Helper()
	poll.UntilNil(t, 30*time.Second, fmt.Sprintf("%s never answered %q", url, want), func() error {
		resp, err := http.Get(url)
		if err != nil {
			return fmt.Errorf("last %w", err)
		}
		b, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if resp.StatusCode != 200 || !strings.Contains(string(b), want) {
			return fmt.Errorf("last status %d body %q", resp.StatusCode, b)
		}
		return nil
	})
}

func startApp(t *testing.T, rt *docker.Runtime, host string, svc spec.Service) runtime.Instance {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	inst, err := rt.Start(ctx, host, svc)
	if err != nil {
		t.Fatalf("start: %v", err)
	}
	waitBody(t, "http://"+svc.Address+"/", "version "+svc.Version)
	return inst
}

func TestStartPublishesThePortWithLabelsAndListFindsIt(t *testing.T) {
	rt := dockertest.Engine(t)
	image := dockertest.Image(t, rt)
	host := dockertest.HostName(t, rt)
	port := tcpserver.FreePort(t)
	svc := appService(image, "web", "v1", port, 300*time.Millisecond, 300*time.Millisecond)
	svc.Secrets = map[string]string{"DB_PASSWORD": secrets.Digest("DB_PASSWORD", "s3cret")}
	svc.SecretEnv = map[string]secrets.Value{"DB_PASSWORD": "s3cret"}
	inst := startApp(t, rt, host, svc)

	if inst.Host != host || inst.Service != "web" || inst.Version != "v1" || !inst.Running() {
		t.Fatalf("instance = %+v, want running web v1 on %s", inst, host)
	}
	if inst.Address != fmt.Sprintf("127.0.0.1:%d", port) || inst.StartedAt.IsZero() {
		t.Fatalf("instance = %+v, want address 127.0.0.1:%d and a start time", inst, port)
	}
	ctx := context.Background()
	c, err := inspectContainer(ctx, rt, inst.ID)
	if err != nil {
		t.Fatal(err)
	}
	if !strings.HasPrefix(c.Name, "/zero502-"+host+"-web-v1-") {
		t.Errorf("container name %q, want zero502-%s-web-v1-<rand>", c.Name, host)
	}
	if c.HostConfig.RestartPolicy.Name != "no" {
		t.Errorf("restart policy %q, want no (the watchdog is the healer)", c.HostConfig.RestartPolicy.Name)
	}
	sb := sandboxOf(t, rt, c)
	if len(c.HostConfig.PortBindings) != 0 || len(sb.HostConfig.PortBindings) != 1 {
		t.Errorf("bindings: container %+v, its sandbox %+v; want the port published by the sandbox alone", c.HostConfig.PortBindings, sb.HostConfig.PortBindings)
	}
	for p, bs := range sb.HostConfig.PortBindings {
		if len(bs) != 1 || bs[0].HostIP.String() != "127.0.0.1" || bs[0].HostPort != fmt.Sprint(port) || p.Num() != uint16(port) {
			t.Errorf("binding %s → %+v, want only 127.0.0.1:%d", p, bs, port)
		}
	}
	if !containsEnv(c.Config.Env, "ZERO502_TEST=1") || !containsEnv(c.Config.Env, "DB_PASSWORD=s3cret") {
		t.Errorf("env %v lacks ZERO502_TEST=1 or the secret DB_PASSWORD (given at create time)", c.Config.Env)
	}
	for k, v := range c.Config.Labels {
		if strings.Contains(v, "s3cret") {
			t.Errorf("label %s=%q holds the secret's value", k, v)
		}
	}
	if strings.Contains(strings.Join(c.Config.Cmd, " "), "s3cret") {
		t.Errorf("the container's command %q holds the secret's value", c.Config.Cmd)
	}

	for _, f := range []runtime.Filter{{Host: host}, {Host: host, Service: "web"}, {Host: host, Version: "v1"}} {
		got, err := rt.List(ctx, f)
		if err != nil {
			t.Fatal(err)
		}
		if len(got) != 1 || got[0].ID != inst.ID || got[0].Digest != svc.Digest() || !got[0].Runs(svc) {
			t.Errorf("List(%+v) = %+v, want just %s, started from digest %s", f, got, inst.ID, svc.Digest())
		}
	}
	if got, _ := rt.List(ctx, runtime.Filter{Host: host, Version: "v2"}); len(got) != 0 {
		t.Errorf("List(version v2) = %+v, want none", got)
	}
}

// A host address given as a name is published on the IP it resolves to, not on every interface.
func TestANameAddressIsPublishedOnItsIPOnly(t *testing.T) {
	rt := dockertest.Engine(t)
	image := dockertest.Image(t, rt)
	host := dockertest.HostName(t, rt)
	port := tcpserver.FreePort(t)
	svc := appService(image, "web", "v1", port, 300*time.Millisecond, 300*time.Millisecond)
	svc.Address = fmt.Sprintf("localhost:%d", port)
	inst := startApp(t, rt, host, svc)
	c, err := inspectContainer(context.Background(), rt, inst.ID)
	if err != nil {
		t.Fatal(err)
	}
	sb := sandboxOf(t, rt, c)
	for p, bs := range sb.HostConfig.PortBindings {
		if len(bs) != 1 || bs[0].HostIP.String() != "127.0.0.1" {
			t.Errorf("address localhost:%d: binding %s → %+v, want 127.0.0.1 only (never every interface)", port, p, bs)
		}
	}
	if len(sb.HostConfig.PortBindings) != 1 {
		t.Errorf("bindings %+v, want the one port", sb.HostConfig.PortBindings)
	}
}

func containsEnv(env []string, kv string) bool {
	for _, e := range env {
		if e == kv {
			return true
		}
	}
	return false
}

func TestStopDrainsThenExitsZeroAndRemoveForgetsIt(t *testing.T) {
	rt := dockertest.Engine(t)
	image := dockertest.Image(t, rt)
	host := dockertest.HostName(t, rt)
	port := tcpserver.FreePort(t)
	drain := 700 * time.Millisecond
	inst := startApp(t, rt, host, appService(image, "web", "v1", port, drain, 300*time.Millisecond))
	ctx := context.Background()

	if err := rt.Remove(ctx, inst); err == nil || !strings.Contains(err.Error(), "stop it first") {
		t.Fatalf("Remove of a running container = %v, want a refusal saying to stop it first", err)
	}
	st, err := rt.Stop(ctx, inst, 5*time.Second)
	if err != nil || st.Killed || st.ExitCode != 0 {
		t.Fatalf("Stop = %+v, %v; want exit 0 within the grace, not killed", st, err)
	}
	if st.Took < drain {
		t.Errorf("Stop took %s, shorter than the drain window %s: the handshake did not run", st.Took, drain)
	}
	got, err := rt.Inspect(ctx, inst.ID)
	if err != nil || got.Running() || got.ExitCode != 0 {
		t.Fatalf("Inspect after stop = %+v, %v; want exited 0", got, err)
	}
	if err := rt.Remove(ctx, inst); err != nil {
		t.Fatalf("Remove: %v", err)
	}
	if _, err := rt.Inspect(ctx, inst.ID); !errors.Is(err, runtime.ErrNotFound) {
		t.Fatalf("Inspect after remove = %v, want ErrNotFound", err)
	}
	if l, _ := rt.List(ctx, runtime.Filter{Host: host}); len(l) != 0 {
		t.Fatalf("List after remove = %+v, want none", l)
	}
	if err := rt.Remove(ctx, inst); err != nil {
		t.Fatalf("second Remove = %v, want nil (already gone)", err)
	}
}

func TestStopPastTheGraceIsReportedAsKilledI2(t *testing.T) {
	rt := dockertest.Engine(t)
	image := dockertest.Image(t, rt)
	host := dockertest.HostName(t, rt)
	port := tcpserver.FreePort(t)
	// drain + shutdown (20s) does not fit in the grace (1s): the runtime must SIGKILL.
	inst := startApp(t, rt, host, appService(image, "web", "v1", port, 15*time.Second, 5*time.Second))

	st, err := rt.Stop(context.Background(), inst, time.Second)
	if !errors.Is(err, runtime.ErrKilled) || !st.Killed || st.ExitCode != 137 {
		t.Fatalf("Stop = %+v, %v; want Killed, exit 137, an error wrapping ErrKilled", st, err)
	}
	if !strings.Contains(err.Error(), "I2") || !strings.Contains(err.Error(), "stop_grace") {
		t.Errorf("error %q should name invariant I2 and drain.stop_grace", err)
	}
}

func TestStopWithoutGraceKillsAtOnceAndIsNoError(t *testing.T) {
	rt := dockertest.Engine(t)
	image := dockertest.Image(t, rt)
	host := dockertest.HostName(t, rt)
	port := tcpserver.FreePort(t)
	inst := startApp(t, rt, host, appService(image, "web", "v1", port, 15*time.Second, 5*time.Second))

	st, err := rt.Stop(context.Background(), inst, 0)
	if err != nil || st.ExitCode != 137 || !st.Killed {
		t.Fatalf("Stop(grace 0) = %+v, %v; want killed, exit 137 and no error (the naive deploy asked for it)", st, err)
	}
	if st.Took > 10*time.Second {
		t.Errorf("Stop(grace 0) took %s; it must not wait for the drain", st.Took)
	}
	// Stopping an exited instance reports it as it is.
	st, err = rt.Stop(context.Background(), inst, time.Second)
	if err != nil || st.Killed || st.ExitCode != 137 {
		t.Fatalf("Stop of an exited container = %+v, %v; want its exit code, no kill, no error", st, err)
	}
}

func TestStartWithoutTheImageSaysHowToBuildIt(t *testing.T) {
	rt := dockertest.Engine(t)
	host := dockertest.HostName(t, rt)
	svc := appService("zero502/app:never-built-"+host, "web", "v1", tcpserver.FreePort(t), time.Second, time.Second)
	_, err := rt.Start(context.Background(), host, svc)
	if err == nil || !strings.Contains(err.Error(), "zero502 image build") {
		t.Fatalf("Start with a missing image = %v, want an error saying to run zero502 image build", err)
	}
	if l, _ := rt.List(context.Background(), runtime.Filter{Host: host}); len(l) != 0 {
		t.Fatalf("a failed start left containers behind: %+v", l)
	}
}

// A container the engine cannot start (its command is not in the image) fails the start with the
// engine's reason and leaves nothing behind. The error points at no port: the service's port is
// published and bound in its network sandbox, never by the container's start, and a service
// without a port has none.
func TestAStartTheEngineRefusesSaysWhyAndNamesNoPort(t *testing.T) {
	rt := dockertest.Engine(t)
	image := dockertest.Image(t, rt)
	host := dockertest.HostName(t, rt)
	for _, port := range []int{0, tcpserver.FreePort(t)} {
		svc := appService(image, "web", "v1", port, time.Second, time.Second)
		if port == 0 {
			svc.Address = ""
		}
		svc.Command = []string{"/no-such-program"}
		_, err := rt.Start(context.Background(), host, svc)
		if err == nil || !strings.Contains(err.Error(), "/no-such-program") {
			t.Fatalf("port %d: Start of a command the image lacks = %v; want the engine's reason naming it", port, err)
		}
		if strings.Contains(err.Error(), "port") {
			t.Errorf("port %d: Start error %q points at a port; the start failed for its command", port, err)
		}
		if l, _ := rt.List(context.Background(), runtime.Filter{Host: host}); len(l) != 0 {
			t.Fatalf("port %d: a failed start left containers behind: %+v", port, l)
		}
	}
}

func TestAnUnreachableEngineSaysWhatToDo(t *testing.T) {
	rt, err := docker.New("tcp://127.0.0.1:1")
	if err != nil {
		t.Fatal(err)
	}
	defer rt.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	err = rt.Ping(ctx)
	if err == nil || !strings.Contains(err.Error(), "is the Docker Engine running?") {
		t.Fatalf("Ping of a closed port = %v, want advice", err)
	}
	_, err = rt.List(ctx, runtime.Filter{})
	if err == nil || !strings.Contains(err.Error(), "is the Docker Engine running?") {
		t.Fatalf("List on a closed port = %v, want advice", err)
	}
}

func TestTheImageRunsAsNobodyWithAWritableTmp(t *testing.T) {
	rt := dockertest.Engine(t)
	image := dockertest.Image(t, rt)
	host := dockertest.HostName(t, rt)
	port := tcpserver.FreePort(t)
	svc := appService(image, "web", "v1", port, 300*time.Millisecond, 300*time.Millisecond, "--orders-log", "/tmp/orders.jsonl")
	inst := startApp(t, rt, host, svc)
	req, _ := http.NewRequest(http.MethodPost, "http://"+svc.Address+"/orders", nil)
	req.Header.Set("Idempotency-Key", "k1")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != http.StatusCreated {
		t.Fatalf("POST /orders with --orders-log /tmp/orders.jsonl: %s %s; the image's /tmp must be writable", resp.Status, body)
	}
	c, err := inspectContainer(context.Background(), rt, inst.ID)
	if err != nil {
		t.Fatal(err)
	}
	if c.Config.User != "65534:65534" {
		t.Errorf("container user %q, want 65534:65534 (nobody)", c.Config.User)
	}
}

// services[].user is the container's user (docker run --user), over the image's USER, and its
// process runs as that uid on the host's kernel.
func TestAContainerRunsAsTheServicesUser(t *testing.T) {
	rt := dockertest.Engine(t)
	image := dockertest.Image(t, rt)
	host := dockertest.HostName(t, rt)
	port := tcpserver.FreePort(t)
	svc := appService(image, "web", "v1", port, 300*time.Millisecond, 300*time.Millisecond)
	svc.User = "4321:4321"
	inst := startApp(t, rt, host, svc)
	c, err := inspectContainer(context.Background(), rt, inst.ID)
	if err != nil {
		t.Fatal(err)
	}
	if c.Config.User != "4321:4321" {
		t.Fatalf("container user %q, want services[].user 4321:4321", c.Config.User)
	}
	if c.State == nil || c.State.Pid == 0 {
		t.Fatalf("container state %+v: want a running process", c.State)
	}
	if uid := osuser.UIDOf(t, c.State.Pid); uid != 4321 {
		t.Errorf("the container's process runs as uid %d, want 4321", uid)
	}
}

func TestAContainerGetsExactlyItsConfiguredEnvNothingOfTheDeployers(t *testing.T) {
	t.Setenv("AWS_SECRET_ACCESS_KEY", "deployer-secret")
	t.Setenv("ZERO502_X", "deployer-only")
	rt := dockertest.Engine(t)
	image := dockertest.Image(t, rt)
	host := dockertest.HostName(t, rt)
	port := tcpserver.FreePort(t)
	inst := startApp(t, rt, host, appService(image, "web", "v1", port, 300*time.Millisecond, 300*time.Millisecond))
	ctx := context.Background()
	c, err := inspectContainer(ctx, rt, inst.ID)
	if err != nil {
		t.Fatal(err)
	}
	img, err := rt.Client().ImageInspect(ctx, image)
	if err != nil {
		t.Fatal(err)
	}
	var imageEnv []string
	if img.Config != nil {
		imageEnv = img.Config.Env
	}
	var extra []string
	for _, e := range c.Config.Env {
		switch {
		case e == "ZERO502_TEST=1", containsEnv(imageEnv, e):
		case strings.HasPrefix(e, "PATH=") && len(imageEnv) == 0: // the engine's default PATH
		default:
			extra = append(extra, e)
		}
	}
	if len(extra) > 0 || !containsEnv(c.Config.Env, "ZERO502_TEST=1") {
		t.Fatalf("container env %v: want ZERO502_TEST=1 and the image's own %v, nothing else (extra: %v)", c.Config.Env, imageEnv, extra)
	}
}

// The app in the test image is a Go program: SIGQUIT makes the Go runtime dump its goroutines
// and exit 2 at once, where SIGTERM would drain and exit 0. The exit code tells which signal the
// stop sent.
func TestStopSendsTheServicesStopSignal(t *testing.T) {
	rt := dockertest.Engine(t)
	image := dockertest.Image(t, rt)
	host := dockertest.HostName(t, rt)
	port := tcpserver.FreePort(t)
	svc := appService(image, "web", "v1", port, 15*time.Second, time.Second)
	svc.StopSignal = "SIGQUIT"
	inst := startApp(t, rt, host, svc)
	if inst.StopSignal != "SIGQUIT" {
		t.Fatalf("instance %+v, want stop signal SIGQUIT", inst)
	}
	c, err := inspectContainer(context.Background(), rt, inst.ID)
	if err != nil || c.Config.StopSignal != "SIGQUIT" {
		t.Fatalf("container stop signal %q (%v), want SIGQUIT", c.Config.StopSignal, err)
	}
	st, err := rt.Stop(context.Background(), inst, 10*time.Second)
	if err != nil || st.Killed || st.ExitCode != 2 {
		t.Fatalf("Stop with stop_signal SIGQUIT = %+v, %v; want the Go runtime's SIGQUIT exit 2 (SIGTERM would drain for 15s and exit 0), not killed", st, err)
	}
}

// inspectContainer is the engine's own inspect of a container.
func inspectContainer(ctx context.Context, rt *docker.Runtime, id string) (container.InspectResponse, error) {
	res, err := rt.Client().ContainerInspect(ctx, id, client.ContainerInspectOptions{})
	return res.Container, err
}

// Prepare creates the container while the port is still another's (the old instance drains
// there), without starting it: List shows it not running. Start takes that container once the
// port is free; a prepared container Start never takes is removed by Discard, and a prepare of
// another spec is not taken.
func TestPrepareCreatesAheadAndStartTakesIt(t *testing.T) {
	rt := dockertest.Engine(t)
	image := dockertest.Image(t, rt)
	host := dockertest.HostName(t, rt)
	port := tcpserver.FreePort(t)
	ctx := context.Background()
	old := startApp(t, rt, host, appService(image, "web", "v1", port, 300*time.Millisecond, 300*time.Millisecond))

	next := appService(image, "web", "v2", port, 300*time.Millisecond, 300*time.Millisecond)
	if err := rt.Prepare(ctx, host, next); err != nil {
		t.Fatalf("prepare v2 while v1 holds the port: %v", err)
	}
	ready, err := rt.List(ctx, runtime.Filter{Host: host, Version: "v2"})
	if err != nil || len(ready) != 1 || ready[0].Running() {
		t.Fatalf("after Prepare, List(v2) = %+v (%v); want one container, not running", ready, err)
	}
	waitBody(t, "http://"+next.Address+"/", "version v1") // v1 still serves
	if _, err := rt.Stop(ctx, old, 5*time.Second); err != nil {
		t.Fatal(err)
	}
	inst := startApp(t, rt, host, next)
	if inst.ID != ready[0].ID {
		t.Errorf("Start ran %s, want the prepared container %s", inst.ID, ready[0].ID)
	}
	rt.Discard(ctx, host, next) // taken: nothing to remove
	if got, _ := rt.List(ctx, runtime.Filter{Host: host, Version: "v2"}); len(got) != 1 || !got[0].Running() {
		t.Errorf("after Start and Discard, List(v2) = %+v; want the running container", got)
	}

	third := appService(image, "web", "v3", port, 300*time.Millisecond, 300*time.Millisecond)
	if err := rt.Prepare(ctx, host, third); err != nil {
		t.Fatal(err)
	}
	other := third
	other.Env = map[string]string{"ZERO502_TEST": "2"}
	rt.Discard(ctx, host, other) // another spec: not this one's
	if got, _ := rt.List(ctx, runtime.Filter{Host: host, Version: "v3"}); len(got) != 1 {
		t.Fatalf("Discard of another spec touched the prepared v3: %+v", got)
	}
	rt.Discard(ctx, host, third)
	if got, _ := rt.List(ctx, runtime.Filter{Host: host, Version: "v3"}); len(got) != 0 {
		t.Errorf("after Discard, List(v3) = %+v; want none", got)
	}
}
