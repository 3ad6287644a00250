package deployer

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/zero502/zero502/infra/config"
	"github.com/zero502/zero502/infra/hostlock"
	"github.com/zero502/zero502/infra/runtime"
	"github.com/zero502/zero502/infra/runtime/process"
	"github.com/zero502/zero502/infra/spec"
	"github.com/zero502/zero502/internal/testrig/poll"
	"github.com/zero502/zero502/watchdog"
)

// zero502 stop --service web on a host with no published spec (never deployed, or its spec set
// aside): worker, not selected and running nowhere, was never deployed there, so the spec it
// publishes marks it stopped too, and a real watchdog tick with heal_after 1 starts nothing;
// cache, not selected but running, stays wanted at the version it runs and keeps running.
func TestStopOneServiceOnAHostWithNoSpecLeavesTheWatchdogNothingNeverDeployedToStart(t *testing.T) {
	t.Parallel()
	root := t.TempDir()
	dir := filepath.Join(root, "state")
	mark := filepath.Join(root, "worker-ran")
	cfg, err := config.LoadBytes([]byte(`
rollout: {runtime: process}
watchdog: {heal_after: 1}
services:
  - {name: web, command: [sleep, "30"]}
  - {name: worker, command: [sh, -c, "touch `+mark+`; exec sleep 30"]}
  - {name: cache, command: [sleep, "30"]}
hosts:
  - {name: h1, address: 127.0.0.1, state_dir: `+dir+`}
`), "test config")
	if err != nil {
		t.Fatal(err)
	}
	h := cfg.Hosts[0]
	ctx := context.Background()
	rt, err := process.New(cfg.HostStateDir(h))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { // whatever runs when the test ends, the watchdog's starts included
		all, _ := rt.List(context.Background(), runtime.Filter{Host: h.Name})
		for _, in := range all {
			if in.Running() {
				_, _ = rt.Stop(context.Background(), in, 0)
			}
		}
	})
	var cache spec.Service
	for _, svc := range spec.Render(cfg, h, "v1", "").Services {
		if svc.Name == "cache" {
			cache = svc
		}
	}
	if _, err := rt.Start(ctx, h.Name, cache); err != nil {
		t.Fatal(err)
	}

	var ev eventLog
	if err := Stop(ctx, cfg, StopTarget{Service: "web"}, Options{LockTimeout: time.Second, Events: ev.add}); err != nil {
		t.Fatalf("stop --service web: %v\n%s", err, &ev)
	}
	s, err := spec.Read(spec.Path(dir))
	if err != nil {
		t.Fatal(err)
	}
	want := map[string]struct {
		version string
		stopped bool
	}{"web": {"", true}, "worker": {"", true}, "cache": {"v1", false}}
	for _, svc := range s.Services {
		if w := want[svc.Name]; svc.Version != w.version || svc.Stopped != w.stopped {
			t.Errorf("published after stop --service web: %s version %q stopped %v; want version %q stopped %v",
				svc.Name, svc.Version, svc.Stopped, w.version, w.stopped)
		}
	}

	w, err := watchdog.New(cfg, h, watchdog.Options{})
	if err != nil {
		t.Fatal(err)
	}
	rep, err := w.Tick(ctx)
	if err != nil || rep.Healed() != 0 {
		t.Errorf("watchdog tick after stop --service web: %v, healed %d (%+v); want nothing started", err, rep.Healed(), rep.Services)
	}
	time.Sleep(300 * time.Millisecond) // a started worker touches its mark at once
	if _, err := os.Stat(mark); err == nil {
		t.Errorf("after zero502 stop --service web the watchdog started worker, which was never deployed nor running here")
	}
	insts, err := running(ctx, rt, h.Name, "cache")
	if err != nil || len(insts) != 1 || insts[0].Version != "v1" {
		t.Errorf("cache after the stop and the tick: %v %+v; want its v1 instance still running", err, insts)
	}
}

// zero502 stop takes the fleet lock, as a deploy does, before it changes anything: a deploy
// that holds it (here its lock taken through the package's own hostlock, with a deploy's holder
// record) refuses a stop with --lock-timeout 0, naming the holder, and makes a stop with a
// timeout wait until it is released; a maintenance lock (zero502 lock acquire -m) refuses it as
// it refuses a deploy. Until the stop runs, no host's spec says stopped: else a deploy on
// another host meanwhile would reach the stopped one later and undo the stop.
func TestStopTakesTheFleetLockAndHonoursTheMaintenanceLock(t *testing.T) {
	t.Parallel()
	cfg := twoSleepingHosts(t)
	ctx := context.Background()
	specOf := func(host string) (spec.Spec, error) {
		h, _ := cfg.Host(host)
		return spec.Read(spec.Path(cfg.HostStateDir(h)))
	}
	requireNoSpec := func(when string) {
		t.Helper()
		for _, host := range []string{"h1", "h2"} {
			if s, err := specOf(host); !errors.Is(err, spec.ErrNone) {
				t.Fatalf("%s: host %s has a published spec (%v, %+v); want none: stop changed nothing", when, host, err, s.Services)
			}
		}
	}
	requireStopped := func(host string) {
		t.Helper()
		s, err := specOf(host)
		if err != nil || len(s.Services) != 1 || !s.Services[0].Stopped {
			t.Fatalf("host %s after the stop: %v %+v; want its spec marking web stopped", host, err, s.Services)
		}
	}
	lockPath := cfg.FleetLockPath()
	if err := os.MkdirAll(filepath.Dir(lockPath), 0o755); err != nil {
		t.Fatal(err)
	}
	deploy := Holder("zero502 deploy --version v2")
	held, err := hostlock.TryAcquire(lockPath, deploy)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = held.Release() })

	// --lock-timeout 0 while a deploy runs: refused at once, in a refused deploy's words.
	var ev eventLog
	err = Stop(ctx, cfg, StopTarget{Host: "h2"}, Options{NoLockWait: true, Events: ev.add})
	var refused *StopRefusedError
	if !errors.As(err, &refused) || !errors.Is(err, hostlock.ErrHeld) ||
		!strings.Contains(err.Error(), "another deploy of this fleet is running") || !strings.Contains(err.Error(), lockPath) ||
		!strings.Contains(err.Error(), "zero502 deploy --version v2") {
		t.Fatalf("stop --host h2 --lock-timeout 0 while a deploy holds the fleet lock: %v; want refused, naming the deploy and the lock\n%s", err, &ev)
	}
	requireNoSpec("stop refused by a running deploy")

	// With a timeout it waits, saying for whom, and stops once the deploy has released the lock.
	var waited eventLog
	done := make(chan error, 1)
	go func() {
		done <- Stop(ctx, cfg, StopTarget{Host: "h2"}, Options{LockTimeout: time.Minute, Events: waited.add})
	}()
	poll.Until(t, 30*time.Second, "stop waiting for the fleet lock", func() bool {
		return strings.Contains(waited.String(), "waiting for the fleet deploy lock held by")
	})
	time.Sleep(300 * time.Millisecond) // three of its polls: a stop that went on would have published by now
	select {
	case err := <-done:
		t.Fatalf("stop returned (%v) while the deploy still held the fleet lock\n%s", err, &waited)
	default:
	}
	requireNoSpec("stop waiting for a running deploy")
	if err := held.Release(); err != nil {
		t.Fatal(err)
	}
	select {
	case err := <-done:
		if err != nil {
			t.Fatalf("stop after the deploy released the fleet lock: %v\n%s", err, &waited)
		}
	case <-time.After(30 * time.Second): // a bound on a hang, not a timing claim
		t.Fatalf("stop still waits after the fleet lock was released\n%s", &waited)
	}
	requireStopped("h2")
	if _, err := specOf("h1"); !errors.Is(err, spec.ErrNone) {
		t.Errorf("stop --host h2 published a spec on h1: %v", err)
	}
	if held, _, err := hostlock.Held(lockPath); err != nil || held {
		t.Errorf("the fleet lock after the stop: held %v (%v); want it released", held, err)
	}

	// A maintenance lock refuses the stop as it refuses a deploy, with the same words.
	if _, err := LockOp(ctx, cfg, LockAcquireOp, "DB migration", Options{}); err != nil {
		t.Fatal(err)
	}
	_, derr := New(cfg, Options{}).Deploy(ctx, "v3")
	err = Stop(ctx, cfg, StopTarget{Host: "h1"}, Options{LockTimeout: time.Minute})
	if !errors.As(err, &refused) || !strings.Contains(err.Error(), "locked for maintenance") || !strings.Contains(err.Error(), `"DB migration"`) {
		t.Fatalf("stop during the maintenance lock: %v; want refused naming it (a deploy says: %v)", err, derr)
	}
	if _, reason, _ := strings.Cut(derr.Error(), "refused before anything changed: "); !strings.HasSuffix(err.Error(), reason) {
		t.Errorf("stop during the maintenance lock says %q; want a refused deploy's reason, %q", err, reason)
	}
	if _, err := specOf("h1"); !errors.Is(err, spec.ErrNone) {
		t.Fatalf("stop refused by the maintenance lock published a spec on h1: %v", err)
	}
	if _, err := LockOp(ctx, cfg, LockReleaseOp, "", Options{}); err != nil {
		t.Fatal(err)
	}
	if err := Stop(ctx, cfg, StopTarget{Host: "h1"}, Options{LockTimeout: time.Minute}); err != nil {
		t.Fatalf("stop after lock release: %v", err)
	}
	requireStopped("h1")
}

// zero502 stop interrupted (Ctrl-C) while it drains host h1 lets h1's stop run to its end, but
// changes no host after it: h2 keeps its spec and its running instance, and the error says where
// the stop stopped. An interrupted stop must not go on stopping the rest of the fleet.
func TestAnInterruptedStopChangesNoFurtherHost(t *testing.T) {
	t.Parallel()
	cfg := twoSleepingHosts(t)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	rts := map[string]*process.Runtime{}
	for _, h := range cfg.Hosts {
		rt, err := process.New(cfg.HostStateDir(h))
		if err != nil {
			t.Fatal(err)
		}
		rts[h.Name] = rt
		t.Cleanup(func() {
			all, _ := rt.List(context.Background(), runtime.Filter{Host: h.Name})
			for _, in := range all {
				if in.Running() {
					_, _ = rt.Stop(context.Background(), in, 0)
				}
			}
		})
		if _, err := rt.Start(ctx, h.Name, spec.Render(cfg, h, "v1", "").Services[0]); err != nil {
			t.Fatal(err)
		}
	}

	var ev eventLog
	interrupt := func(e Event) {
		ev.add(e)
		if e.Host == "h1" && e.Step == StepDrain {
			cancel() // Ctrl-C while h1 drains
		}
	}
	err := Stop(ctx, cfg, StopTarget{}, Options{LockTimeout: time.Second, Events: interrupt})
	if err == nil || !strings.Contains(err.Error(), "h2") {
		t.Errorf("stop interrupted during h1: %v; want an error saying it stopped before h2\n%s", err, &ev)
	}
	if s, err := spec.Read(spec.Path(cfg.HostStateDir(cfg.Hosts[1]))); !errors.Is(err, spec.ErrNone) {
		t.Errorf("h2 after a stop interrupted during h1: spec %+v, %v; want none published (h2 untouched)", s, err)
	}
	if insts, err := running(context.Background(), rts["h2"], "h2", "web"); err != nil || len(insts) != 1 {
		t.Errorf("h2's web after a stop interrupted during h1: %v %+v; want its instance still running\n%s", err, insts, &ev)
	}
}

// twoSleepingHosts is a config of two local hosts, h1 and h2, each running web (a sleep) from its
// own state dir.
func twoSleepingHosts(t *testing.T) *config.Config {
	t.Helper()
	root := t.TempDir()
	cfg, err := config.LoadBytes([]byte(`
rollout: {runtime: process}
services:
  - {name: web, command: [sleep, "30"]}
hosts:
  - {name: h1, address: 127.0.0.1, state_dir: `+filepath.Join(root, "h1")+`}
  - {name: h2, address: 127.0.0.1, state_dir: `+filepath.Join(root, "h2")+`}
`), "test config")
	if err != nil {
		t.Fatal(err)
	}
	return cfg
}
