package deployer

import (
	"context"
	"errors"
	"net"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/zero502/zero502/deployer/report"
	"github.com/zero502/zero502/infra/spec"
)

// Ordinary faults that must not break the promise: a version that crashes some time after its
// start, two deploys at once, a failed redeploy, a changed config under the same version, a
// corrupt spec. Each on real processes, the real LB and the real binary.

// A version that crashes soon after it starts (here 700 ms) must never be reported deployed:
// rollout.bake holds every new instance that long, up and healthy, before its host counts. The
// first host is rolled back, the rollout stops, the exit is non-zero.
func TestVersionThatCrashesAfterStartIsCaughtByTheBake(t *testing.T) {
	t.Parallel()
	f := newFleet(t, 2)
	v := defaultValues()
	v.Bake = 1500 * time.Millisecond
	good := f.config("good.yaml", v)
	f.startLB(good)
	ctx := context.Background()
	if _, err := f.deployer(f.load(good), nil, Options{}).Deploy(ctx, "v1"); err != nil {
		t.Fatalf("deploy v1: %v", err)
	}
	v.AppFlags = []string{"--exit-after", "700ms"}
	var ev eventLog
	rep, err := f.deployer(f.load(f.config("crash.yaml", v)), &ev, Options{}).Deploy(ctx, "v2")
	if err == nil {
		t.Fatalf("a v2 that exits 700ms after its start was reported deployed\nevents:\n%s", &ev)
	}
	for _, want := range []string{"host host-a", "exited with code 1"} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("error does not say %q: %v", want, err)
		}
	}
	a, b := rep.Hosts[0], rep.Hosts[1]
	if a.Outcome != report.OutcomeRolledBack || a.Running != "v1" {
		t.Errorf("host-a: %s, runs %q; want rolled back to v1\nevents:\n%s", a.Outcome, a.Running, &ev)
	}
	if b.Outcome != report.OutcomeNotReached || b.Running != "v1" {
		t.Errorf("host-b: %s, runs %q; want not reached, still v1", b.Outcome, b.Running)
	}
	if got := f.versions(); got["host-a"] != "v1" || got["host-b"] != "v1" {
		t.Errorf("hosts run %v, want v1 everywhere", got)
	}
}

// A version that crashes after its bake, once its host lock is released, is caught when the
// hosts already done are verified again before the next batch: that host is rolled back and the
// rollout stops before the last host.
func TestHostsDoneAreReverifiedBeforeTheNextBatch(t *testing.T) {
	t.Parallel()
	f := newFleet(t, 3)
	v := defaultValues()
	v.Window = 1800 * time.Millisecond // a host's step takes over 2s: host-a's v2 dies during host-b's
	good := f.config("good.yaml", v)
	f.startLB(good)
	ctx := context.Background()
	if _, err := f.deployer(f.load(good), nil, Options{}).Deploy(ctx, "v1"); err != nil {
		t.Fatalf("deploy v1: %v", err)
	}
	v.AppFlags = []string{"--exit-after", "1500ms"}
	var ev eventLog
	rep, err := f.deployer(f.load(f.config("late-crash.yaml", v)), &ev, Options{}).Deploy(ctx, "v2")
	if err == nil {
		t.Fatalf("a v2 that exits 1.5s after its start was reported deployed\nevents:\n%s", &ev)
	}
	if !strings.Contains(err.Error(), "re-verified after its step") || !strings.Contains(err.Error(), "host host-a") {
		t.Errorf("error does not say host-a failed its re-verification: %v\nevents:\n%s", err, &ev)
	}
	if a := rep.Hosts[0]; a.Outcome != report.OutcomeRolledBack || a.Running != "v1" {
		t.Errorf("host-a: %s, runs %q; want rolled back to v1 after its re-verification\nevents:\n%s", a.Outcome, a.Running, &ev)
	}
	if c := rep.Hosts[2]; c.Outcome != report.OutcomeNotReached || c.Running != "v1" {
		t.Errorf("host-c: %s, runs %q; want not reached, still v1", c.Outcome, c.Running)
	}
	if s, err := spec.Read(spec.Path(f.stateDir(0))); err != nil || s.Version != "v1" {
		t.Errorf("host-a's published spec: %q %v, want v1 republished", s.Version, err)
	}
}

// Two real deploy processes started together on one fleet: the second waits for the fleet lock
// (naming the holder) instead of leapfrogging the first, so no two hosts drain at once (the load
// sees no failure), and the fleet ends on the version of the deploy that ran last.
func TestTwoDeploysAtOnceRunOneAfterTheOther(t *testing.T) {
	t.Parallel()
	f := newFleet(t, 2)
	path := f.config("fleet.yaml", defaultValues())
	f.startLB(path)
	if _, err := f.deployer(f.load(path), nil, Options{}).Deploy(context.Background(), "v1"); err != nil {
		t.Fatalf("deploy v1: %v", err)
	}

	load := startMeasureOf(t, f.listen, "/", "/orders", "/health")
	outs := make([]string, 2)
	codes := make([]int, 2)
	var wg sync.WaitGroup
	for i, version := range []string{"v2", "v3"} {
		wg.Add(1)
		go func() {
			defer wg.Done()
			outs[i], codes[i] = runDeploy(t, 2*time.Minute, "--config", path, "--version", version)
		}()
	}
	wg.Wait()
	requireNoFailure(t, load.stop(t))
	for i := range outs {
		if codes[i] != 0 {
			t.Errorf("deploy %d exited %d:\n%s", i+2, codes[i], outs[i])
		}
	}
	waited := -1
	for i, out := range outs {
		if strings.Contains(out, "waiting for the fleet deploy lock held by") {
			waited = i
		}
	}
	if waited < 0 || !strings.Contains(outs[waited], "zero502 deploy --version v"+string(rune('3'-waited))) {
		t.Fatalf("neither deploy said it waited for the other, naming it:\n--- v2:\n%s\n--- v3:\n%s", outs[0], outs[1])
	}
	last := []string{"v2", "v3"}[waited]
	for host, got := range f.versions() {
		if got != last {
			t.Errorf("%s runs %q, want %s (the deploy that waited ran last)", host, got, last)
		}
	}
}

// --lock-timeout 0 refuses at once, naming the holder, when the fleet lock is held: here by
// flock(1), as a bootstrap script would hold it. Nothing changes.
func TestHeldFleetLockRefusesAtOnceWithLockTimeoutZero(t *testing.T) {
	t.Parallel()
	f := newFleet(t, 2)
	path := f.config("fleet.yaml", defaultValues())
	cfg := f.load(path)
	f.startLB(path)
	lockPath := cfg.FleetLockPath()
	holdWithFlock(t, lockPath)
	out, code := runDeploy(t, time.Minute, "--config", path, "--version", "v1", "--lock-timeout", "0")
	if code != 2 {
		t.Errorf("exit %d, want 2 (refused)", code)
	}
	for _, want := range []string{"another deploy of this fleet is running", lockPath, "flock(1)"} {
		if !strings.Contains(out, want) {
			t.Errorf("output does not say %q:\n%s", want, out)
		}
	}
	f.requireUntouched()
}

// A state dir that cannot be written refuses the deploy before the first host is touched, not
// after earlier hosts changed.
func TestUnwritableStateDirRefusesBeforeAnyHostChanges(t *testing.T) {
	t.Parallel()
	f := newFleet(t, 2)
	path := f.config("fleet.yaml", defaultValues())
	f.startLB(path)
	ctx := context.Background()
	if _, err := f.deployer(f.load(path), nil, Options{}).Deploy(ctx, "v1"); err != nil {
		t.Fatalf("deploy v1: %v", err)
	}
	cfg := f.load(path)
	blocker := filepath.Join(f.dir, "not-a-dir")
	if err := os.WriteFile(blocker, nil, 0o644); err != nil {
		t.Fatal(err)
	}
	cfg.Hosts[1].StateDir = filepath.Join(blocker, "host-b") // under a file: never a directory
	before := f.instances("host-a")
	rep, err := f.deployer(cfg, nil, Options{}).Deploy(ctx, "v2")
	var refused *refusedError
	if !errors.As(err, &refused) || !strings.Contains(err.Error(), "host host-b: state dir") {
		t.Fatalf("deploy with host-b's state dir under a file: %v, want refused naming host-b's state dir", err)
	}
	if !rep.Refused || rep.Hosts[0].Outcome != report.OutcomeNotReached {
		t.Errorf("report: refused %v, host-a %s; want refused, host-a not reached", rep.Refused, rep.Hosts[0].Outcome)
	}
	if after := f.instances("host-a"); after["web"].ID != before["web"].ID {
		t.Errorf("host-a's instance changed from %s to %s on a refused deploy", before["web"].ID, after["web"].ID)
	}
}

// A redeploy of the version already published that fails (its port is held by another
// process, and there is no spec.previous.json) must not roll the host back to nothing: the
// published spec survives, so the watchdog still knows what to run, and a later deploy heals it.
func TestFailedRedeployKeepsThePublishedSpec(t *testing.T) {
	t.Parallel()
	f := newFleet(t, 2)
	v := defaultValues()
	v.HealthyDeadline = 3 * time.Second
	path := f.config("fleet.yaml", v)
	f.startLB(path)
	ctx := context.Background()
	if _, err := f.deployer(f.load(path), nil, Options{}).Deploy(ctx, "v1"); err != nil {
		t.Fatalf("deploy v1: %v", err)
	}
	os.Remove(filepath.Join(f.stateDir(0), previousFileName))
	web := f.instances("host-a")["web"]
	if _, err := f.runtimes["host-a"].Stop(ctx, web, 0); err != nil {
		t.Fatal(err)
	}
	squatter, err := net.Listen("tcp", web.Address) // the port is held by someone else
	if err != nil {
		t.Fatalf("hold %s: %v", web.Address, err)
	}
	var ev eventLog
	rep, err := f.deployer(f.load(path), &ev, Options{}).Deploy(ctx, "v1")
	squatter.Close()
	if err == nil {
		t.Fatalf("redeploy onto a held port succeeded\nevents:\n%s", &ev)
	}
	if rep.Hosts[0].Outcome == report.OutcomeDeployed || rep.Hosts[0].Outcome == report.OutcomeUnchanged {
		t.Errorf("host-a: %s, want a failure", rep.Hosts[0].Outcome)
	}
	s, err := spec.Read(spec.Path(f.stateDir(0)))
	if err != nil || s.Version != "v1" {
		t.Fatalf("host-a's published spec after the failed redeploy: %q %v; want v1 kept\nevents:\n%s", s.Version, err, &ev)
	}
	if _, err := f.deployer(f.load(path), nil, Options{}).Deploy(ctx, "v1"); err != nil {
		t.Fatalf("deploy v1 once the port is free: %v", err)
	}
	if got := f.versions(); got["host-a"] != "v1" {
		t.Errorf("host-a runs %q, want v1 again", got["host-a"])
	}
}

// The same --version with a changed config (here env) is rolled out, not skipped as unchanged:
// the whole spec is compared, not the version.
func TestChangedConfigUnderTheSameVersionIsRolledOut(t *testing.T) {
	t.Parallel()
	f := newFleet(t, 2)
	v := defaultValues()
	path := f.config("fleet.yaml", v)
	f.startLB(path)
	ctx := context.Background()
	if _, err := f.deployer(f.load(path), nil, Options{}).Deploy(ctx, "v1"); err != nil {
		t.Fatalf("deploy v1: %v", err)
	}
	before := f.instances("host-a")["web"]
	v.Env = map[string]string{"FEATURE_X": "on"}
	load := startMeasureOf(t, f.listen, "/", "/orders", "/health")
	rep, err := f.deployer(f.load(f.config("changed.yaml", v)), nil, Options{}).Deploy(ctx, "v1")
	requireNoFailure(t, load.stop(t))
	if err != nil {
		t.Fatalf("deploy v1 with a changed env: %v", err)
	}
	for _, h := range rep.Hosts {
		if h.Outcome != report.OutcomeDeployed {
			t.Errorf("%s: %s, want deployed (its spec changed)", h.Host, h.Outcome)
		}
	}
	if after := f.instances("host-a")["web"]; after.ID == before.ID {
		t.Errorf("host-a still runs the instance %s started before the change", after.ID)
	}
	s, err := spec.Read(spec.Path(f.stateDir(0)))
	if err != nil || s.Services[0].Env["FEATURE_X"] != "on" {
		t.Errorf("host-a's spec env %v %v, want FEATURE_X=on published", s.Services, err)
	}
}

// The same --version with a changed command (here one more flag) is rolled out too, not only a
// changed env: each host is deployed again, through the drain, and publishes the new command.
func TestChangedCommandUnderTheSameVersionIsRolledOut(t *testing.T) {
	t.Parallel()
	v := defaultValues()
	f, _ := onV1(t, 2, v)
	ctx := context.Background()
	before := f.instances("host-b")["web"]
	v.AppFlags = []string{"--delay", "0s"} // a flag that changes nothing the app does
	load := startMeasureOf(t, f.listen, "/", "/orders", "/health")
	var ev eventLog
	rep, err := f.deployer(f.load(f.config("changed.yaml", v)), &ev, Options{}).Deploy(ctx, "v1")
	requireNoFailure(t, load.stop(t))
	if err != nil {
		t.Fatalf("deploy v1 with a changed command: %v\nevents:\n%s", err, &ev)
	}
	for _, h := range rep.Hosts {
		if h.Outcome != report.OutcomeDeployed {
			t.Errorf("%s: %s, want deployed (its command changed)\nevents:\n%s", h.Host, h.Outcome, &ev)
		}
	}
	if after := f.instances("host-b")["web"]; after.ID == before.ID {
		t.Errorf("host-b still runs the instance %s started before the change", after.ID)
	}
	s, err := spec.Read(spec.Path(f.stateDir(1)))
	if err != nil || len(s.Services) == 0 || !strings.HasSuffix(strings.Join(s.Services[0].Command, " "), "--delay 0s") {
		t.Errorf("host-b's published spec %+v %v, want its command ending in --delay 0s", s.Services, err)
	}
}

// A corrupt published spec is set aside (kept for a look) and the host is deployed by what runs
// on it: the deploy is the way out the corrupt-spec message names.
func TestCorruptSpecIsSetAsideAndTheHostDeployed(t *testing.T) {
	t.Parallel()
	f := newFleet(t, 2)
	path := f.config("fleet.yaml", defaultValues())
	f.startLB(path)
	ctx := context.Background()
	if _, err := f.deployer(f.load(path), nil, Options{}).Deploy(ctx, "v1"); err != nil {
		t.Fatalf("deploy v1: %v", err)
	}
	specPath := spec.Path(f.stateDir(0))
	if err := os.WriteFile(specPath, []byte("{half a spec"), 0o644); err != nil {
		t.Fatal(err)
	}
	_, err := spec.Read(specPath)
	if !errors.Is(err, spec.ErrCorrupt) || !strings.Contains(err.Error(), "zero502 deploy --version V sets it aside") {
		t.Fatalf("reading a corrupt spec: %v, want ErrCorrupt naming the way out", err)
	}
	var ev eventLog
	if _, err := f.deployer(f.load(path), &ev, Options{}).Deploy(ctx, "v2"); err != nil {
		t.Fatalf("deploy v2 over a corrupt spec: %v\nevents:\n%s", err, &ev)
	}
	if s, err := spec.Read(specPath); err != nil || s.Version != "v2" {
		t.Errorf("host-a's spec after the deploy: %q %v, want v2", s.Version, err)
	}
	if data, err := os.ReadFile(specPath + spec.CorruptSuffix); err != nil || string(data) != "{half a spec" {
		t.Errorf("the corrupt spec was not kept aside: %q %v", data, err)
	}
	if p, err := spec.Read(filepath.Join(f.stateDir(0), previousFileName)); err != nil || p.Version != "v1" {
		t.Errorf("previous spec %q %v, want v1 (what ran, rendered from the config)", p.Version, err)
	}
}

// A deploy of a changed config under the same version that died after it published host-a's
// spec (its machine lost before the instance was replaced) left the old config's instance
// running under the new spec. A rerun must roll the change out there, not verify the old
// instance as unchanged: it runs the version, but not the config.
func TestARerunAfterAnInterruptedConfigChangeRollsItOut(t *testing.T) {
	t.Parallel()
	v := defaultValues()
	f, _ := onV1(t, 2, v)
	ctx := context.Background()
	before := f.instances("host-a")["web"]
	v.AppFlags = []string{"--delay", "0s"} // a flag that changes nothing the app does
	cfg := f.load(f.config("changed.yaml", v))
	if err := spec.Publish(spec.Path(f.stateDir(0)), spec.Render(cfg, cfg.Hosts[0], "v1", bin)); err != nil {
		t.Fatal(err)
	}
	var ev eventLog
	rep, err := f.deployer(cfg, &ev, Options{}).Deploy(ctx, "v1")
	if err != nil {
		t.Fatalf("rerun of the changed config: %v\nevents:\n%s", err, &ev)
	}
	if a := rep.Hosts[0]; a.Outcome != report.OutcomeDeployed {
		t.Errorf("host-a: %s, want deployed (it ran the old config under the published new one)\nevents:\n%s", a.Outcome, &ev)
	}
	after := f.instances("host-a")["web"]
	cmdline, err := os.ReadFile("/proc/" + strings.TrimPrefix(after.ID, "pid:") + "/cmdline")
	if err != nil {
		t.Fatal(err)
	}
	if after.ID == before.ID || !strings.Contains(string(cmdline), "--delay") {
		t.Errorf("host-a runs %s (before the rerun %s): %q; want a new instance with the changed command\nevents:\n%s",
			after.ID, before.ID, strings.ReplaceAll(string(cmdline), "\x00", " "), &ev)
	}
}
