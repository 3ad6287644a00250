package deployer

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/zero502/zero502/deployer/balancer"
	"github.com/zero502/zero502/deployer/report"
	"github.com/zero502/zero502/infra/hostlock"
	"github.com/zero502/zero502/infra/spec"
	"github.com/zero502/zero502/internal/testrig/promtest"
)

// A first deploy onto empty hosts simply starts v1; the next rolls v1 → v2 under load without a
// failed request, each POST executed exactly once; a rerun verifies and redeploys nothing.
func TestFreshFleetStartsThenRollsUnderLoadWithNoFailedRequest(t *testing.T) {
	t.Parallel()
	f := newFleet(t, 3)
	path := f.config("fleet.yaml", defaultValues())
	cfg := f.load(path)
	f.startLB(path)
	ctx := context.Background()

	var ev1 eventLog
	rep, err := f.deployer(cfg, &ev1, Options{}).Deploy(ctx, "v1")
	if err != nil {
		t.Fatalf("first deploy: %v\nevents:\n%s", err, &ev1)
	}
	for _, h := range rep.Hosts {
		if h.From != "" || h.Outcome != report.OutcomeDeployed || h.Running != "v1" || !h.Timeline.DrainStarted.IsZero() {
			t.Errorf("first deploy %s: from %q outcome %q running %q drain %v; want a fresh start of v1",
				h.Host, h.From, h.Outcome, h.Running, h.Timeline.DrainStarted)
		}
	}

	load := startTraffic(t, f.listen, 3)
	var ev2 eventLog
	rep, err = f.deployer(cfg, &ev2, Options{}).Deploy(ctx, "v2")
	load.requireClean(t)
	if err != nil {
		t.Fatalf("rolling deploy: %v\nevents:\n%s", err, &ev2)
	}
	var text strings.Builder
	rep.WriteText(&text)
	t.Logf("report:\n%s", &text)
	for _, h := range rep.Hosts {
		requireDeployed(t, h, "v1", "v2")
		requireHandshakeInOrder(t, h, cfg)
		if h.Floor != cfg.Drain.Window+cfg.Balancer.Recovery() || h.Duration <= 0 {
			t.Errorf("%s: took %s, floor %s: want a duration and floor = drain.window + recovery", h.Host, h.Duration, h.Floor)
		}
	}
	for host, v := range f.versions() {
		if v != "v2" {
			t.Errorf("%s runs %q, want v2", host, v)
		}
	}
	executed := readOrders(t, f.orders)
	for key, n := range executed {
		if n != 1 {
			t.Errorf("order %s executed %d times, want exactly once", key, n)
		}
	}
	for _, key := range load.acked {
		if executed[key] == 0 {
			t.Errorf("order %s was acknowledged (201) but never recorded", key)
		}
	}

	var ev3 eventLog
	rep, err = f.deployer(cfg, &ev3, Options{}).Deploy(ctx, "v2")
	if err != nil {
		t.Fatalf("rerun: %v\nevents:\n%s", err, &ev3)
	}
	for _, h := range rep.Hosts {
		if h.Outcome != report.OutcomeUnchanged {
			t.Errorf("rerun on %s: %s, want %s (verified, not redeployed)", h.Host, h.Outcome, report.OutcomeUnchanged)
		}
	}
	if strings.Contains(ev3.String(), " "+StepDrain+" ") {
		t.Errorf("rerun drained an instance:\n%s", &ev3)
	}
}

// A version that never becomes healthy: the first host is rolled back, the rollout stops with
// an error, the second host is not touched, and the load sees no failure.
func TestNeverHealthyVersionIsRolledBackAndTheRolloutStops(t *testing.T) {
	t.Parallel()
	f := newFleet(t, 2)
	good := f.config("good.yaml", defaultValues())
	f.startLB(good)
	ctx := context.Background()
	if _, err := f.deployer(f.load(good), nil, Options{}).Deploy(ctx, "v1"); err != nil {
		t.Fatalf("deploy v1: %v", err)
	}
	bad := defaultValues()
	bad.AppFlags = []string{"--start-unhealthy"}
	bad.HealthyDeadline = 3 * time.Second
	cfg := f.load(f.config("bad.yaml", bad))

	load := startTraffic(t, f.listen, 3)
	var ev eventLog
	rep, err := f.deployer(cfg, &ev, Options{}).Deploy(ctx, "v2")
	load.requireClean(t)
	if err == nil || !strings.Contains(err.Error(), "not healthy after rollout.healthy_deadline 3s") {
		t.Fatalf("deploy of a never-healthy v2: %v, want the healthy deadline named\nevents:\n%s", err, &ev)
	}
	a, b := rep.Hosts[0], rep.Hosts[1]
	if a.Outcome != report.OutcomeRolledBack || a.Running != "v1" {
		t.Errorf("host-a: %s, runs %q; want rolled back to v1", a.Outcome, a.Running)
	}
	if b.Outcome != report.OutcomeNotReached || b.Running != "v1" {
		t.Errorf("host-b: %s, runs %q; want not reached, still v1", b.Outcome, b.Running)
	}
	if got := rep.Versions(); got["host-a"] != "v1" || got["host-b"] != "v1" {
		t.Errorf("Versions() = %v, want every host on v1", got)
	}
	if s, err := spec.Read(spec.Path(f.stateDir(0))); err != nil || s.Version != "v1" || s.LockPath != cfg.HostLockPath(cfg.Hosts[0]) {
		t.Errorf("host-a's published spec: %v %v, lock %q; want v1 republished under the host lock %s", s.Version, err, s.LockPath, cfg.HostLockPath(cfg.Hosts[0]))
	}
	if s, err := spec.Read(spec.Path(f.stateDir(1))); err != nil || s.Version != "v1" {
		t.Errorf("host-b's published spec: %v %v, want v1 untouched", s.Version, err)
	}
	textfile := filepath.Join(t.TempDir(), "zero502_deploy.prom")
	if err := report.WriteMetricsTextfile(textfile, *rep); err != nil {
		t.Fatal(err)
	}
	promtest.Require(t, textfile, map[string]float64{
		`zero502_deploy_last_result{result="failed",version="v2"}`:         1,
		`zero502_deploy_last_result{result="succeeded",version="v2"}`:      0,
		`zero502_deploy_host_outcome{host="host-a",outcome="rolled back"}`: 1,
		`zero502_deploy_host_outcome{host="host-b",outcome="not reached"}`: 1,
	})
}

// The deployer SIGKILLed mid-host: the kernel frees the host lock at once, and a rerun finishes
// the deploy, leaving every host on the new version.
func TestKilledDeployerIsFinishedByARerun(t *testing.T) {
	t.Parallel()
	f := newFleet(t, 2)
	path := f.config("fleet.yaml", defaultValues())
	cfg := f.load(path)
	f.startLB(path)
	ctx := context.Background()
	if _, err := f.deployer(cfg, nil, Options{}).Deploy(ctx, "v1"); err != nil {
		t.Fatalf("deploy v1: %v", err)
	}

	cmd := exec.Command(bin, "deploy", "--config", path, "--version", "v2", "--json")
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	defer cmd.Process.Kill()
	sc := bufio.NewScanner(out)
	var seen []string
	for sc.Scan() {
		var e Event
		if json.Unmarshal(sc.Bytes(), &e) != nil {
			continue
		}
		seen = append(seen, e.Host+" "+e.Step)
		if e.Host == "host-a" && e.Step == StepDrain {
			break
		}
	}
	if len(seen) == 0 || seen[len(seen)-1] != "host-a "+StepDrain {
		t.Fatalf("the deploy never reached host-a's drain: %v", seen)
	}
	if err := cmd.Process.Signal(syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	cmd.Wait()

	lockPath := cfg.HostLockPath(cfg.Hosts[0])
	l, err := hostlock.TryAcquire(lockPath, hostlock.Holder{Who: "test"})
	if err != nil {
		t.Fatalf("host-a's lock after the deployer died: %v, want it free at once", err)
	}
	l.Release()

	var ev eventLog
	rep, err := f.deployer(cfg, &ev, Options{}).Deploy(ctx, "v2")
	if err != nil {
		t.Fatalf("rerun: %v\nevents:\n%s", err, &ev)
	}
	for _, h := range rep.Hosts {
		if h.Running != "v2" || (h.Outcome != report.OutcomeDeployed && h.Outcome != report.OutcomeUnchanged) {
			t.Errorf("after the rerun %s: %s, runs %q; want v2", h.Host, h.Outcome, h.Running)
		}
	}
	for host, v := range f.versions() {
		if v != "v2" {
			t.Errorf("%s runs %q, want exactly one v2 instance", host, v)
		}
	}
}

// A config that violates an invariant, or a live LB whose settings drifted from the config, is
// refused before anything changes, naming the invariant or the field and both values.
func TestRefusedBeforeAnythingChanges(t *testing.T) {
	t.Parallel()
	t.Run("invariant violated", func(t *testing.T) {
		f := newFleet(t, 2)
		v := defaultValues()
		v.Window = 300 * time.Millisecond // I1: must exceed 200ms × 3
		path := f.config("i1.yaml", v)
		out, code := runDeploy(t, time.Minute, "--config", path, "--version", "v1")
		if code != 2 || !strings.Contains(out, "I1") || !strings.Contains(out, "refused before anything changed") {
			t.Fatalf("exit %d, output:\n%s\nwant exit 2 naming I1", code, out)
		}
		f.requireUntouched()
	})
	t.Run("live LB drifted", func(t *testing.T) {
		f := newFleet(t, 2)
		path := f.config("fleet.yaml", defaultValues())
		f.startLB(path, "--health-interval", "300ms")
		out, code := runDeploy(t, time.Minute, "--config", path, "--version", "v1")
		if code != 2 || !strings.Contains(out, "balancer.interval: config 200ms, live balancer 300ms") {
			t.Fatalf("exit %d, output:\n%s\nwant exit 2 naming balancer.interval with both values", code, out)
		}
		f.requireUntouched()
	})
}

// requireUntouched fails unless no host has a published spec or a running instance.
func (f *fleet) requireUntouched() {
	f.t.Helper()
	for i := range f.hosts {
		if _, err := spec.Read(spec.Path(f.stateDir(i))); !errors.Is(err, spec.ErrNone) {
			f.t.Errorf("%s has a published spec after a refused deploy (%v)", hostName(i), err)
		}
	}
	if v := f.versions(); len(v) > 0 {
		f.t.Errorf("instances run after a refused deploy: %v", v)
	}
}

// A host lock held by a bootstrap script (flock(1)) makes the deploy wait, naming the holder,
// and give up after --lock-timeout without touching the host.
func TestHeldLockMakesDeployWaitThenGiveUp(t *testing.T) {
	t.Parallel()
	if _, err := exec.LookPath("flock"); err != nil {
		t.Skip("flock(1) not installed (util-linux)")
	}
	f := newFleet(t, 2)
	path := f.config("fleet.yaml", defaultValues())
	cfg := f.load(path)
	f.startLB(path)
	holdWithFlock(t, cfg.HostLockPath(cfg.Hosts[0]))

	// Preflight takes every host lock before the first host is touched: a held one refuses the
	// deploy (exit 2) with nothing changed, instead of failing it after earlier hosts changed.
	out, code := runDeploy(t, time.Minute, "--config", path, "--version", "v1", "--lock-timeout", "1500ms")
	if code != 2 {
		t.Errorf("exit %d, want 2 (refused before anything changed)", code)
	}
	for _, want := range []string{"waiting for host lock held by", "flock(1)", "--lock-timeout 1.5s", "nothing was changed"} {
		if !strings.Contains(out, want) {
			t.Errorf("output does not say %q:\n%s", want, out)
		}
	}
	if n := strings.Count(out, "waiting for host lock held by"); n != 1 {
		t.Errorf("said it was waiting %d times, want once:\n%s", n, out)
	}
	f.requireUntouched()
}

// A first deploy whose version never gets healthy rolls the fresh host back to nothing: no
// instance, no published spec, as before.
func TestNeverHealthyOnAFreshHostLeavesItEmpty(t *testing.T) {
	t.Parallel()
	f := newFleet(t, 2)
	v := defaultValues()
	v.Kind = "none"
	v.AppFlags = []string{"--start-unhealthy"}
	v.HealthyDeadline = 2 * time.Second
	cfg := f.load(f.config("bad.yaml", v))
	var ev eventLog
	rep, err := f.deployer(cfg, &ev, Options{}).Deploy(context.Background(), "v1")
	if err == nil {
		t.Fatalf("deploy of a never-healthy v1 succeeded\nevents:\n%s", &ev)
	}
	if a := rep.Hosts[0]; a.Outcome != report.OutcomeRolledBack || a.Running != "" {
		t.Errorf("host-a: %s, runs %q; want rolled back to nothing", a.Outcome, a.Running)
	}
	f.requireUntouched()
}

// holdWithFlock holds the lock file at path with flock(1), as a bootstrap script would, until the
// test ends; it returns once the lock is taken.
func holdWithFlock(t *testing.T, path string) {
	t.Helper()
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		t.Fatal(err)
	}
	holder := exec.Command("flock", path, "sh", "-c", "echo locked; exec sleep 60")
	holder.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	hout, err := holder.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := holder.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { syscall.Kill(-holder.Process.Pid, syscall.SIGKILL); holder.Wait() })
	if line, err := bufio.NewReader(hout).ReadString('\n'); err != nil || line != "locked\n" {
		t.Fatalf("flock(1) did not take the lock: %q %v", line, err)
	}
}

// A host whose step failed at its host lock (taken by someone else after preflight) was reached
// by its batch and its step failed there before changing anything: it is "untouched" with the
// lock's error, not "not reached" with none.
func TestAHostWhoseStepFailedAtItsLockIsUntouched(t *testing.T) {
	t.Parallel()
	f := newFleet(t, 2)
	v := defaultValues()
	v.Kind = "none"
	cfg := f.load(f.config("lk.yaml", v))
	var held *hostlock.Lock
	d := f.deployer(cfg, nil, Options{Balancer: balancer.None{}, NoLockWait: true})
	d.opts.Events = func(e Event) {
		if e.Step == stepPreflight && strings.HasPrefix(e.Message, "invariants hold") && held == nil {
			l, err := hostlock.TryAcquire(cfg.HostLockPath(cfg.Hosts[0]), hostlock.Holder{Who: "ops@test", Command: "by hand"})
			if err != nil {
				t.Errorf("take host-a's lock: %v", err)
				return
			}
			held = l
		}
	}
	t.Cleanup(func() {
		if held != nil {
			_ = held.Release()
		}
	})
	rep, err := d.Deploy(context.Background(), "v1")
	if err == nil || held == nil {
		t.Fatalf("setup: deploy error %v, lock taken %v", err, held != nil)
	}
	if a := rep.Hosts[0]; a.Outcome != report.OutcomeUntouched || !strings.Contains(a.Error, "ops@test") {
		t.Errorf("host-a: outcome %q, error %q: its step ran and failed at its lock; want %q with the lock's error (naming its holder)",
			a.Outcome, a.Error, report.OutcomeUntouched)
	}
}
