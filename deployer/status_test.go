package deployer

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/zero502/zero502/deployer/balancer"
	"github.com/zero502/zero502/infra/config"
	"github.com/zero502/zero502/infra/hostlock"
	"github.com/zero502/zero502/infra/runtime"
	"github.com/zero502/zero502/infra/spec"
	"github.com/zero502/zero502/internal/testrig/poll"
)

// runZero502 runs the real zero502 with args and returns its combined output and exit code.
func runZero502(t *testing.T, args ...string) (string, int) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	out, err := exec.CommandContext(ctx, bin, args...).CombinedOutput()
	if ee, ok := err.(*exec.ExitError); ok {
		return string(out), ee.ExitCode()
	} else if err != nil {
		t.Fatalf("zero502 %v: %v\n%s", args, err, out)
	}
	return string(out), 0
}

// statusJSON runs zero502 status --json and decodes it.
func statusJSON(t *testing.T, path string) (FleetStatus, bool, int) {
	t.Helper()
	out, code := runZero502(t, "status", "--config", path, "--json")
	var got struct {
		OK     bool        `json:"ok"`
		Status FleetStatus `json:"status"`
	}
	if err := json.Unmarshal([]byte(out), &got); err != nil {
		t.Fatalf("status --json: %v\n%s", err, out)
	}
	return got.Status, got.OK, code
}

// requireAgrees checks that status exits 0 and sees every host run version, healthy and in
// rotation. Status is one snapshot, its direct health check one request within the service's
// 150ms timeout: on a loaded machine one can miss it, so it is asked again, up to 15s.
func requireAgrees(t *testing.T, path, version string) {
	t.Helper()
	st, ok, code := statusJSON(t, path)
	for deadline := time.Now().Add(15 * time.Second); (code != 0 || !ok) && time.Now().Before(deadline); {
		time.Sleep(300 * time.Millisecond)
		st, ok, code = statusJSON(t, path)
	}
	if code != 0 || !ok {
		t.Fatalf("status after the deploy of %s: exit %d, ok %v, want 0 within 15s: %+v", version, code, ok, st)
	}
	for _, h := range st.Hosts {
		if h.Published != version || len(h.Services) != 1 || len(h.Services[0].Instances) != 1 {
			t.Fatalf("host %s: published %q, services %+v; want %s and one instance", h.Host, h.Published, h.Services, version)
		}
		in := h.Services[0].Instances[0]
		if in.Version != version || !in.Healthy || in.Balancer == nil || !in.Balancer.InRotation || in.Since.IsZero() || !strings.HasPrefix(in.ID, "pid:") {
			t.Fatalf("host %s: instance %+v; want %s, healthy, in rotation, with its pid and start", h.Host, in, version)
		}
	}
}

// status agrees with a real fleet (process runtime, the real in-house LB): exit 1 before any
// deploy (no spec), 0 after v1 and after v2 with what runs where, 1 after an instance crashed,
// naming the host and service.
func TestStatusAgreesWithARealFleetBeforeAndAfterADeployAndAfterACrash(t *testing.T) {
	t.Parallel()
	f := newFleet(t, 2)
	path := f.config("zero502.yaml", defaultValues())
	f.startLB(path)

	out, code := runZero502(t, "status", "--config", path)
	if code != 1 || !strings.Contains(out, "no published spec") {
		t.Fatalf("status of a fleet never deployed: exit %d, want 1 saying no published spec\n%s", code, out)
	}
	report := filepath.Join(t.TempDir(), "deploy.html")
	for _, v := range []string{"v1", "v2"} {
		if out, code := runDeploy(t, time.Minute, "--config", path, "--version", v, "--report", report); code != 0 {
			t.Fatalf("deploy %s: exit %d\n%s", v, code, out)
		}
		requireAgrees(t, path, v)
	}
	// deploy --report: the demo's self-contained page, from the real v1 → v2 deploy.
	page, err := os.ReadFile(report)
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"<title>zero502 deploy v2</title>", "<svg", ">host-a</text>", ">host-b</text>",
		"host-a drain +", "host-b left +", "host-b back +", "RESULT: every host runs v2", "v1 → v2"} {
		if !strings.Contains(string(page), want) {
			t.Errorf("deploy --report page lacks %q", want)
		}
	}
	if strings.Contains(string(page), "<script") || strings.Contains(string(page), "http://") && !strings.Contains(string(page), `xmlns="http://www.w3.org/2000/svg"`) {
		t.Errorf("deploy --report page is not self-contained")
	}
	out, code = runZero502(t, "status", "--config", path)
	if code != 0 || !strings.Contains(out, "every host agrees with its published spec") || strings.Count(out, "healthy, in rotation") != 2 {
		t.Fatalf("status table after v2: exit %d\n%s", code, out)
	}
	// Host-b's spec moved away (a config naming another state dir sees none): status says what
	// runs there without one, not "never deployed".
	specB := spec.Path(f.load(path).HostStateDir(f.load(path).Hosts[1]))
	if err := os.Rename(specB, specB+".moved"); err != nil {
		t.Fatal(err)
	}
	out, code = runZero502(t, "status", "--config", path)
	if code != 1 || strings.Contains(out, "never deployed") || !strings.Contains(out, "no published spec at "+specB+", but web v2 runs") {
		t.Fatalf("status with host-b's spec moved away while v2 runs there: exit %d; want 1 saying v2 runs without a spec\n%s", code, out)
	}
	if err := os.Rename(specB+".moved", specB); err != nil {
		t.Fatal(err)
	}

	insts, err := f.runtimes["host-a"].List(context.Background(), runtime.Filter{Service: "web"})
	if err != nil || len(insts) == 0 {
		t.Fatalf("host-a's instances: %v %v", insts, err)
	}
	for _, in := range insts {
		if in.Running() {
			pid, _ := strconv.Atoi(strings.TrimPrefix(in.ID, "pid:"))
			if err := syscall.Kill(pid, syscall.SIGKILL); err != nil {
				t.Fatal(err)
			}
		}
	}
	poll.UntilNil(t, 10*time.Second, "status sees the crash", func() error {
		out, code := runZero502(t, "status", "--config", path)
		if code != 1 || !strings.Contains(out, "host-a/web: the spec asks for v2, nothing runs") {
			return fmt.Errorf("exit %d\n%s", code, out)
		}
		if strings.Contains(out, "host-b/web") {
			return fmt.Errorf("host-b still runs and must not be named:\n%s", out)
		}
		return nil
	})
	// The host lock's holder and the watchdog's streak show; the lock is only looked at.
	cfg := f.load(path)
	held, err := hostlock.TryAcquire(cfg.HostLockPath(cfg.Hosts[1]), hostlock.Holder{Who: "ops@test", Command: "bootstrap.sh"})
	if err != nil {
		t.Fatal(err)
	}
	if out, code := runZero502(t, "watchdog", "--config", path, "--host", "host-a"); code != 0 || !strings.Contains(out, "web failing 1×") {
		t.Fatalf("a watchdog tick after the crash: exit %d\n%s", code, out)
	}
	st, _, code := statusJSON(t, path)
	held.Release()
	if code != 1 || !strings.Contains(st.Hosts[1].LockHeldBy, "ops@test (bootstrap.sh") || st.Hosts[0].LockHeldBy != "" {
		t.Errorf("status with host-b's lock held: exit %d, holders %q and %q", code, st.Hosts[0].LockHeldBy, st.Hosts[1].LockHeldBy)
	}
	if w := st.Hosts[0].Services[0].Watchdog; w == nil || w.Failures != 1 || !strings.Contains(w.LastError, "health") {
		t.Errorf("status of host-a/web after one failing tick: watchdog %+v, want a streak of 1 with its reason", w)
	}
}

// stop drains every instance, leaves nothing running, marks the specs stopped; the watchdog then
// leaves the service down however many ticks fail, status agrees (exit 0), the logs are there,
// and the next deploy starts it again.
func TestStopLeavesNothingRunningAndTheWatchdogDoesNotHealIt(t *testing.T) {
	t.Parallel()
	f := newFleet(t, 2)
	path := f.config("zero502.yaml", defaultValues())
	f.startLB(path)
	if out, code := runDeploy(t, time.Minute, "--config", path, "--version", "v1"); code != 0 {
		t.Fatalf("deploy v1: exit %d\n%s", code, out)
	}

	if out, code := runZero502(t, "stop", "--config", path, "--host", "host-z"); code != 2 || !strings.Contains(out, `--host "host-z": no such host`) {
		t.Fatalf("stop --host host-z: exit %d, want 2 naming it\n%s", code, out)
	}
	out, code := runZero502(t, "stop", "--config", path)
	if code != 0 {
		t.Fatalf("stop: exit %d\n%s", code, out)
	}
	for _, want := range []string{"host-a/web     drain", "host-b/web     left-rotation", "host-b/web     stopped", "spec marks web stopped"} {
		if !strings.Contains(out, want) {
			t.Errorf("stop output lacks %q (the drain, watched at the balancer, then a clean exit):\n%s", want, out)
		}
	}
	if got := f.versions(); len(got) != 0 {
		t.Fatalf("after stop, still running: %v", got)
	}
	for i := range 2 {
		s, err := spec.Read(spec.Path(f.stateDir(i)))
		if err != nil || !s.Services[0].Stopped {
			t.Fatalf("%s's spec after stop: %+v, %v; want web marked stopped", hostName(i), s, err)
		}
	}
	// heal_after is 4: five failing ticks would heal a service the spec did not mark stopped.
	for range 5 {
		if out, code := runZero502(t, "watchdog", "--config", path, "--host", "host-a"); code != 0 || !strings.Contains(out, "web stopped by the spec") {
			t.Fatalf("watchdog tick after stop: exit %d\n%s", code, out)
		}
	}
	if got := f.versions(); len(got) != 0 {
		t.Fatalf("the watchdog brought back %v after stop", got)
	}
	if out, code := runZero502(t, "status", "--config", path); code != 0 || !strings.Contains(out, "v1 (stopped)") {
		t.Fatalf("status after stop: exit %d, want 0 (nothing runs, as the specs ask)\n%s", code, out)
	}
	out, code = runZero502(t, "logs", "--config", path, "--host", "host-b", "--service", "web")
	if code != 0 || !strings.Contains(out, "== zero502") || !strings.Contains(out, "v1") {
		t.Fatalf("logs of host-b/web: exit %d\n%s", code, out)
	}
	if out, code := runZero502(t, "logs", "--config", path, "--host", "host-b"); code != 2 || !strings.Contains(out, "--service is required") {
		t.Fatalf("logs without --service: exit %d\n%s", code, out)
	}

	if out, code := runDeploy(t, time.Minute, "--config", path, "--version", "v2"); code != 0 {
		t.Fatalf("deploy v2 after stop: exit %d\n%s", code, out)
	}
	requireAgrees(t, path, "v2")
}

// stop --host drains a service that knows nothing of the handshake at the balancer first (drain:
// balancer, start-first: python3 -m http.server, which dies at once on SIGTERM), so the load
// through the LB loses no request while one host leaves; status then agrees.
func pythonStopOneHostUnderLoadDrainsAtTheBalancerFirst(t *testing.T) {
	f := newFleet(t, 2)
	path := f.anyConfig("python.yaml", anyValues{Command: pythonServer(t, f.dir, false), Strategy: "start-first"})
	f.startLB(path)
	ctx := context.Background()
	var ev1 eventLog
	if _, err := f.deployer(f.load(path), &ev1, Options{}).Deploy(ctx, "v1"); err != nil {
		t.Fatalf("deploy v1: %v\nevents:\n%s", err, &ev1)
	}
	m := startMeasure(t, f.listen, "/cgi-bin/orders")
	poll.UntilNil(t, 10*time.Second, "the load gets answers through the LB", func() error {
		if got := servedVersion(t, f.listen); got != "v1" {
			return fmt.Errorf("serves %q", got)
		}
		return nil
	})
	time.Sleep(time.Second) // some load before host-a leaves (30 req/s: a few dozen requests)
	var ev eventLog
	opts := Options{Self: bin, Events: ev.add, Runtime: func(h config.Host) (Runtime, error) { return f.runtimes[h.Name], nil }}
	err := Stop(ctx, f.load(path), StopTarget{Host: "host-a"}, opts)
	time.Sleep(time.Second) // and some after: host-b alone serves it
	res := m.stop(t)
	if err != nil {
		t.Fatalf("stop --host host-a: %v\nevents:\n%s", err, &ev)
	}
	requireNoFailure(t, res)
	if !strings.Contains(ev.String(), "drained at the balancer by the deployer") {
		t.Errorf("stop did not drain at the balancer first:\n%s", &ev)
	}
	if got := f.versions(); got["host-a"] != "" || got["host-b"] != "v1" {
		t.Errorf("after stop --host host-a: %v, want nothing on host-a and v1 on host-b", got)
	}
	st, err := Status(ctx, f.load(path), opts)
	if err != nil || !st.OK() {
		t.Errorf("status after stop --host host-a: %v, %+v; want agreement", err, st)
	}
}

// Status shows each host reached over ssh under its own name: a look whose status names another
// host (host-a speaking for host-b) is not taken as host-b's row, nor as host-a's state; host-a's
// row says the problem, and host-b keeps its own row.
func TestStatusShowsEachRemoteHostUnderItsOwnName(t *testing.T) {
	t.Parallel()
	f := newFleet(t, 2)
	v := defaultValues()
	v.Kind = "none"
	cfg := f.load(f.config("st.yaml", v))
	cfg.Hosts[0].SSH, cfg.Hosts[0].Address = "root@127.0.0.1:1", "127.0.0.1"
	cfg = f.load(f.write("st.yaml", cfg))
	fake := filepath.Join(f.dir, "fake-ssh")
	script := `#!/bin/sh
case "$*" in *" host look "*)
echo '{"from":"v1","instance":true,"serving":true,"running":"v1","status":{"host":"host-b","published":"v9","services":[{"service":"web","want":"v9","instances":[{"id":"1","version":"v9","since":"2026-01-01T00:00:00Z","healthy":true}]}]}}'
exit 0 ;;
esac
exit 255
`
	if err := os.WriteFile(fake, []byte(script), 0o755); err != nil {
		t.Fatal(err)
	}
	opts := Options{RemoteBinary: bin, SSH: fake, Balancer: balancer.None{},
		Runtime: func(h config.Host) (Runtime, error) { return f.runtimes[h.Name], nil }}
	st, err := Status(context.Background(), cfg, opts)
	if err != nil {
		t.Fatal(err)
	}
	for i, h := range st.Hosts {
		if h.Host != cfg.Hosts[i].Name {
			t.Errorf("status row %d is for %q (published %q), want %q: host-a's look spoke for another host", i, h.Host, h.Published, cfg.Hosts[i].Name)
		}
	}
	if a := st.Hosts[0]; a.Published == "v9" || !strings.Contains(strings.Join(a.Problems, "; "), `"host-b"`) {
		t.Errorf("host-a: published %q, problems %q; want its look for host-b not taken and said as a problem", a.Published, a.Problems)
	}
	if st.OK() {
		t.Errorf("status OK with a host whose look spoke for another host")
	}
}

// zero502 status of a local host whose runtime stopped answering (a hung Docker Engine) ends,
// within a look's budget as a remote host's look does, with that host's services shown as a
// problem: it used to wait for ever.
func TestStatusOfALocalHostWhoseRuntimeHangsEnds(t *testing.T) {
	t.Parallel()
	f := newFleet(t, 1)
	v := defaultValues()
	v.Kind = "none"
	cfg := f.load(f.config("hang-status.yaml", v))
	hang := &atomic.Bool{}
	hang.Store(true)
	opts := Options{Balancer: balancer.None{}, lookBudget: 2 * time.Second,
		Runtime: func(h config.Host) (Runtime, error) { return hangingRuntime{f.runtimes[h.Name], hang}, nil }}
	type result struct {
		st  *FleetStatus
		err error
	}
	done := make(chan result, 1)
	go func() {
		st, err := Status(context.Background(), cfg, opts)
		done <- result{st, err}
	}()
	select {
	case r := <-done:
		st := r.st
		if r.err != nil {
			t.Fatal(r.err)
		}
		if st.OK() || len(st.Hosts) != 1 || len(st.Hosts[0].Services) == 0 || len(st.Hosts[0].Services[0].Problems) == 0 {
			t.Errorf("status %+v: want host-a's service shown with a problem (its runtime did not answer), status not OK", st)
		}
	case <-time.After(30 * time.Second):
		t.Fatal("zero502 status of a host whose runtime hangs still waited after 30s")
	}
}
