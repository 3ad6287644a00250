package deployer

import (
	"context"
	"errors"
	"strings"
	"testing"

	"github.com/zero502/zero502/deployer/report"
	"github.com/zero502/zero502/infra/runtime"
)

// The original bug: a server that stops listening as soon as it gets SIGTERM, while the
// balancer still sends it traffic. The deployer's watch sees the target still in rotation when
// the instance exits, stops the rollout with that finding and rolls the host back.
func TestServerGoneBeforeLeavingRotationStopsTheRollout(t *testing.T) {
	t.Parallel()
	f := newFleet(t, 2)
	v := defaultValues()
	v.AppFlags = []string{"--drain", "0s"} // the app ignores the drain window
	v.Unhealthy = 4                        // 800ms to notice: far longer than the app takes to exit
	path := f.config("nodrain.yaml", v)
	cfg := f.load(path)
	f.startLB(path)
	ctx := context.Background()
	if _, err := f.deployer(cfg, nil, Options{}).Deploy(ctx, "v1"); err != nil {
		t.Fatalf("deploy v1: %v", err)
	}
	var ev eventLog
	rep, err := f.deployer(cfg, &ev, Options{}).Deploy(ctx, "v2")
	if !errors.Is(err, errStillInRotation) {
		t.Fatalf("deploy v2: %v, want ErrStillInRotation\nevents:\n%s", err, &ev)
	}
	if a := rep.Hosts[0]; a.Outcome != report.OutcomeRolledBack || a.Running != "v1" || !a.Timeline.LeftRotation.IsZero() {
		t.Errorf("host-a: %s, runs %q, left rotation %v; want rolled back to v1, never seen leaving", a.Outcome, a.Running, a.Timeline.LeftRotation)
	}
	if b := rep.Hosts[1]; b.Outcome != report.OutcomeNotReached || b.Running != "v1" {
		t.Errorf("host-b: %s, runs %q; want not reached, on v1", b.Outcome, b.Running)
	}
}

// An old instance whose drain does not fit in drain.stop_grace is SIGKILLed by the runtime: the
// deployer reports that as a failure of invariant I2 and rolls the host back.
func TestKilledOldInstanceFailsNamingI2(t *testing.T) {
	t.Parallel()
	f := newFleet(t, 2)
	v := defaultValues()
	v.AppFlags = []string{"--drain", "6s"} // longer than stop_grace 4s, whatever the config says
	path := f.config("slowdrain.yaml", v)
	cfg := f.load(path)
	f.startLB(path)
	ctx := context.Background()
	if _, err := f.deployer(cfg, nil, Options{}).Deploy(ctx, "v1"); err != nil {
		t.Fatalf("deploy v1: %v", err)
	}
	var ev eventLog
	rep, err := f.deployer(cfg, &ev, Options{}).Deploy(ctx, "v2")
	if !errors.Is(err, runtime.ErrKilled) || !strings.Contains(err.Error(), "invariant I2") {
		t.Fatalf("deploy v2: %v, want ErrKilled naming invariant I2\nevents:\n%s", err, &ev)
	}
	if a := rep.Hosts[0]; a.Outcome != report.OutcomeRolledBack || a.Running != "v1" {
		t.Errorf("host-a: %s, runs %q; want rolled back to v1", a.Outcome, a.Running)
	}
}

// A deploy cancelled (Ctrl-C) while the old instance drains has no balancer view any more: the
// stop goes on to its end, and the error is the cancellation with what is known (the old
// instance stopped), not a finding about the balancer ("still in rotation … does the balancer
// check this health path?") that never happened.
func TestCancelDuringTheDrainIsReportedAsTheCancel(t *testing.T) {
	t.Parallel()
	f := newFleet(t, 2)
	path := f.config("fleet.yaml", defaultValues())
	cfg := f.load(path)
	f.startLB(path)
	if _, err := f.deployer(cfg, nil, Options{}).Deploy(context.Background(), "v1"); err != nil {
		t.Fatalf("deploy v1: %v", err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	var ev eventLog
	opts := Options{Events: func(e Event) {
		ev.add(e)
		if e.Step == StepDrain && e.Host == cfg.Hosts[0].Name {
			cancel() // Ctrl-C as host-a's drain begins
		}
	}}
	d := f.deployer(cfg, nil, opts)
	_, err := d.Deploy(ctx, "v2")
	if !errors.Is(err, context.Canceled) || errors.Is(err, errStillInRotation) {
		t.Fatalf("deploy v2 cancelled during host-a's drain: %v; want the cancellation, not a still-in-rotation finding\nevents:\n%s", err, &ev)
	}
	if !strings.Contains(err.Error(), "stopped (exit 0)") {
		t.Errorf("the error %q does not say the old instance stopped", err)
	}
}
