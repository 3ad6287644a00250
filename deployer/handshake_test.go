package deployer

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/zero502/zero502/deployer/balancer"
	"github.com/zero502/zero502/deployer/report"
	"github.com/zero502/zero502/infra/lb"
	"github.com/zero502/zero502/infra/runtime"
	"github.com/zero502/zero502/infra/spec"
	"github.com/zero502/zero502/internal/testrig/lbinproc"
	"github.com/zero502/zero502/internal/testrig/poll"
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
	f, path := onV1(t, 2, defaultValues())
	cfg := f.load(path)
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

// Behind a tier of two LBs, a draining target has left rotation only once both took it out.
// Here the second LB checks / (which a draining app still answers with 200), so it never does:
// the first LB taking it out is not enough, the old instance exits while the second still sends
// it requests, and stop reports errStillInRotation naming the second LB, not a clean drain.
func TestStopBehindATierWaitsForEveryInstanceToLetGo(t *testing.T) {
	t.Parallel()
	f, path := onV1(t, 2, defaultValues())
	cfg := f.load(path)
	ctx := context.Background()
	h, rt := cfg.Hosts[0], f.runtimes[cfg.Hosts[0].Name]
	published, err := spec.Read(spec.Path(cfg.HostStateDir(h)))
	if err != nil {
		t.Fatal(err)
	}
	svc, _ := published.Service("web")
	insts, err := running(ctx, rt, h.Name, "web")
	if err != nil || len(insts) != 1 {
		t.Fatalf("running web on %s: %v, %v; want the one v1 instance", h.Name, insts, err)
	}

	// The second LB of the tier: its health checks ask /, which stays 200 through the drain.
	set := lb.LabSettings("127.0.0.1:0", []string{svc.Address})
	set.Admin, set.HealthPath = "127.0.0.1:0", "/"
	set.Interval, set.Timeout = 100*time.Millisecond, 80*time.Millisecond
	second := lbinproc.Start(t, set)
	first, other := balancer.NewInHouse(f.admin, ""), balancer.NewInHouse(second.AdminAddr(), "")
	poll.Until(t, 10*time.Second, "v1 in rotation at the second LB", func() bool {
		st, err := other.TargetState(ctx, svc.Address)
		return err == nil && st.InRotation
	})

	var ev eventLog
	d := f.deployer(cfg, &ev, Options{Balancer: balancer.Tier{first, other}})
	if err := d.setup(); err != nil {
		t.Fatal(err)
	}
	var tl report.Timeline
	err = d.stop(ctx, h, rt, insts[0], svc, true, &tl)
	if !errors.Is(err, errStillInRotation) || !strings.Contains(err.Error(), "still routed to by "+other.Name()+")") {
		t.Fatalf("stop behind a tier whose second LB keeps the target: %v; want errStillInRotation naming %s\nevents:\n%s", err, other.Name(), &ev)
	}
	if strings.Contains(err.Error(), "still routed to by "+first.Name()) {
		t.Errorf("the finding %q names %s, which took the target out", err, first.Name())
	}
	if !tl.LeftRotation.IsZero() {
		t.Errorf("left rotation recorded at %v, though the second LB never took the target out", tl.LeftRotation)
	}
	if st, err := first.TargetState(ctx, svc.Address); err != nil || st.InRotation {
		t.Errorf("the first LB: %+v, %v; want the drained target out of rotation there", st, err)
	}
}
