package deployer

import (
	"context"
	"strings"
	"testing"

	"github.com/zero502/zero502/infra/config"
)

// The naive deploy (the demo's "before" picture) kills old instances at once and does not
// watch the balancer, yet still ends with every host verified on the new version.
func TestNaiveDeployKillsAtOnceWithoutWatching(t *testing.T) {
	t.Parallel()
	f := newFleet(t, 2)
	path := f.config("fleet.yaml", defaultValues())
	cfg := f.load(path)
	f.startLB(path)
	ctx := context.Background()
	if _, err := f.deployer(cfg, nil, Options{}).Deploy(ctx, "v1"); err != nil {
		t.Fatalf("deploy v1: %v", err)
	}
	var ev eventLog
	rep, err := f.deployer(cfg, &ev, Options{Naive: true}).Deploy(ctx, "v2")
	if err != nil {
		t.Fatalf("naive deploy: %v\nevents:\n%s", err, &ev)
	}
	for _, h := range rep.Hosts {
		tl := h.Timeline
		if h.Running != "v2" || !tl.LeftRotation.IsZero() || !tl.BackInRotation.IsZero() || tl.Stopped.Sub(tl.DrainStarted) >= cfg.Drain.Window {
			t.Errorf("%s: runs %q, timeline %s; want v2, killed well within drain.window, no balancer marks", h.Host, h.Running, tl)
		}
	}
	if !strings.Contains(ev.String(), "naive: SIGKILL") {
		t.Errorf("events do not say the old instances were killed:\n%s", &ev)
	}
}

// With balancer.kind none there is no balancer view: no drift check, no watch, direct health
// checks only; a rolling deploy still drains and verifies.
func TestBalancerNoneDeploysOnDirectChecks(t *testing.T) {
	t.Parallel()
	f := newFleet(t, 2)
	v := defaultValues()
	v.Kind = "none"
	cfg := f.load(f.config("none.yaml", v))
	ctx := context.Background()
	for _, version := range []string{"v1", "v2"} {
		var ev eventLog
		rep, err := f.deployer(cfg, &ev, Options{}).Deploy(ctx, version)
		if err != nil {
			t.Fatalf("deploy %s: %v\nevents:\n%s", version, err, &ev)
		}
		for _, h := range rep.Hosts {
			if h.Running != version || !h.Timeline.BackInRotation.IsZero() || h.Timeline.HealthyDirect.IsZero() {
				t.Errorf("%s after %s: runs %q, timeline %s; want %s healthy directly, no balancer marks", h.Host, version, h.Running, h.Timeline, version)
			}
		}
	}
}

// rollout.batch 2 of 3 hosts drains two hosts at once (I8: 2 < 3) and still leaves each host
// verified on the new version.
func TestBatchOfTwoRollsTwoHostsAtOnce(t *testing.T) {
	t.Parallel()
	f := newFleet(t, 3)
	v := defaultValues()
	v.Kind = "none"
	v.Batch = 2
	cfg := f.load(f.config("batch.yaml", v))
	ctx := context.Background()
	if _, err := f.deployer(cfg, nil, Options{}).Deploy(ctx, "v1"); err != nil {
		t.Fatalf("deploy v1: %v", err)
	}
	var ev eventLog
	rep, err := f.deployer(cfg, &ev, Options{}).Deploy(ctx, "v2")
	if err != nil {
		t.Fatalf("deploy v2: %v\nevents:\n%s", err, &ev)
	}
	a, b, c := rep.Hosts[0].Timeline, rep.Hosts[1].Timeline, rep.Hosts[2].Timeline
	if a.DrainStarted.After(b.Stopped) || b.DrainStarted.After(a.Stopped) {
		t.Errorf("host-a and host-b did not drain together: a %s; b %s", a, b)
	}
	if c.DrainStarted.Before(a.HealthyDirect) || c.DrainStarted.Before(b.HealthyDirect) {
		t.Errorf("host-c drained before the first batch was healthy: a %s; b %s; c %s", a, b, c)
	}
	for host, version := range rep.Versions() {
		if version != "v2" {
			t.Errorf("%s runs %q, want v2", host, version)
		}
	}
}

// Start-first with rollout.max_unavailable 1 and batches of 2 (host-a and host-b, then host-c):
// the first host of each batch drains its old instance as the new one starts (before the new one is in
// rotation), the others only once their new instance is in rotation; no request of the load
// fails and every host ends on the new version.
func TestStartFirstMaxUnavailableDrainsTheFirstHostsOfABatchEarly(t *testing.T) {
	t.Parallel()
	f := newFleet(t, 3)
	cfg := f.load(f.config("surge.yaml", defaultValues()))
	cfg.Rollout.Strategy, cfg.Rollout.Batch, cfg.Rollout.MaxUnavailable = config.StartFirst, 2, 1
	cfg.Services[0].Ports = []int{f.base, f.gatewayBase()}
	path := f.write("surge.yaml", cfg)
	f.startLB(path)
	ctx := context.Background()
	if _, err := f.deployer(f.load(path), nil, Options{}).Deploy(ctx, "v1"); err != nil {
		t.Fatalf("deploy v1: %v", err)
	}
	rep, res, ev, err := f.deployUnderLoad(ctx, path, "v2")
	if err != nil {
		t.Fatalf("deploy v2: %v\nevents:\n%s", err, ev)
	}
	requireNoFailure(t, res)
	d := New(f.load(path), Options{})
	if err := d.setup(); err != nil {
		t.Fatal(err)
	}
	var batches []string
	for _, b := range d.batches() {
		batches = append(batches, hostNames(cfg.Hosts[b.first:b.end]))
	}
	for i, host := range []string{"host-a", "host-b", "host-c"} {
		drained, inRotation := -1, -1
		for j, e := range ev.events {
			if e.Host == host && e.Version == "v1" && e.Step == StepDrain && drained < 0 {
				drained = j
			}
			if e.Host == host && e.Version == "v2" && e.Step == stepInRotation && inRotation < 0 {
				inRotation = j
			}
		}
		early := d.drainsEarly(cfg.Hosts[i])
		if drained < 0 || inRotation < 0 || early != (drained < inRotation) {
			t.Errorf("%s (batches %v, drains early: %t): v1 drained at event #%d, v2 in rotation at #%d\nevents:\n%s",
				host, batches, early, drained, inRotation, ev)
		}
		if rep.Hosts[i].Running != "v2" {
			t.Errorf("%s runs %q, want v2", host, rep.Hosts[i].Running)
		}
	}
	if !d.drainsEarly(cfg.Hosts[0]) || d.drainsEarly(cfg.Hosts[1]) || !d.drainsEarly(cfg.Hosts[2]) {
		t.Errorf("batches %q with rollout.max_unavailable 1: want host-a and host-c early (each first of its batch), host-b not", batches)
	}
}
