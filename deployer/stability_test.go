package deployer

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/zero502/zero502/deployer/report"
	"github.com/zero502/zero502/infra/runtime"
	"github.com/zero502/zero502/infra/spec"
)

// The source's original bug: a gateway that passes its first health check and dies a moment
// later left a host with no gateway while the deploy reported success. Here the new gateway
// exits 300 ms after its own start, inside its stability window (healthy_threshold 2 × interval
// 400ms = 800ms from its first healthy answer, so a slow boot under load cannot hide it; a
// CI run once saw the gateway boot in 700 ms and die after a window counted from the start had
// closed): the deploy fails naming the host and the service, the host is rolled back to
// v1 (both services), and the next host is untouched.
func TestGatewayThatDiesAfterItsHealthCheckFailsTheHostAndIsRolledBack(t *testing.T) {
	t.Parallel()
	f := newFleet(t, 2)
	v := defaultValues()
	v.Interval, v.Unhealthy = 400*time.Millisecond, 2 // I1: drain.window 1s > 400ms × 2
	v.Gateway = []string{}
	good := f.config("good.yaml", v)
	f.startLB(good)
	ctx := context.Background()
	if _, err := f.deployer(f.load(good), nil, Options{}).Deploy(ctx, "v1"); err != nil {
		t.Fatalf("deploy v1: %v", err)
	}
	before := f.instances("host-b")

	v.Gateway = []string{"--exit-after", "300ms"}
	cfg := f.load(f.config("bad.yaml", v))
	var ev eventLog
	rep, err := f.deployer(cfg, &ev, Options{}).Deploy(ctx, "v2")
	if err == nil {
		t.Fatalf("the deploy reported success while host-a's new gateway exited after 300ms\nevents:\n%s", &ev)
	}
	// Mostly caught in the stability window; on a slow machine, already while waiting for health.
	for _, want := range []string{"host host-a", "service gateway", "exited with code 1"} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("error does not say %q: %v", want, err)
		}
	}
	if strings.Contains(ev.String(), " "+stepVerified+" v2") {
		t.Errorf("a host was reported verified on v2:\n%s", &ev)
	}
	a, b := rep.Hosts[0], rep.Hosts[1]
	if a.Outcome != report.OutcomeRolledBack || a.Running != "v1" {
		t.Errorf("host-a: %s, runs %q; want rolled back, every service on v1\nevents:\n%s", a.Outcome, a.Running, &ev)
	}
	if b.Outcome != report.OutcomeNotReached || b.Running != "v1" {
		t.Errorf("host-b: %s, runs %q; want not reached, still v1", b.Outcome, b.Running)
	}
	for svc, in := range f.instances("host-a") {
		if in.Version != "v1" {
			t.Errorf("host-a's %s runs %s after the rollback, want v1", svc, in.Version)
		}
	}
	if got := f.instances("host-b"); len(got) != 2 || got["web"].ID != before["web"].ID || got["gateway"].ID != before["gateway"].ID {
		t.Errorf("host-b's instances changed: before %v, after %v; want it untouched", before, got)
	}
	if s, err := spec.Read(spec.Path(f.stateDir(0))); err != nil || s.Version != "v1" {
		t.Errorf("host-a's published spec: %q %v, want v1 republished", s.Version, err)
	}
}

// instances are host's running instances by service.
func (f *fleet) instances(host string) map[string]runtime.Instance {
	f.t.Helper()
	insts, err := f.runtimes[host].List(context.Background(), runtime.Filter{Host: host})
	if err != nil {
		f.t.Fatal(err)
	}
	out := map[string]runtime.Instance{}
	for _, in := range insts {
		if in.Running() {
			out[in.Service] = in
		}
	}
	return out
}

// A new instance that exits while the deployer waits for its health fails the step at once,
// naming host, service and exit code, instead of waiting out rollout.healthy_deadline.
func TestInstanceThatExitsBeforeHealthyFailsAtOnce(t *testing.T) {
	t.Parallel()
	f := newFleet(t, 2)
	v := defaultValues()
	v.Kind = "none"
	v.HealthyDeadline = time.Minute
	v.AppFlags = []string{"--start-unhealthy", "--exit-after", "300ms"}
	cfg := f.load(f.config("dies.yaml", v))
	var ev eventLog
	began := time.Now()
	rep, err := f.deployer(cfg, &ev, Options{}).Deploy(context.Background(), "v1")
	took := time.Since(began)
	if err == nil {
		t.Fatalf("deploy of an instance that exits at once succeeded\nevents:\n%s", &ev)
	}
	for _, want := range []string{"host host-a", "service web", "exited with code 1", "before it was healthy"} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("error does not say %q: %v", want, err)
		}
	}
	if took >= v.HealthyDeadline {
		t.Errorf("the deploy took %s: it waited out rollout.healthy_deadline %s instead of failing at the exit", took, v.HealthyDeadline)
	}
	if a := rep.Hosts[0]; a.Outcome != report.OutcomeRolledBack || a.Running != "" {
		t.Errorf("host-a: %s, runs %q; want rolled back to nothing", a.Outcome, a.Running)
	}
	f.requireUntouched()
}
