package demo

import (
	"strings"
	"testing"
	"time"

	"github.com/zero502/zero502/deployer/measure"
	"github.com/zero502/zero502/examples"
	"github.com/zero502/zero502/infra/config"
)

// The bound is the canary's share of the load for as long as the bad version serves it, from
// the config: on the embedded default, 5 % × (500ms + 4s + 1.5s) × 400 req/s = 120.
func TestBoundOfTheEmbeddedDefault(t *testing.T) {
	cfg, err := config.LoadBytes(examples.Local, "examples/local.yaml")
	if err != nil {
		t.Fatal(err)
	}
	b := boundOf(cfg, 400)
	want := float64(cfg.Rollout.Canary.Weight) / 100 * (max(cfg.Rollout.Bake, cfg.Balancer.Recovery()) + cfg.Rollout.Canary.Duration + cfg.Drain.Window).Seconds() * 400
	if b.Requests() != want || b.Allowed() != 1.5*want+5 {
		t.Fatalf("bound %v requests (allowed %v), want %v (allowed %v)", b.Requests(), b.Allowed(), want, 1.5*want+5)
	}
	if b.Weight != 5 || b.Serves() != 6*time.Second || !strings.Contains(b.Formula(), "5% × (bake 500ms + canary 4s + drain 1.5s) × 400 req/s = 120 requests") {
		t.Fatalf("the embedded default's bound: %s (serves %s)", b.Formula(), b.Serves())
	}
}

// The exit rule: stopped at the canary by a verdict, every host back on v1, the failures within
// the bound's margin; anything else is not stopped, and says why.
func TestBadVersionExitRule(t *testing.T) {
	bound := Bound{Weight: 10, Bake: 500 * time.Millisecond, Canary: 2 * time.Second, Drain: 1500 * time.Millisecond, Rate: 400} // allowed 245
	stopped := func() *badResult {
		return &badResult{
			Run:          &Result{Versions: map[string]string{"host-a": From, "host-b": From, "host-c": From}, Load: &measure.Result{}},
			CanaryHosts:  []string{"host-a"},
			DeployError:  "analysis of host-a failed: error rate 100.0% …; rollout.on_failure rollback: rolled back (host-a runs v1)",
			VerdictHosts: []string{"host-a"},
			Verdict:      "error rate 100.0% over 2s is above rollout.analysis.max_error_rate 5.0%",
			Failures:     120,
			Bound:        bound,
		}
	}
	for _, c := range []struct {
		name string
		edit func(*badResult)
		why  string // "" when stopped
	}{
		{"stopped at the canary within the bound", func(*badResult) {}, ""},
		{"over the bound, within the margin", func(r *badResult) { r.Failures = 245 }, ""},
		{"over the margin", func(r *badResult) { r.Failures = 246 }, "246 requests failed, more than the bound's 245"},
		{"the deploy went through", func(r *badResult) { r.DeployError, r.VerdictHosts, r.Verdict = "", nil, "" }, "went through"},
		{"failed otherwise", func(r *badResult) { r.DeployError, r.VerdictHosts, r.Verdict = "host-a: not healthy", nil, "" }, "not by a verdict: host-a: not healthy"},
		{"stopped after the canary", func(r *badResult) { r.VerdictHosts = []string{"host-b"} }, "not the canary host-a"},
		{"not every host back", func(r *badResult) { r.Run.Versions["host-a"] = To }, "not every host runs v1"},
		{"the demo did not run through", func(r *badResult) { r.Run.Error = "demo: LB admin: refused" }, "did not run through: demo: LB admin: refused"},
	} {
		r := stopped()
		c.edit(r)
		ok, why := r.judge()
		if ok != (c.why == "") || !strings.Contains(why, c.why) {
			t.Errorf("%s: stopped %v, why %q; want stopped %v, why with %q", c.name, ok, why, c.why == "", c.why)
		}
	}
}

// zero502 demo --bad-version, end to end on the embedded default: the canary stops the bad
// version by a verdict on its error rate, every host runs v1 again, the failed requests stay
// within the bound, and the exit code follows the rule.
func TestBadVersionDemoIsStoppedAtTheCanaryWithinTheBound(t *testing.T) {
	if testing.Short() {
		t.Skip("end-to-end: runs the whole demo")
	}
	res, code, stderr := demoJSON(t, "--bad-version")
	stopped, _ := res["stopped"].(bool)
	if code != 0 || !stopped {
		t.Fatalf("demo --bad-version: exit %d, stopped %v (%v)\nprogress:\n%s", code, stopped, res["why"], stderr)
	}
	run := res["run"].(map[string]any)
	versions, _ := run["versions"].(map[string]any)
	if len(versions) != 3 {
		t.Fatalf("want 3 hosts in versions, got %v", versions)
	}
	for h, v := range versions {
		if v != From {
			t.Errorf("host %s runs %v after the rollback, want %s", h, v, From)
		}
	}
	if v, _ := res["verdict"].(string); !strings.Contains(v, "error rate") {
		t.Errorf("verdict %q does not mention the error rate", v)
	}
	if c, _ := res["canary"].(string); !strings.Contains(c, "of new requests") {
		t.Errorf("canary %q does not say its share", c)
	}
	b := res["bound"].(map[string]any)
	serves := time.Duration(b["bake_ns"].(float64) + b["canary_ns"].(float64) + b["drain_ns"].(float64))
	bound := b["weight_percent"].(float64) / 100 * serves.Seconds() * b["rate"].(float64)
	failed := failures(t, run)
	if failed == 0 || failed > 1.5*bound+5 {
		t.Errorf("%v requests failed; want some (the bad version served its share) and at most the bound %.0f × 1.5 + 5", failed, bound)
	}
	if counts := run["load"].(map[string]any)["counts"].(map[string]any); counts[string(measure.C5xx)] == nil {
		t.Errorf("the load saw no 500 of the bad version: %v", counts)
	}
	t.Logf("%v failed of %v during the deploy (%.1f%%), bound %.0f", failed, res["deploy_requests"], 100*failed/res["deploy_requests"].(float64), bound)
}

// A run that fails before its load starts (the LB cannot start: no such binary) returns its
// error, naming what failed, instead of dereferencing the load's missing result.
func TestARunThatFailsBeforeItsLoadReturnsItsError(t *testing.T) {
	defer func() {
		if p := recover(); p != nil {
			t.Fatalf("demo.Run panicked instead of returning its error: %v", p)
		}
	}()
	res, err := Run(t.Context(), Options{Self: "/nonexistent/zero502"})
	if err == nil || res == nil || res.Error == "" {
		t.Fatalf("Run with no binary: result %+v, error %v; want the error in both", res, err)
	}
}
