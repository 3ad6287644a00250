package deployer

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/zero502/zero502/infra/config"
)

// A host zero502 stop left down (its spec marks web stopped, nothing runs) is rolled back to that
// spec when the next deploy fails on it. Nothing runs there afterwards, and nothing says
// otherwise: not the report, not the rolled-back or done events (they said "host runs v1 again"
// and named v1), not the deploy's error.
func TestARollbackToAStoppedSpecSaysTheHostRunsNothing(t *testing.T) {
	t.Parallel()
	f := newFleet(t, 3)
	cfg := f.load(f.config("fleet.yaml", defaultValues()))
	plain := f.write("fleet.yaml", cfg)
	f.startLB(plain)
	ctx := context.Background()
	if _, err := f.deployer(f.load(plain), nil, Options{}).Deploy(ctx, "v1"); err != nil {
		t.Fatal(err)
	}
	stopOpts := Options{Self: bin, Runtime: func(h config.Host) (Runtime, error) { return f.runtimes[h.Name], nil }}
	if err := Stop(ctx, f.load(plain), StopTarget{Host: "host-a"}, stopOpts); err != nil {
		t.Fatalf("zero502 stop --host host-a: %v", err)
	}
	if v := f.versions()["host-a"]; v != "" {
		t.Fatalf("host-a runs %q after zero502 stop", v)
	}
	cfg.Hooks.PostTraffic = config.Hook{Command: []string{"sh", "-c", `[ "$ZERO502_HOST" != host-a ]`}, Timeout: 10 * time.Second}
	hooked := f.write("hooked.yaml", cfg)
	var ev eventLog
	rep, err := f.deployer(f.load(hooked), &ev, Options{}).Deploy(ctx, "v2")
	if err == nil {
		t.Fatalf("deploy v2 with host-a's post_traffic failing succeeded\n%s", &ev)
	}
	if v := f.versions()["host-a"]; v != "" {
		t.Fatalf("host-a runs %q after its rollback to the stopped spec; want nothing\n%s", v, &ev)
	}
	if a := rep.Hosts[0]; a.Running != "" {
		t.Errorf("report: host-a runs %q, want nothing", a.Running)
	}
	said := false
	for _, e := range ev.events {
		if e.Host != "host-a" || (e.Step != stepRolledBack && e.Step != stepDone) {
			continue
		}
		if e.Version != "" || strings.Contains(e.Message, "runs v1") {
			t.Errorf("event %s of host-a says it runs v1 (version %q, %q), but nothing runs there", e.Step, e.Version, e.Message)
		}
		said = said || e.Step == stepRolledBack && strings.Contains(e.Message, "runs nothing")
	}
	if !said {
		t.Errorf("no rolled-back event of host-a says it runs nothing\n%s", &ev)
	}
	if !strings.Contains(err.Error(), "rolled back to v1 with every service stopped") {
		t.Errorf("the deploy's error does not say host-a went back to v1 with every service stopped: %v", err)
	}
}
