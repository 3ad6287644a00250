package deployer

import (
	"context"
	"errors"
	"os"
	"os/exec"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/zero502/zero502/deployer/report"
	"github.com/zero502/zero502/infra/alarms"
	"github.com/zero502/zero502/infra/config"
	"github.com/zero502/zero502/internal/testrig/poll"
	"github.com/zero502/zero502/internal/testrig/syncbuffer"
	"github.com/zero502/zero502/internal/testrig/testmain"
)

// pausedDeploy starts the real `zero502 deploy --pause-after-canary` of v2 over a three-host v1
// fleet and waits until it paused after its canary (host-a); its output is in out.
func pausedDeploy(t *testing.T) (f *fleet, path string, cmd *exec.Cmd, out *syncbuffer.Buffer) {
	t.Helper()
	f = newFleet(t, 3)
	cfg := f.load(f.config("fleet.yaml", defaultValues()))
	judged(cfg, analysisWindow, canaryFor)
	path = f.write("fleet.yaml", cfg)
	f.startLB(path)
	if out, code := runDeploy(t, time.Minute, "--config", path, "--version", "v1"); code != 0 {
		t.Fatalf("deploy v1: exit %d\n%s", code, out)
	}
	out = &syncbuffer.Buffer{}
	cmd = exec.Command(bin, "deploy", "--config", path, "--version", "v2", "--pause-after-canary")
	cmd.Stdout, cmd.Stderr = out, out
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	testmain.Track(t, func() { _ = cmd.Process.Kill(); _, _ = cmd.Process.Wait() })
	poll.UntilNil(t, time.Minute, "the deploy paused after its canary", func() error {
		_, err := readPause(cfg)
		return err
	})
	if got := f.versions(); got["host-a"] != "v2" || got["host-b"] != "v1" || got["host-c"] != "v1" {
		t.Fatalf("paused after the canary: %v; want host-a on v2, the rest on v1\n%s", got, out)
	}
	return f, path, cmd, out
}

// zero502 runs the real binary with args and returns its output and exit code.
func zero502(t *testing.T, args ...string) (string, int) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	out, err := exec.CommandContext(ctx, bin, args...).CombinedOutput()
	if ee, ok := err.(*exec.ExitError); ok {
		return string(out), ee.ExitCode()
	} else if err != nil {
		t.Fatalf("zero502 %v: %v", args, err)
	}
	return string(out), 0
}

// From a second shell, promote tells the deploy waiting after its canary to roll the rest: it
// exits 0 with every host on v2.
func TestPromoteFromAnotherShellRollsTheRest(t *testing.T) {
	t.Parallel()
	f, path, cmd, out := pausedDeploy(t)
	if msg, code := zero502(t, "deploy", "promote", "--config", path); code != 0 {
		t.Fatalf("deploy promote: exit %d\n%s", code, msg)
	}
	if err := cmd.Wait(); err != nil {
		t.Fatalf("the paused deploy after promote: %v\n%s", err, out)
	}
	for host, v := range f.versions() {
		if v != "v2" {
			t.Errorf("%s runs %q after promote, want v2", host, v)
		}
	}
	if !strings.Contains(out.String(), "promote by ") {
		t.Errorf("the deploy does not say who promoted it:\n%s", out)
	}
}

// abort rolls the canary back while the deploy waits (it exits 1, every host on v1); and when
// the paused deploy was stopped meanwhile, abort takes the fleet lock and rolls back itself.
func TestAbortRollsTheCanaryBackWhetherTheDeployWaitsOrNot(t *testing.T) {
	t.Parallel()
	t.Run("the deploy waits", func(t *testing.T) {
		t.Parallel()
		f, path, cmd, out := pausedDeploy(t)
		if msg, code := zero502(t, "deploy", "abort", "--config", path); code != 0 {
			t.Fatalf("deploy abort: exit %d\n%s", code, msg)
		}
		err := cmd.Wait()
		if ee, ok := err.(*exec.ExitError); !ok || ee.ExitCode() != 1 {
			t.Errorf("the aborted deploy: %v, want exit 1\n%s", err, out)
		}
		for host, v := range f.versions() {
			if v != "v1" {
				t.Errorf("%s runs %q after abort, want v1", host, v)
			}
		}
	})
	t.Run("the deploy was stopped", func(t *testing.T) {
		t.Parallel()
		f, path, cmd, out := pausedDeploy(t)
		_ = cmd.Process.Signal(syscall.SIGTERM)
		_ = cmd.Wait()
		if _, err := os.Stat(pausePath(f.load(path))); err != nil {
			t.Fatalf("the stopped deploy left no pause record: %v\n%s", err, out)
		}
		msg, code := zero502(t, "deploy", "abort", "--config", path)
		if code != 0 || !strings.Contains(msg, "host-a") {
			t.Fatalf("deploy abort with no deploy waiting: exit %d\n%s", code, msg)
		}
		for host, v := range f.versions() {
			if v != "v1" {
				t.Errorf("%s runs %q after abort, want v1", host, v)
			}
		}
		if msg, code := zero502(t, "deploy", "promote", "--config", path); code != 2 || !strings.Contains(msg, "no deploy of this fleet is paused") {
			t.Errorf("promote with nothing paused: exit %d\n%s; want 2 saying so", code, msg)
		}
	})
}

// When the paused deploy was stopped, abort takes the fleet lock and rolls the canary back
// itself, a host over ssh too: that host keeps its previous spec on it, out of abort's reach,
// so the version it ran before comes from the pause record (the paused deploy's look at the
// host before its step), and the canary ends back on v1.
func TestAbortWithNoDeployWaitingRollsACanaryOverSSHBack(t *testing.T) {
	t.Parallel()
	s := startSSHD(t)
	f := newFleet(t, 3)
	_, cfg := f.remoteConfig(s, "fleet.yaml", 1)
	judged(cfg, analysisWindow, canaryFor)
	path := f.write("fleet.yaml", cfg)
	cfg = f.load(path)
	f.startLB(path)
	ctx := context.Background()
	if _, err := f.deployer(cfg, nil, Options{RemoteBinary: bin}).Deploy(ctx, "v1"); err != nil {
		t.Fatalf("deploy v1: %v", err)
	}
	paused, stop := context.WithCancel(ctx)
	defer stop()
	var ev eventLog
	ended := make(chan error, 1)
	go func() {
		_, err := f.deployer(cfg, &ev, Options{RemoteBinary: bin, PauseAfterCanary: true}).Deploy(paused, "v2")
		ended <- err
	}()
	poll.UntilNil(t, time.Minute, "the deploy paused after its canary", func() error {
		_, err := readPause(cfg)
		return err
	})
	if got := f.versions(); got["host-a"] != "v2" || got["host-b"] != "v1" || got["host-c"] != "v1" {
		t.Fatalf("paused after the canary: %v; want host-a on v2, the rest on v1\nevents:\n%s", got, &ev)
	}
	stop()
	select {
	case err := <-ended:
		if err == nil {
			t.Fatalf("the paused deploy, stopped, ended with no error\nevents:\n%s", &ev)
		}
	case <-time.After(time.Minute):
		t.Fatalf("the paused deploy did not end within a minute of being stopped\nevents:\n%s", &ev)
	}
	if _, err := readPause(cfg); err != nil {
		t.Fatalf("the stopped deploy left no pause record: %v\nevents:\n%s", err, &ev)
	}
	var aev eventLog
	rep, err := Decide(ctx, cfg, Abort, f.deployer(cfg, &aev, Options{RemoteBinary: bin}).opts, time.Minute)
	if err != nil || rep == nil {
		t.Fatalf("deploy abort with no deploy waiting: %v\nevents:\n%s", err, &aev)
	}
	if a := rep.Hosts[0]; a.Outcome != report.OutcomeRolledBack || a.From != "v1" || a.Running != "v1" {
		t.Errorf("host-a after abort: %s → %s %q, runs %q, error %q; want v1 → v2 rolled back, running v1",
			a.From, a.To, a.Outcome, a.Running, a.Error)
	}
	for host, v := range f.versions() {
		if v != "v1" {
			t.Errorf("%s runs %q after abort, want v1\nevents:\n%s", host, v, &aev)
		}
	}
}

// rollback returns the fleet to what it ran before its last deploy.
func TestRollbackReturnsTheFleetToTheVersionBefore(t *testing.T) {
	t.Parallel()
	f := newFleet(t, 2)
	path := f.config("fleet.yaml", defaultValues())
	f.startLB(path)
	for _, v := range []string{"v1", "v2"} {
		if out, code := runDeploy(t, time.Minute, "--config", path, "--version", v); code != 0 {
			t.Fatalf("deploy %s: exit %d\n%s", v, code, out)
		}
	}
	if msg, code := zero502(t, "rollback", "--config", path); code != 0 || !strings.Contains(msg, "rolling back to v1") {
		t.Fatalf("rollback: exit %d\n%s", code, msg)
	}
	for host, v := range f.versions() {
		if v != "v1" {
			t.Errorf("%s runs %q after rollback, want v1", host, v)
		}
	}
}

// The watchdog never fights a paused deploy nor what decides it: a watchdog loop on every host
// through the pause (longer than heal_after ticks) and then the abort, or the promote and a
// rollback, heals nothing, watches the canary on v2 as its spec says, and the fleet ends where
// the decision says.
func TestWatchdogNeverFightsAPausedDeployNorItsDecisions(t *testing.T) {
	t.Parallel()
	for _, decision := range []string{Abort, Promote} {
		t.Run(decision, func(t *testing.T) {
			t.Parallel()
			f, path, cmd, out := pausedDeploy(t)
			cfg := f.load(path)
			logs := make([]*syncbuffer.Buffer, len(cfg.Hosts))
			for i, h := range cfg.Hosts {
				logs[i] = &syncbuffer.Buffer{}
				wd := exec.Command(bin, "watchdog", "--config", path, "--host", h.Name, "--loop")
				wd.Stdout, wd.Stderr = logs[i], logs[i]
				if err := wd.Start(); err != nil {
					t.Fatal(err)
				}
				testmain.Track(t, func() { _ = wd.Process.Kill(); _, _ = wd.Process.Wait() })
			}
			ticks := time.Duration(cfg.Watchdog.HealAfter+1) * cfg.Watchdog.Interval
			time.Sleep(ticks) // paused, for more ticks than a heal needs
			poll.Until(t, 10*time.Second, "the watchdog watched the canary on v2", func() bool {
				return strings.Contains(logs[0].String(), "host-a v2: web ok")
			})
			if msg, code := zero502(t, "deploy", decision, "--config", path); code != 0 {
				t.Fatalf("deploy %s: exit %d\n%s", decision, code, msg)
			}
			_ = cmd.Wait()
			if decision == Promote {
				poll.Until(t, 10*time.Second, "the watchdog of host-c sees v2 after the promote", func() bool {
					return strings.Contains(logs[2].String(), "host-c v2: web ok")
				})
				promoted := len(logs[2].String()) // host-c ran v1 before the promote too: look after it
				if msg, code := zero502(t, "rollback", "--config", path); code != 0 {
					t.Fatalf("rollback after the promote: exit %d\n%s", code, msg)
				}
				poll.Until(t, 10*time.Second, "the watchdog of host-c sees v1 back after the rollback", func() bool {
					return strings.Contains(logs[2].String()[promoted:], "host-c v1: web ok")
				})
			}
			poll.Until(t, 10*time.Second, "the watchdog of host-a sees v1 back", func() bool {
				return strings.Contains(logs[0].String(), "host-a v1: web ok")
			})
			for i, h := range cfg.Hosts {
				if l := logs[i].String(); strings.Contains(l, "HEALED") || strings.Contains(l, "heal FAILED") {
					t.Errorf("the watchdog of %s acted during the pause or the %s:\n%s\ndeploy:\n%s", h.Name, decision, l, out)
				}
			}
			for host, v := range f.versions() {
				if v != "v1" {
					t.Errorf("%s runs %q after the %s with the watchdogs running, want v1", host, v, decision)
				}
			}
		})
	}
}

// pausedThenStopped deploys v1 to a 3-host judged fleet behind the LB, then v2 with
// --pause-after-canary, stopped (Ctrl-C) once paused: its pause record stays for a decision.
func pausedThenStopped(t *testing.T) (*fleet, string) {
	t.Helper()
	f, path := judgedFleet(t, true)
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() {
		_, err := f.deployer(f.load(path), nil, Options{PauseAfterCanary: true}).Deploy(ctx, "v2")
		done <- err
	}()
	poll.UntilNil(t, time.Minute, "the v2 deploy paused after its canary", func() error { _, err := readPause(f.load(path)); return err })
	cancel()
	<-done
	return f, path
}

// A complete deploy after a paused one was stopped takes the fleet: the old pause is over, and a
// promote or abort later finds nothing paused, rather than deploying the old paused version over
// the fleet or rolling its canary back.
func TestADeployAfterAStoppedPauseEndsThePause(t *testing.T) {
	t.Parallel()
	for _, decision := range []string{Promote, Abort} {
		t.Run(decision, func(t *testing.T) {
			t.Parallel()
			f, path := pausedThenStopped(t)
			if _, err := f.deployer(f.load(path), nil, Options{}).Deploy(context.Background(), "v3"); err != nil {
				t.Fatalf("deploy v3: %v", err)
			}
			cfg := f.load(path)
			if _, err := Decide(context.Background(), cfg, decision, f.deployer(cfg, nil, Options{}).opts, time.Minute); !errors.Is(err, ErrNotPaused) {
				t.Errorf("deploy %s after a complete deploy of v3: %v; want %v", decision, err, ErrNotPaused)
			}
			for h, v := range f.versions() {
				if v != "v3" {
					t.Errorf("after deploy %s: %s runs %q; want v3, which the fleet was on", decision, h, v)
				}
			}
		})
	}
}

// A promote refused before anything changed (an alarm firing) leaves the pause as it was: abort
// still rolls the canary back.
func TestARefusedPromoteLeavesThePauseForAnAbort(t *testing.T) {
	t.Parallel()
	f, path := pausedThenStopped(t)
	withAlarm := f.load(path)
	withAlarm.Rollout.Alarms = []string{"web-5xx"}
	opts := f.deployer(withAlarm, nil, Options{}).opts
	opts.Alarms = firingAlarms{}
	if rep, err := Decide(context.Background(), withAlarm, Promote, opts, time.Minute); err == nil || rep == nil || !rep.Refused {
		t.Fatalf("promote with an alarm firing: %v; want it refused", err)
	}
	if _, err := readPause(f.load(path)); err != nil {
		t.Fatalf("the refused promote took the pause record: %v", err)
	}
	cfg := f.load(path)
	if _, err := Decide(context.Background(), cfg, Abort, f.deployer(cfg, nil, Options{}).opts, time.Minute); err != nil {
		t.Fatalf("abort after the refused promote: %v", err)
	}
	if v := f.versions(); v["host-a"] != "v1" || v["host-b"] != "v1" || v["host-c"] != "v1" {
		t.Errorf("after the abort: %v; want every host on v1", v)
	}
	if _, err := readPause(f.load(path)); !errors.Is(err, ErrNotPaused) {
		t.Errorf("after the abort the pause record is still there: %v", err)
	}
}

// firingAlarms has every alarm it is asked about in ALARM.
type firingAlarms struct{}

func (firingAlarms) Firing(_ context.Context, names []string) ([]alarms.Alarm, error) {
	var out []alarms.Alarm
	for _, n := range names {
		out = append(out, alarms.Alarm{Name: n, Type: alarms.MetricAlarm, State: alarms.StateAlarm, Reason: "Threshold Crossed"})
	}
	return out, nil
}

// A decision asked while another deploy holds the fleet lock (the paused one was stopped; a new
// one runs) is refused, naming the holder: that deploy would never take it, and, past its checks,
// it ends the pause; the record's removal must not read as "the paused deploy took it".
func TestADecisionWhileAnotherDeployHoldsTheLockIsRefused(t *testing.T) {
	t.Parallel()
	f, path := onV1(t, 2, defaultValues())
	cfg := f.load(path)
	stopped := Holder("zero502 deploy --version v2")
	stopped.PID = 1 << 22 // not this process: the paused deploy that was stopped
	if err := writePause(cfg, Pause{Version: "v2", Canary: []string{"host-a"}, Since: time.Now(), By: stopped.String(), Holder: stopped,
		From: map[string]string{"host-a": "v1"}}); err != nil {
		t.Fatal(err)
	}
	cfg.Hooks.PreDeploy = config.Hook{Command: []string{"sh", "-c", "sleep 3"}, Timeout: 30 * time.Second}
	slow := f.write("slow.yaml", cfg)
	var ev eventLog
	done := make(chan error, 1)
	go func() {
		_, err := f.deployer(f.load(slow), &ev, Options{}).Deploy(context.Background(), "v3")
		done <- err
	}()
	poll.UntilNil(t, 20*time.Second, "the v3 deploy holds the fleet lock", func() error {
		if strings.Contains(ev.String(), "locked") {
			return nil
		}
		return context.DeadlineExceeded
	})
	c := f.load(path)
	rep, err := Decide(context.Background(), c, Abort, f.deployer(c, nil, Options{}).opts, 20*time.Second)
	if derr := <-done; derr != nil {
		t.Fatalf("deploy v3: %v", derr)
	}
	if rep != nil || err == nil || !strings.Contains(err.Error(), "not by the paused deploy of v2") || !strings.Contains(err.Error(), "nothing was decided") {
		t.Errorf("abort while the v3 deploy holds the lock: %v, %v; want it refused, naming the holder", rep, err)
	}
	if v := f.versions(); v["host-a"] != "v3" || v["host-b"] != "v3" {
		t.Errorf("after the v3 deploy: %v, want every host on v3", v)
	}
}
