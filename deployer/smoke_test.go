package deployer

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/zero502/zero502/deployer/report"
	"github.com/zero502/zero502/infra/config"
)

// A new version whose health is fine but whose smoke request fails never takes traffic: the
// stop-first target is held out at the LB while it starts, the smoke GET / gets a 500, the host
// is rolled back (its v1 taken back in), host-b is not reached, and the load through the LB
// loses nothing. The good version passes its smoke and is deployed.
func TestFailingSmokeStopsTheHostBeforeItTakesTraffic(t *testing.T) {
	t.Parallel()
	f := newFleet(t, 2)
	values := defaultValues()
	smoke := []config.SmokeRequest{{Method: "GET", Path: "/", ExpectStatus: 200, ExpectBody: "version {version}", Timeout: time.Second}}
	cfg := f.load(f.config("good.yaml", values))
	cfg.Services[0].Smoke = smoke
	good := f.write("good.yaml", cfg)
	values.AppFlags = []string{"--fail-every", "1"}
	bad := f.load(f.config("bad.yaml", values))
	bad.Services[0].Smoke = smoke
	badPath := f.write("bad.yaml", bad)
	f.startLB(good)
	ctx := context.Background()
	var ev1 eventLog
	if _, err := f.deployer(f.load(good), &ev1, Options{}).Deploy(ctx, "v1"); err != nil {
		t.Fatalf("deploy v1 (its smoke passes): %v\nevents:\n%s", err, &ev1)
	}
	if !strings.Contains(ev1.String(), "smoke request(s) answered as expected") {
		t.Errorf("v1's smoke was not run:\n%s", &ev1)
	}
	rep, res, ev, err := f.deployUnderLoad(ctx, badPath, "v2")
	if err == nil || !strings.Contains(err.Error(), "services[].smoke[0] GET /") || !strings.Contains(err.Error(), "answered 500, want 200") {
		t.Fatalf("deploy of a version failing its smoke: %v; want the smoke request named\nevents:\n%s", err, ev)
	}
	requireNoFailure(t, res)
	if a := rep.Hosts[0]; a.Outcome != report.OutcomeRolledBack || a.Running != "v1" {
		t.Errorf("host-a: %s, runs %q; want rolled back to v1", a.Outcome, a.Running)
	}
	if b := rep.Hosts[1]; b.Outcome != report.OutcomeNotReached {
		t.Errorf("host-b: %s, want not reached", b.Outcome)
	}
	for _, e := range ev.events {
		if e.Step == stepInRotation && e.Version == "v2" {
			t.Errorf("v2 was put in rotation although its smoke failed: %s", e.Message)
		}
	}
}

// deployUnderLoad deploys version with the config at path while `zero502 measure` loads the
// fleet's LB (a second of load before the deploy, half a second after) and returns the report,
// what the load got, the deploy's events and its error.
func (f *fleet) deployUnderLoad(ctx context.Context, path, version string) (*report.Report, loadResult, *eventLog, error) {
	f.t.Helper()
	m := startMeasureOf(f.t, f.listen, "/", "/orders", "/health")
	time.Sleep(time.Second)
	ev := &eventLog{}
	rep, err := f.deployer(f.load(path), ev, Options{}).Deploy(ctx, version)
	time.Sleep(500 * time.Millisecond)
	return rep, m.stop(f.t), ev, err
}
