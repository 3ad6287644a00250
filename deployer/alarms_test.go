package deployer

import (
	"context"
	"errors"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/zero502/zero502/deployer/report"
	"github.com/zero502/zero502/infra/alarms"
	"github.com/zero502/zero502/infra/alarms/cloudwatchdouble"
	"github.com/zero502/zero502/internal/testrig/albtest"
)

// cloudWatch is a CloudWatch double with the alarm "web-5xx" (OK) and the real SDK's watcher of it.
func cloudWatch(t *testing.T) (*cloudwatchdouble.Server, *alarms.Watcher) {
	t.Helper()
	cw := cloudwatchdouble.New(cloudwatchdouble.Options{Region: albtest.Region})
	srv := httptest.NewServer(cw)
	t.Cleanup(srv.Close)
	cw.Put(cloudwatchdouble.Alarm{Name: "web-5xx", State: cloudwatchdouble.OK})
	w, err := alarms.NewWatcher(context.Background(), albtest.Region, srv.URL)
	if err != nil {
		t.Fatal(err)
	}
	return cw, w
}

// Behind a balancer that publishes no per-target outcomes (kind none here, an ALB in production)
// rollout.alarms is the verdict: an alarm that fires once the first host runs v2 stops the
// rollout, every host this deploy moved goes back, and the error names the alarm and its reason.
func TestAlarmFiringDuringABatchRollsTheFleetBack(t *testing.T) {
	t.Parallel()
	cw, watcher := cloudWatch(t)
	f := newFleet(t, 2)
	v := defaultValues()
	v.Kind = "none"
	cfg := f.load(f.config("alarms.yaml", v))
	cfg.Rollout.Alarms = []string{"web-5xx"}
	ctx := context.Background()
	if _, err := f.deployer(cfg, nil, Options{Alarms: watcher}).Deploy(ctx, "v1"); err != nil {
		t.Fatalf("deploy v1: %v", err)
	}
	var ev eventLog
	opts := Options{Alarms: watcher, Self: bin, Runtime: f.deployer(cfg, nil, Options{}).opts.Runtime, Events: func(e Event) {
		ev.add(e)
		if e.Step == stepVerified && e.Host == "host-a" && e.Version == "v2" {
			cw.SetState("web-5xx", cloudwatchdouble.Alarming, "Threshold Crossed: 12 5XX in 1 minute")
		}
	}}
	rep, err := New(cfg, opts).Deploy(ctx, "v2")
	var verdict *VerdictError
	if !errors.As(err, &verdict) || !strings.Contains(err.Error(), `alarm "web-5xx"`) || !strings.Contains(err.Error(), "Threshold Crossed") {
		t.Fatalf("deploy v2 with web-5xx firing after host-a: %v; want a failed verdict naming the alarm and its reason\nevents:\n%s", err, &ev)
	}
	for host, got := range f.versions() {
		if got != "v1" {
			t.Errorf("%s runs %q, want v1 again", host, got)
		}
	}
	if a := rep.Hosts[0]; a.Outcome != report.OutcomeRolledBack || !strings.Contains(a.Verdict, "rollout.alarms") {
		t.Errorf("host-a: %s, verdict %q; want rolled back by the alarm", a.Outcome, a.Verdict)
	}
	if b := rep.Hosts[1]; b.Outcome != report.OutcomeNotReached {
		t.Errorf("host-b: %s, want not reached", b.Outcome)
	}
}

// Preflight refuses, before anything changes, a deploy into an alarm already in ALARM and one
// that names an alarm that does not exist (a typo must never pass the gate).
func TestAlarmsRefuseADeployBeforeAnythingChanges(t *testing.T) {
	t.Parallel()
	cw, watcher := cloudWatch(t)
	f := newFleet(t, 2)
	v := defaultValues()
	v.Kind = "none"
	cfg := f.load(f.config("alarms.yaml", v))
	ctx := context.Background()
	if _, err := f.deployer(cfg, nil, Options{}).Deploy(ctx, "v1"); err != nil {
		t.Fatalf("deploy v1: %v", err)
	}
	cw.SetState("web-5xx", cloudwatchdouble.Alarming, "already bad")
	for _, tc := range []struct {
		names []string
		says  string
	}{
		{[]string{"web-5xx"}, `alarm "web-5xx" (MetricAlarm) in ALARM`},
		{[]string{"web-5xxx"}, `alarm "web-5xxx" does not exist in region ` + albtest.Region},
	} {
		cfg.Rollout.Alarms = tc.names
		_, err := f.deployer(cfg, nil, Options{Alarms: watcher}).Deploy(ctx, "v2")
		var refused *refusedError
		if !errors.As(err, &refused) || !strings.Contains(err.Error(), tc.says) {
			t.Errorf("deploy with rollout.alarms %v: %v; want refused saying %q", tc.names, err, tc.says)
		}
		for host, got := range f.versions() {
			if got != "v1" {
				t.Errorf("%s runs %q after a refused deploy", host, got)
			}
		}
	}
}
