package deployer

import (
	"context"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/zero502/zero502/infra/config"
	"github.com/zero502/zero502/infra/runtime"
	"github.com/zero502/zero502/infra/runtime/process"
	"github.com/zero502/zero502/infra/spec"
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
