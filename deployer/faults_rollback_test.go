package deployer

import (
	"context"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/zero502/zero502/infra/config"
)

// A version that fails its bake and hangs on SIGTERM (it drains past drain.stop_grace) is
// killed by the rollback's stop; the rollback goes on and starts v1 again, rather than leave the
// host running nothing.
func TestARollbackGoesOnPastAVersionKilledOnItsStop(t *testing.T) {
	t.Parallel()
	f := newFleet(t, 2)
	v := defaultValues()
	v.Bake = 3 * time.Second
	good := f.config("good.yaml", v)
	f.startLB(good)
	ctx := context.Background()
	if _, err := f.deployer(f.load(good), nil, Options{}).Deploy(ctx, "v1"); err != nil {
		t.Fatalf("deploy v1: %v", err)
	}
	v.AppFlags = []string{"--fail-health-after", "1500ms", "--drain", "30s"}
	var ev eventLog
	rep, err := f.deployer(f.load(f.config("bad.yaml", v)), &ev, Options{}).Deploy(ctx, "v2")
	if err == nil {
		t.Fatal("a version that fails its bake deployed")
	}
	if got := f.versions()["host-a"]; got != "v1" || rep.Hosts[0].Running != "v1" {
		t.Errorf("host-a runs %q (report: %q) after its failed step and rollback; want v1\nevents:\n%s", got, rep.Hosts[0].Running, &ev)
	}
}

// A fleet rollback that fails (an abort after the canary; v2 drains past the stop grace, and v1
// cannot be started: its port is taken the moment v2 lets it go): the deploy's error and the
// report never say host-a runs v2 when it was not seen running it.
func TestAFailedFleetRollbackClaimsNoVersionItDidNotSee(t *testing.T) {
	t.Parallel()
	f, path := judgedFleet(t, true)
	cfg := f.load(path)
	vals := defaultValues()
	vals.AppFlags = []string{"--drain", "30s"}
	v2cfg := f.load(f.config("v2.yaml", vals))
	v2cfg.Rollout, v2cfg.Balancer.HeaderTimeout = cfg.Rollout, cfg.Balancer.HeaderTimeout
	c := f.load(f.write("v2.yaml", v2cfg))
	var squat sync.Once
	opts := Options{PauseAfterCanary: true, Events: func(e Event) {
		if e.Host == "host-a" && e.Step == stepRollback {
			// v1's port, taken the moment v2 lets it go: the rollback cannot start v1
			squat.Do(func() {
				go func() {
					for deadline := time.Now().Add(20 * time.Second); time.Now().Before(deadline); time.Sleep(time.Millisecond) {
						if ln, err := net.Listen("tcp", fmt.Sprintf("127.0.0.1:%d", f.base)); err == nil {
							t.Cleanup(func() { ln.Close() })
							return
						}
					}
				}()
			})
		}
		if e.Step == stepPaused && strings.HasPrefix(e.Message, "paused after") {
			p, err := readPause(c)
			if err != nil {
				t.Errorf("read pause: %v", err)
				return
			}
			p.Decision, p.DecidedBy = Abort, "test"
			if err := writePause(c, p); err != nil {
				t.Errorf("write pause: %v", err)
			}
		}
	}}
	rep, _ := f.deployer(c, nil, opts).Deploy(context.Background(), "v2")
	running := f.versions()["host-a"]
	if strings.Contains(rep.Error, "host-a (runs v2)") && running != "v2" {
		t.Errorf("the report's error says host-a runs v2; it runs %q, and its host report says %q", running, rep.Hosts[0].Running)
	}
	if rep.Hosts[0].Running != running {
		t.Errorf("host-a's report says it runs %q; it runs %q", rep.Hosts[0].Running, running)
	}
}

// A deploy cancelled (Ctrl-C) right after host-a verified, before the next batch, stops there:
// host-a stays on v2, verified, and is not rolled back by a re-verify whose looks were called
// off.
func TestACancelBetweenBatchesRollsNoVerifiedHostBack(t *testing.T) {
	t.Parallel()
	f, path := onV1(t, 2, defaultValues())
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	var ev eventLog
	opts := Options{Events: func(e Event) {
		ev.add(e)
		if e.Host == "host-a" && e.Step == stepDone {
			cancel()
		}
	}}
	rep, err := f.deployer(f.load(path), nil, opts).Deploy(ctx, "v2")
	if err == nil || !strings.Contains(err.Error(), "context canceled") || strings.Contains(err.Error(), "no longer runs v2 healthy") {
		t.Errorf("a cancel between batches: %v; want the cancel, and no host judged unhealthy by a look called off\nevents:\n%s", err, &ev)
	}
	if got := f.versions()["host-a"]; got != "v2" || rep.Hosts[0].Outcome != "deployed" {
		t.Errorf("host-a runs %q, outcome %q after a cancel that came after its step; want v2, deployed", got, rep.Hosts[0].Outcome)
	}
}

// A hook whose program does not exist is bad input: the deploy is refused before anything
// changes, not found mid-step after host-a was drained.
func TestAHookThatCannotRunIsRefusedBeforeAnythingChanges(t *testing.T) {
	t.Parallel()
	f, path := onV1(t, 2, defaultValues())
	cfg := f.load(path)
	cfg.Hooks.PreTraffic = config.Hook{Command: []string{"/nonexistent/zero502-hook"}, Timeout: 10 * time.Second}
	cfg = f.load(f.write("hooked.yaml", cfg))
	var ev eventLog
	rep, err := f.deployer(cfg, &ev, Options{}).Deploy(context.Background(), "v2")
	if !rep.Refused || err == nil || !strings.Contains(err.Error(), "hooks.pre_traffic.command") {
		t.Errorf("a hook program that does not exist: %v (refused %v); want a refusal naming hooks.pre_traffic.command", err, rep.Refused)
	}
	for _, e := range ev.events {
		if e.Host != "" && (e.Step == StepDrain || e.Step == stepStart) {
			t.Errorf("%s: %s %s after a refusal", e.Host, e.Step, e.Message)
		}
	}
	if v := f.versions(); v["host-a"] != "v1" || v["host-b"] != "v1" {
		t.Errorf("after the refusal: %v, want every host on v1", v)
	}
}

// A service program that is not there (a --self with a typo) or that fails the trust rule is bad
// input too: refused before anything changes, naming it, not found once host-a was drained and
// stopped (the fleet a host short until its rollback).
func TestAProgramThatCannotStartIsRefusedBeforeAnythingChanges(t *testing.T) {
	t.Parallel()
	f, path := onV1(t, 2, defaultValues())
	open := filepath.Join(f.dir, "open")
	if err := os.Mkdir(open, 0o777); err != nil {
		t.Fatal(err)
	}
	if err := os.Chmod(open, 0o777); err != nil { // past the umask: anyone may replace what is in it
		t.Fatal(err)
	}
	planted := filepath.Join(open, "zero502")
	if err := os.WriteFile(planted, []byte("#!/bin/sh\nexec "+bin+" \"$@\"\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	cfg := f.load(path)
	cfg.Services[0].Command[0] = "{self}"
	path = f.write("self.yaml", cfg)
	for _, tc := range []struct{ self, want string }{
		{"/nonexistent/zz", "--self /nonexistent/zz"},
		{planted, "writable"},
	} {
		var ev eventLog
		d := f.deployer(f.load(path), &ev, Options{})
		d.self, d.opts.Self = tc.self, tc.self // as --self sets them (f.deployer sets the test binary)
		rep, err := d.Deploy(context.Background(), "v2")
		if !rep.Refused || err == nil || !strings.Contains(err.Error(), "services[].command") || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("--self %s: %v (refused %v); want a refusal naming services[].command and %q", tc.self, err, rep.Refused, tc.want)
		}
		for _, e := range ev.events {
			if e.Host != "" && (e.Step == StepDrain || e.Step == stepStart) {
				t.Errorf("--self %s: %s: %s %s after a refusal", tc.self, e.Host, e.Step, e.Message)
			}
		}
		if v := f.versions(); v["host-a"] != "v1" || v["host-b"] != "v1" {
			t.Errorf("--self %s: after the refusal: %v, want every host on v1", tc.self, v)
		}
	}
}

// A pre_deploy hook may install the version's program (a release per version): the program
// check comes after it, still before any host is touched, and the deploy goes on.
func TestAProgramThePreDeployHookInstallsIsFoundThen(t *testing.T) {
	t.Parallel()
	f, path := onV1(t, 2, defaultValues())
	rel := filepath.Join(f.dir, "rel")
	cfg := f.load(path)
	cfg.Services[0].Command[0] = filepath.Join(rel, "{version}", "app")
	cfg.Hooks.PreDeploy = config.Hook{Command: []string{"sh", "-c",
		`d="` + rel + `/$ZERO502_VERSION"; mkdir -p "$d" && chmod 755 "` + rel + `" "$d" && printf '#!/bin/sh\nexec ` + bin + ` "$@"\n' > "$d/app" && chmod 755 "$d/app"`},
		Timeout: 30 * time.Second}
	path = f.write("rel.yaml", cfg)
	var ev eventLog
	rep, err := f.deployer(f.load(path), &ev, Options{}).Deploy(context.Background(), "v2")
	if err != nil {
		t.Fatalf("deploy v2 (refused %v): %v\nevents:\n%s", rep.Refused, err, &ev)
	}
	if v := f.versions(); v["host-a"] != "v2" || v["host-b"] != "v2" {
		t.Errorf("after the deploy: %v, want every host on v2", v)
	}
}
