package deployer

import (
	"context"
	"errors"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/zero502/zero502/deployer/report"
	"github.com/zero502/zero502/infra/alarms"
	"github.com/zero502/zero502/infra/alarms/cloudwatchdouble"
	"github.com/zero502/zero502/infra/config"
)

// flakyAlarms is the real watcher of the CloudWatch double whose reads, once the canary's verdict
// began (armed, on its StepCanary event: after the watch during the hosts' steps has ended), fail
// as a throttled DescribeAlarms does after the SDK's retries, the nth of them (1: the verdict's
// first) when fails(n) says so.
type flakyAlarms struct {
	AlarmWatcher
	armed  atomic.Bool
	judged atomic.Int32 // reads since armed
	fails  func(n int32) bool
}

func (f *flakyAlarms) Firing(ctx context.Context, names []string) ([]alarms.Alarm, error) {
	if f.armed.Load() && f.fails(f.judged.Add(1)) {
		return nil, errors.New("rollout.alarms: CloudWatch DescribeAlarms in region eu-west-1: ThrottlingException: Rate exceeded")
	}
	return f.AlarmWatcher.Firing(ctx, names)
}

// arm is Options.Events that arms f at the canary's verdict and logs every event in ev.
func (f *flakyAlarms) arm(ev *eventLog) func(Event) {
	return func(e Event) {
		ev.add(e)
		if e.Step == StepCanary {
			f.armed.Store(true)
		}
	}
}

// One read of rollout.alarms that fails (throttled) is read again: the canary, judged by its
// analysis and by alarms that stay OK, passes, and every host rolls to v2.
func TestOneFailedAlarmReadIsReadAgainAndTheRolloutGoesOn(t *testing.T) {
	t.Parallel()
	_, watcher := cloudWatch(t)
	f, path := judgedFleet(t, true)
	cfg := f.load(path)
	cfg.Rollout.Alarms = []string{"web-5xx"}
	flaky := &flakyAlarms{AlarmWatcher: watcher, fails: func(n int32) bool { return n == 1 }} // the canary's first look
	var ev eventLog
	_, err := f.deployer(cfg, nil, Options{Alarms: flaky, Events: flaky.arm(&ev)}).Deploy(context.Background(), "v2")
	if err != nil {
		t.Fatalf("deploy v2 with one failed read of rollout.alarms: %v; want it read again and the rollout to go on\nevents:\n%s", err, &ev)
	}
	for host, got := range f.versions() {
		if got != "v2" {
			t.Errorf("%s runs %q, want v2\nevents:\n%s", host, got, &ev)
		}
	}
	if !strings.Contains(ev.String(), "ThrottlingException") {
		t.Errorf("no event says the read of rollout.alarms failed and was tried again\nevents:\n%s", &ev)
	}
}

// Reads of rollout.alarms that keep failing are a failed verdict, never a pass nor a plain error
// that would leave the canary on the new version, unjudged, with its full share of the traffic:
// the canary goes back to v1 (rollout.on_failure rollback) and the rest is never touched.
func TestAlarmReadsThatKeepFailingFailTheCanaryAndRollItBack(t *testing.T) {
	t.Parallel()
	_, watcher := cloudWatch(t)
	f, path := judgedFleet(t, true)
	cfg := f.load(path)
	cfg.Rollout.Alarms = []string{"web-5xx"}
	flaky := &flakyAlarms{AlarmWatcher: watcher, fails: func(int32) bool { return true }} // every read of the verdict
	var ev eventLog
	rep, err := f.deployer(cfg, nil, Options{Alarms: flaky, Events: flaky.arm(&ev)}).Deploy(context.Background(), "v2")
	var verdict *VerdictError
	if !errors.As(err, &verdict) || !strings.Contains(err.Error(), "the alarm gate could not look") || !strings.Contains(err.Error(), "ThrottlingException") {
		t.Fatalf("deploy v2 with every read of rollout.alarms failing: %v; want a failed verdict saying the gate could not look, and why\nevents:\n%s", err, &ev)
	}
	for host, got := range f.versions() {
		if got != "v1" {
			t.Errorf("%s runs %q, want v1\nevents:\n%s", host, got, &ev)
		}
	}
	if a := rep.Hosts[0]; a.Outcome != report.OutcomeRolledBack || !strings.Contains(a.Verdict, "could not look") {
		t.Errorf("host-a (the canary): %s, verdict %q; want rolled back by the alarm gate", a.Outcome, a.Verdict)
	}
	if n := flaky.judged.Load(); n != readTries {
		t.Errorf("rollout.alarms read %d times for the canary's verdict; want %d", n, readTries)
	}
}

// An alarm that fires while the deploy is paused after its canary fails the canary's verdict at
// the promote: the canary goes back to v1 before the next batch, which is never touched, as
// preflight refuses a deploy into a firing alarm.
func TestAPromoteIntoAFiringAlarmRollsTheCanaryBackBeforeTheNextBatch(t *testing.T) {
	t.Parallel()
	cw, watcher := cloudWatch(t)
	f, path := judgedFleet(t, true)
	cfg := f.load(path)
	cfg.Rollout.Alarms = []string{"web-5xx"}
	var ev eventLog
	var hostBTouched atomic.Bool
	opts := Options{Alarms: watcher, PauseAfterCanary: true, Events: func(e Event) {
		ev.add(e)
		if e.Host == "host-b" && e.Version == "v2" && (e.Step == StepPublish || e.Step == StepDrain) {
			hostBTouched.Store(true)
		}
		if e.Step == stepPaused && strings.HasPrefix(e.Message, "paused after the canary") {
			cw.SetState("web-5xx", cloudwatchdouble.Alarming, "Threshold Crossed: 40 5XX in 1 minute")
			p, err := readPause(cfg)
			if err != nil {
				t.Errorf("read the pause record: %v", err)
				return
			}
			p.Decision, p.DecidedBy = Promote, "the test"
			if err := writePause(cfg, p); err != nil {
				t.Errorf("write the promote: %v", err)
			}
		}
	}}
	rep, err := f.deployer(cfg, nil, opts).Deploy(context.Background(), "v2")
	if hostBTouched.Load() {
		t.Fatalf("host-b was moved to v2 while web-5xx was in ALARM at the promote (deploy: %v)\nevents:\n%s", err, &ev)
	}
	var verdict *VerdictError
	if !errors.As(err, &verdict) || !strings.Contains(err.Error(), `alarm "web-5xx"`) || !strings.Contains(err.Error(), "rollout stopped before host-b") {
		t.Fatalf("promote into web-5xx in ALARM: %v; want a failed verdict naming the alarm, the rollout stopped before host-b\nevents:\n%s", err, &ev)
	}
	for host, got := range f.versions() {
		if got != "v1" {
			t.Errorf("%s runs %q, want v1\nevents:\n%s", host, got, &ev)
		}
	}
	if a := rep.Hosts[0]; a.Outcome != report.OutcomeRolledBack {
		t.Errorf("host-a (the canary): %s, want rolled back", a.Outcome)
	}
	if !strings.Contains(ev.String(), "before host-b rolls: CloudWatch alarms web-5xx must not fire") {
		t.Errorf("no event says rollout.alarms is looked at before host-b rolls\nevents:\n%s", &ev)
	}
}

// A deploy asked to pause after its canary that has no canary (nothing to judge one by) is
// refused before anything changes, saying why and what to set: it would otherwise roll every
// host with no pause, the one thing --pause-after-canary was given to prevent.
func TestPauseAfterCanaryWithoutACanaryIsRefusedBeforeAnythingChanges(t *testing.T) {
	t.Parallel()
	f, path := onV1(t, 2, defaultValues()) // the in-house LB; the analysis off
	for _, tc := range []struct {
		name string
		set  func(cfg *config.Config)
		says string
	}{
		{"analysis off", func(*config.Config) {}, "rollout.analysis.enabled is false"},
		{"canary.hosts 0", func(c *config.Config) { judged(c, analysisWindow, canaryFor); c.Rollout.Canary.Hosts = 0 }, "rollout.canary.hosts is 0"},
		{"kind none", func(c *config.Config) { judged(c, analysisWindow, canaryFor); c.Balancer.Kind = "none" }, "balancer.kind none"},
	} {
		cfg := f.load(path)
		tc.set(cfg)
		var ev eventLog
		_, err := f.deployer(cfg, &ev, Options{PauseAfterCanary: true}).Deploy(context.Background(), "v2")
		var refused *refusedError
		if !errors.As(err, &refused) || !strings.Contains(err.Error(), "--pause-after-canary: this deploy has no canary") || !strings.Contains(err.Error(), tc.says) {
			t.Errorf("%s: deploy v2 --pause-after-canary: %v; want it refused, saying %q\nevents:\n%s", tc.name, err, tc.says, &ev)
		}
		for host, got := range f.versions() {
			if got != "v1" {
				t.Fatalf("%s: %s runs %q after deploy v2 --pause-after-canary with no canary; want v1\nevents:\n%s", tc.name, host, got, &ev)
			}
		}
	}
}

// An alarm in ALARM while the canary's hosts take their steps (here from host-a's first healthy
// answer through its 4 s bake, two polls of the watch at least) fails the canary's verdict although
// it is OK again once the bake ends, before the canary's window: the canary goes back to v1.
func TestAnAlarmThatFiresAndClearsDuringTheBakeFailsTheVerdict(t *testing.T) {
	t.Parallel()
	cw, watcher := cloudWatch(t)
	f, path := judgedFleet(t, true)
	cfg := f.load(path)
	cfg.Rollout.Alarms = []string{"web-5xx"}
	cfg.Rollout.Bake = 2*alarmPoll + time.Second
	var ev eventLog
	opts := Options{Alarms: watcher, Events: func(e Event) {
		ev.add(e)
		if e.Host == "host-a" && e.Version == "v2" {
			switch e.Step {
			case stepHealthy:
				cw.SetState("web-5xx", cloudwatchdouble.Alarming, "Threshold Crossed: 40 5XX in 1 minute")
			case stepStable:
				cw.SetState("web-5xx", cloudwatchdouble.OK, "Threshold Crossed: 0 5XX in 1 minute")
			}
		}
	}}
	_, err := f.deployer(cfg, nil, opts).Deploy(context.Background(), "v2")
	var verdict *VerdictError
	if !errors.As(err, &verdict) || !strings.Contains(err.Error(), "web-5xx") || !strings.Contains(err.Error(), "while the hosts took their steps") {
		t.Fatalf("deploy v2 with web-5xx in ALARM during host-a's bake: %v; want a failed verdict naming the alarm\nevents:\n%s", err, &ev)
	}
	for host, got := range f.versions() {
		if got != "v1" {
			t.Errorf("%s runs %q, want v1 (the canary rolled back, the rest never touched)\nevents:\n%s", host, got, &ev)
		}
	}
}
