package deployer

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/zero502/zero502/deployer/report"
	"github.com/zero502/zero502/infra/adminapi"
)

// A fresh host whose new instance failed its check before traffic (here the pre_traffic hook) is
// cleared by its rollback; the target the deployer held out at the balancer for the check must
// not stay drained by the deploy: a later deploy without that check (the broken hook removed)
// would start the version there and wait for ever for a target nobody undrains.
func TestAFreshHostFailedBeforeTrafficIsNotLeftHeldOut(t *testing.T) {
	t.Parallel()
	f := newFleet(t, 2)
	script, _ := hookScript(t, f.dir)
	v := defaultValues()
	v.HealthyDeadline = 4 * time.Second
	cfg := f.load(f.config("good.yaml", v))
	good := f.write("good.yaml", cfg)
	withHooks(cfg, script, "pre_traffic")
	bad := f.write("bad.yaml", cfg)
	f.startLB(good)
	ctx := context.Background()

	var ev eventLog
	rep, err := f.deployer(f.load(bad), &ev, Options{}).Deploy(ctx, "v1")
	if err == nil || !strings.Contains(err.Error(), "hooks.pre_traffic") {
		t.Fatalf("first deploy failing its pre_traffic hook: %v; want the hook named\nevents:\n%s", err, &ev)
	}
	if a := rep.Hosts[0]; a.Outcome != report.OutcomeRolledBack || a.Running != "" {
		t.Fatalf("host-a: %s, runs %q; want rolled back to nothing\nevents:\n%s", a.Outcome, a.Running, &ev)
	}
	target := fmt.Sprintf("127.0.0.1:%d", f.base+f.offsets[0])
	if be := backendStatus(t, f.admin, target); be.AdminDrained {
		t.Errorf("host-a's target %s after its rollback to nothing: %+v; want it no longer held out by the deploy\nevents:\n%s", target, be, &ev)
	}

	var ev2 eventLog
	if _, err := f.deployer(f.load(good), &ev2, Options{}).Deploy(ctx, "v1"); err != nil {
		t.Fatalf("rerun without the failing hook: %v; want every host deployed\nevents:\n%s", err, &ev2)
	}
}

// A deploy cancelled (Ctrl-C) as the pre_traffic hook passed, before the target held out for it
// was added back: the hold must outlive the failed add, so the rollback's old instance is added
// back in its place. Lost with it, v1 ran held out for ever: its rollback failed waiting for
// rotation, and every later deploy was refused (a target not healthy at the balancer).
func TestACancelAsTheCheckBeforeTrafficPassedLeavesNoTargetHeldOut(t *testing.T) {
	t.Parallel()
	f := newFleet(t, 2)
	script, _ := hookScript(t, f.dir)
	cfg := f.load(f.config("fleet.yaml", defaultValues()))
	withHooks(cfg, script, "")
	path := f.write("fleet.yaml", cfg)
	f.startLB(path)
	if _, err := f.deployer(f.load(path), nil, Options{}).Deploy(context.Background(), "v1"); err != nil {
		t.Fatalf("deploy v1: %v", err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	var ev eventLog
	opts := Options{Events: func(e Event) {
		ev.add(e)
		if e.Host == "host-a" && e.Step == stepHook && strings.HasPrefix(e.Message, "hooks.pre_traffic") {
			cancel()
		}
	}}
	rep, err := f.deployer(f.load(path), nil, opts).Deploy(ctx, "v2")
	if err == nil || !strings.Contains(err.Error(), "context canceled") {
		t.Fatalf("deploy v2 cancelled as its pre_traffic hook passed: %v; want the cancel named\nevents:\n%s", err, &ev)
	}
	if a := rep.Hosts[0]; a.Outcome != report.OutcomeRolledBack || a.Running != "v1" {
		t.Errorf("host-a: %s, runs %q; want rolled back to v1\nevents:\n%s", a.Outcome, a.Running, &ev)
	}
	target := fmt.Sprintf("127.0.0.1:%d", f.base+f.offsets[0])
	if be := backendStatus(t, f.admin, target); be.AdminDrained {
		t.Errorf("host-a's target %s after its rollback to v1: %+v; want it no longer held out by the deploy\nevents:\n%s", target, be, &ev)
	}
	var ev2 eventLog
	if _, err := f.deployer(f.load(path), &ev2, Options{}).Deploy(context.Background(), "v2"); err != nil {
		t.Fatalf("rerun: %v; want every host deployed\nevents:\n%s", err, &ev2)
	}
}

// backendStatus is the in-house LB's entry for target (GET /admin/backends/{target}).
func backendStatus(t *testing.T, admin, target string) adminapi.BackendStatus {
	t.Helper()
	resp, err := http.Get("http://" + admin + "/admin/backends/" + target)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var be adminapi.BackendStatus
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("GET /admin/backends/%s: %s", target, resp.Status)
	}
	if err := json.NewDecoder(resp.Body).Decode(&be); err != nil {
		t.Fatal(err)
	}
	return be
}
