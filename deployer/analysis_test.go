package deployer

import (
	"context"
	"errors"
	"fmt"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/zero502/zero502/deployer/balancer"
	"github.com/zero502/zero502/deployer/report"
	"github.com/zero502/zero502/infra/adminapi"
	"github.com/zero502/zero502/infra/config"
	"github.com/zero502/zero502/internal/testrig/poll"
)

// analysisRate is the analysis tests' load (requests per second through the LB): the canary's
// 10 % of it over canaryFor is 40 requests, enough for min_requests 10. analysisWindow judges
// each batch after the canary (above judged's header_timeout, I11).
const (
	analysisRate   = 100
	canaryFor      = 4 * time.Second
	analysisWindow = 3 * time.Second
)

// analysisFleet is a three-host fleet of zero502 app behind the LB, on v1, with load through the
// LB and rollout.analysis judging each batch for window (the canary, host-a with 10 % of the
// traffic, for canaryFor); bad are v2's app flags.
func analysisFleet(t *testing.T, window time.Duration, bad ...string) (f *fleet, good, v2 string) {
	t.Helper()
	f = newFleet(t, 3)
	values := defaultValues()
	good = f.config("good.yaml", values)
	cfg := f.load(good)
	judged(cfg, window, canaryFor)
	cfg.Rollout.Analysis.MinRequests = 10
	// These versions are judged by their errors. On two cores under the whole suite one answer in
	// a hundred (the p99 of a batch's window) may wait a few ms for the scheduler, more than the
	// default min_p99_increase 5ms: a good version failed the latency rule so (p99 6.3ms against
	// 1.2ms). The latency rule has its own tests (a 20 % slower version, the verdict's table).
	cfg.Rollout.Analysis.MinP99Increase = 50 * time.Millisecond
	good = f.write("good.yaml", cfg)
	values.AppFlags = bad
	v2cfg := f.load(f.config("v2.yaml", values))
	v2cfg.Rollout, v2cfg.Balancer.HeaderTimeout = cfg.Rollout, cfg.Balancer.HeaderTimeout
	v2 = f.write("v2.yaml", v2cfg)
	f.startLB(good)
	if _, err := f.deployer(f.load(good), nil, Options{}).Deploy(context.Background(), "v1"); err != nil {
		t.Fatalf("deploy v1: %v", err)
	}
	poll.UntilNil(t, 10*time.Second, "the LB has every host in rotation", func() error {
		for _, h := range f.load(good).Targets() {
			if st, err := balancer.NewInHouse(f.admin, "").TargetState(context.Background(), h); err != nil || !st.InRotation {
				return fmt.Errorf("%s: %+v %v", h, st, err)
			}
		}
		return nil
	})
	return f, good, v2
}

// A version whose /health answers 200 while every real request gets 500 is stopped by the
// analysis of its first host: the deploy fails naming the verdict's numbers, every host runs v1
// again, and the 500s users got came only from the one host for its bake and window.
func TestVersionFailingEveryRealRequestIsStoppedAndTheFleetRolledBack(t *testing.T) {
	t.Parallel()
	f, good, v2 := analysisFleet(t, analysisWindow, "--fail-every", "1")
	m := startMeasureAt(t, f.listen, analysisRate, "/", "/orders", "/health")
	time.Sleep(300 * time.Millisecond)
	// The canary's target (host-a's web) and its weight at the LB while it is judged.
	lb, canary, judgedAt := balancer.NewInHouse(f.admin, ""), f.load(good).Targets()[0], -1
	var ev eventLog
	d := f.deployer(f.load(v2), &ev, Options{})
	d.opts.Events = func(e Event) {
		ev.add(e)
		if e.Step == StepCanary && judgedAt < 0 { // said once the canary's weight is set
			if o, err := lb.Outcomes(context.Background()); err == nil && len(o[canary]) > 0 {
				judgedAt = o[canary][0].Weight
			}
		}
	}
	rep, err := d.Deploy(context.Background(), "v2")
	res := m.stop(t)
	var verdict *VerdictError
	if !errors.As(err, &verdict) {
		t.Fatalf("deploy of a version failing every request: %v; want a failed analysis verdict\nevents:\n%s", err, &ev)
	}
	// A failed canary keeps its small share through its rollback; the deploy puts it back as it
	// ends: host-a, on v1 again, must not keep the canary's share of new requests.
	if judgedAt < 0 || judgedAt == adminapi.DefaultWeight {
		t.Errorf("the canary %s had weight %d at the LB while judged, want the canary's (the test's premise)\nevents:\n%s", canary, judgedAt, &ev)
	}
	if w := weightAt(t, lb, canary); w != adminapi.DefaultWeight {
		t.Errorf("the canary %s has weight %d at the LB after the failed verdict and its rollback, want %d (adminapi.DefaultWeight)\nevents:\n%s",
			canary, w, adminapi.DefaultWeight, &ev)
	}
	for _, want := range []string{"analysis of host-a failed", "above rollout.analysis.max_error_rate 5.0%", "5xx", "rolled back (host-a runs v1)"} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("error does not say %q: %v", want, err)
		}
	}
	if v := verdict.Verdict; v.Pass || v.New.Requests < 10 || v.New.ErrorRate() < 0.99 || v.Baseline.Requests == 0 || v.Baseline.Errors != 0 {
		t.Errorf("verdict %+v: want every new request failed and a clean baseline", v)
	}
	for host, v := range f.versions() {
		if v != "v1" {
			t.Errorf("%s runs %q after the failed verdict, want v1", host, v)
		}
	}
	if a := rep.Hosts[0]; a.Outcome != report.OutcomeRolledBack || a.Running != "v1" || !strings.Contains(a.Verdict, "error rate") {
		t.Errorf("host-a: %s, runs %q, verdict %q; want rolled back to v1 with the verdict", a.Outcome, a.Running, a.Verdict)
	}
	for _, h := range rep.Hosts[1:] {
		if h.Outcome != report.OutcomeNotReached || h.Running != "v1" {
			t.Errorf("%s: %s, runs %q; want not reached, v1", h.Host, h.Outcome, h.Running)
		}
	}
	if res.Counts["500"]+res.Counts["other_5xx"] == 0 && res.Failures == 0 {
		t.Errorf("load saw no 500 at all (%v): the bad version never served, so the test proves nothing", res.Counts)
	}
	// The bound: the canary's share of the load for as long as the bad version serves it (its
	// bake, the canary's window, its drain when rolled back), docs/deploy.md, "What a bad version costs".
	cfg := f.load(v2)
	serves := cfg.Rollout.Canary.Duration + max(cfg.Rollout.Bake, time.Duration(cfg.Balancer.HealthyThreshold)*cfg.Balancer.Interval) + cfg.Drain.Window
	bound := float64(cfg.Rollout.Canary.Weight) / 100 * analysisRate * serves.Seconds()
	if float64(res.Failures) > 1.5*bound+5 {
		t.Errorf("%d requests failed, more than the canary's bound %.0f (weight %d%% × %d req/s × %s) with margin",
			res.Failures, bound, cfg.Rollout.Canary.Weight, analysisRate, serves)
	}
	t.Logf("load during the deploy: %d sent, %d failed (%.1f%%; bound %.0f) (%v)", res.Sent, res.Failures,
		100*float64(res.Failures)/float64(res.Sent), bound, res.Counts)
}

// A deploy cut short while its canary is judged leaves the canary on the new version, never
// judged, and the rerun finds it "unchanged". When the rerun's next batch fails its verdict, the
// canary goes back with it: the verdict is on the version, not on the run, and a host an
// earlier run of it moved keeps the spec to go back to.
func TestARerunRollsBackTheCanaryACutShortRunLeftUnjudged(t *testing.T) {
	t.Parallel()
	f, _, v2 := analysisFleet(t, analysisWindow, "--fail-every", "1")
	m := startMeasureAt(t, f.listen, analysisRate, "/", "/orders", "/health")
	time.Sleep(300 * time.Millisecond)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	var cut eventLog
	opts := Options{Events: func(e Event) {
		cut.add(e)
		if e.Host == "host-a" && e.Step == stepDone {
			cancel() // Ctrl-C once the canary is in, while it is judged
		}
	}}
	if _, err := f.deployer(f.load(v2), nil, opts).Deploy(ctx, "v2"); err == nil {
		t.Fatalf("the deploy cut short during its canary's window succeeded\nevents:\n%s", &cut)
	}
	if v := f.versions()["host-a"]; v != "v2" {
		t.Fatalf("host-a runs %q after the cut-short deploy; want v2 (the canary, not judged), else this test proves nothing\nevents:\n%s", v, &cut)
	}
	// What a deployer over ssh learns from the host's own look, to send it back the same way.
	if l, err := Look(context.Background(), f.load(v2), "host-a", "v2", Options{Self: bin}); err != nil || !l.InProgress || l.Previous != "v1" {
		t.Errorf("host look of host-a: in progress %v, previous %q, %v; want in progress, previous v1", l.InProgress, l.Previous, err)
	}
	var ev eventLog
	rep, err := f.deployer(f.load(v2), &ev, Options{}).Deploy(context.Background(), "v2")
	m.stop(t)
	var verdict *VerdictError
	if !errors.As(err, &verdict) || !strings.Contains(err.Error(), "host-a runs v1") {
		t.Fatalf("the rerun: %v; want host-b's failed verdict, naming host-a back on v1\nevents:\n%s", err, &ev)
	}
	for host, v := range f.versions() {
		if v != "v1" {
			t.Errorf("%s runs %q after the failed verdict; want v1", host, v)
		}
	}
	if a := rep.Hosts[0]; a.Outcome != report.OutcomeRolledBack || a.From != "v1" || a.Running != "v1" {
		t.Errorf("host-a: %s from %q, runs %q; want rolled back from the version before the first run, v1", a.Outcome, a.From, a.Running)
	}
}

// A version failing one request in four is stopped the same way: 25 % is above max_error_rate.
func TestVersionFailingOneRequestInFourIsStopped(t *testing.T) {
	t.Parallel()
	f, _, v2 := analysisFleet(t, analysisWindow, "--fail-every", "4")
	m := startMeasureAt(t, f.listen, analysisRate, "/", "/orders", "/health")
	time.Sleep(300 * time.Millisecond)
	var ev eventLog
	_, err := f.deployer(f.load(v2), &ev, Options{}).Deploy(context.Background(), "v2")
	m.stop(t)
	var verdict *VerdictError
	if !errors.As(err, &verdict) {
		t.Fatalf("deploy of a version failing 1 in 4: %v; want a failed verdict\nevents:\n%s", err, &ev)
	}
	if r := verdict.Verdict.New.ErrorRate(); r < 0.1 || r > 0.4 {
		t.Errorf("new version's error rate %.2f, want about 0.25: %s", r, verdict.Verdict.Reason)
	}
	for host, v := range f.versions() {
		if v != "v1" {
			t.Errorf("%s runs %q, want v1", host, v)
		}
	}
}

// A good version under the same analysis passes with zero failed requests, each batch's verdict
// an event with its numbers, and each host's report carrying it.
func TestGoodVersionPassesTheAnalysisWithNoFailedRequest(t *testing.T) {
	t.Parallel()
	f, _, v2 := analysisFleet(t, analysisWindow)
	m := startMeasureAt(t, f.listen, analysisRate, "/", "/orders", "/health")
	time.Sleep(300 * time.Millisecond)
	var ev eventLog
	rep, err := f.deployer(f.load(v2), &ev, Options{}).Deploy(context.Background(), "v2")
	res := m.stop(t)
	if err != nil {
		t.Fatalf("deploy v2: %v\nevents:\n%s", err, &ev)
	}
	requireNoFailure(t, res)
	verdicts := 0
	for _, e := range ev.events {
		if e.Step == stepVerdict && strings.Contains(e.Message, "holds") {
			verdicts++
		}
	}
	if verdicts != 3 {
		t.Errorf("%d passing verdicts, want one per batch (3)\nevents:\n%s", verdicts, &ev)
	}
	// The deploy's floor grows by exactly the windows it was judged for: the canary's and the
	// two other batches' analysis windows.
	cfg := f.load(v2)
	if want := cfg.Rollout.Canary.Duration + 2*cfg.Rollout.Analysis.Window; rep.Judged != want {
		t.Errorf("judged for %s, want canary %s + 2 × window %s", rep.Judged, cfg.Rollout.Canary.Duration, cfg.Rollout.Analysis.Window)
	}
	var hosts time.Duration
	for _, h := range rep.Hosts {
		hosts += h.Floor
	}
	if rep.Floor != hosts+rep.Judged || rep.Duration < rep.Floor {
		t.Errorf("deploy floor %s, want the hosts' %s + judged %s, at most the duration %s", rep.Floor, hosts, rep.Judged, rep.Duration)
	}
	var text strings.Builder
	if err := rep.WriteText(&text); err != nil || !strings.Contains(text.String(), "judging by what users got (canary and analysis windows)") {
		t.Errorf("the report's text does not show the floor and its judged part (%v):\n%s", err, text.String())
	}
	t.Logf("deploy took %s against its floor %s (%s of it judged): %.2f×", rep.Duration, rep.Floor, rep.Judged, float64(rep.Duration)/float64(rep.Floor))
	for _, h := range rep.Hosts {
		if h.Outcome != report.OutcomeDeployed || !strings.Contains(h.Verdict, "requests") {
			t.Errorf("%s: %s, verdict %q", h.Host, h.Outcome, h.Verdict)
		}
	}
}

// A version merely 20 % slower at p99 (every answer 120ms after v1's 100ms) is stopped when
// rollout.analysis.max_p99_increase says so (5 %) and passes when it does not (the default,
// 100 %). No canary: each batch is one host at its full share, so the window holds the 100
// requests a side the p99 rule needs (about 130 at 100 req/s). A p99 of 130 answers is their
// second slowest, which a busy machine's scheduler can delay by as much as the version adds:
// the two cases run beside each other (two 100 req/s loads of sleeping handlers), not beside
// the parallel tests.
// quietP99 is the p99 of v1's 100ms answers above which the machine's own tail hides the 20ms
// v2 adds, and the p99 test skips, saying so.
const quietP99 = 115 * time.Millisecond

func TestVersion20PercentSlowerAtP99IsStoppedOnlyWhenTheRuleSaysSo(t *testing.T) {
	for _, tc := range []struct {
		name    string
		allowed float64
		stopped bool
		hosts   int // the stopped case stops at its first host; the passing one judges each
	}{
		{"stopped at max_p99_increase 0.05", 0.05, true, 3},
		{"passes at max_p99_increase 1", 1, false, 2},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			f := newFleet(t, tc.hosts)
			values := defaultValues()
			values.AppFlags = []string{"--delay", "100ms"}
			// 4 missed checks in a row, not 3, take a target out: in CI on a slow machine the
			// one host in rotation while the other was replaced missed 3 (a 600ms stall beside
			// the other packages), and the LB had no target for a moment (4 503s). The rule
			// judged here is the p99's; I1 still holds (1s > 200ms × 4).
			values.Unhealthy = 4
			cfg := f.load(f.config("v1.yaml", values))
			judged(cfg, 4*time.Second, 5*time.Second)
			cfg.Rollout.Canary.Hosts = 0
			cfg.Rollout.Analysis.MinRequests = 10
			cfg.Rollout.Analysis.MaxP99Increase = tc.allowed
			good := f.write("v1.yaml", cfg)
			cfg.Services[0].Command = slices.Clone(cfg.Services[0].Command)
			cfg.Services[0].Command[len(cfg.Services[0].Command)-1] = "120ms"
			slow := f.write("v2.yaml", cfg)
			f.startLB(good)
			ctx := context.Background()
			if _, err := f.deployer(f.load(good), nil, Options{}).Deploy(ctx, "v1"); err != nil {
				t.Fatalf("deploy v1: %v", err)
			}
			m := startMeasureAt(t, f.listen, analysisRate, "/", "/orders", "/health")
			time.Sleep(500 * time.Millisecond)
			var ev eventLog
			rep, err := f.deployer(f.load(slow), &ev, Options{}).Deploy(ctx, "v2")
			res := m.stop(t)
			// The premise before the rest: a 504 here is an answer of a 100ms handler that took
			// longer than the LB's header_timeout (1s), a machine whose tail is ten times what
			// the two versions differ by. Under two CPU hogs both cases saw some; the rule cannot
			// be judged on such a machine, and the drain is judged by the tests built for it.
			if res.Failures > 0 && res.Failures == res.Counts["504"] {
				t.Skipf("the machine's tail swamps the 20ms v2 adds: %d of %d answers of a 100ms handler took over the LB's header_timeout %s (%v)",
					res.Failures, res.Sent, cfg.Balancer.HeaderTimeout, res.Counts)
			}
			// The same premise, from the deploy's own measure: an old version whose p99 for its
			// 100ms was over quietP99 ran on a machine that stalled longer than its checks allow
			// (CI, twice: the one host in rotation while the other was replaced missed its checks
			// of 150ms, and the LB, failing open, answered some requests 503).
			if tail, ok := oldVersionP99(rep, err); ok && tail > quietP99 && res.Failures > 0 {
				t.Skipf("the machine's tail swamps the 20ms v2 adds: the old version's p99 was %s for its 100ms (over %s), and %d of %d requests failed (%v)",
					tail, quietP99, res.Failures, res.Sent, res.Counts)
			}
			requireNoFailure(t, res)
			var verdict *VerdictError
			if !tc.stopped {
				// The same premise: a machine whose own tail is over 115ms for v1's 100ms can put
				// v2's p99 of 130 answers 100 % above v1's on noise alone.
				if errors.As(err, &verdict) && verdict.Verdict.Baseline.P99 > quietP99 {
					t.Skipf("the machine's tail swamps the 20ms v2 adds: the old version's p99 was %s for its 100ms (over %s); %v",
						verdict.Verdict.Baseline.P99, quietP99, err)
				}
				if err != nil {
					t.Fatalf("deploy of a 20%% slower version at max_p99_increase %g: %v; want it to pass\nevents:\n%s", tc.allowed, err, &ev)
				}
				if a := rep.Hosts[0]; !strings.Contains(a.Verdict, "p99") {
					t.Errorf("host-a's verdict %q shows no p99", a.Verdict)
				}
				t.Logf("host-a: %s", rep.Hosts[0].Verdict)
				return
			}
			if err == nil && len(rep.Hosts) > 0 {
				// The premise (v2's p99 is 20 % above v1's) holds only while the machine's own
				// tail is smaller than the 20ms v2 adds: under stress-ng the old version's p99
				// alone was seen at 245ms for its 100ms, both sides equal within the noise.
				if base, ok := baselineP99(rep.Hosts[0].Verdict); ok && base > quietP99 {
					t.Skipf("the machine's tail swamps the 20ms v2 adds: the old version's p99 was %s for its 100ms (over %s), "+
						"so the two versions were equal at p99 within the noise; host-a: %s", base, quietP99, rep.Hosts[0].Verdict)
				}
			}
			// The same premise, when another rule stopped it: on a machine whose own tail is over
			// quietP99 for v1's 100ms, v2 stalls too (CI: the old version's p99 568ms; v2 missed
			// 4 checks of 150ms, and 40 attempts on it went unanswered, retried elsewhere, so the
			// error rate stopped it before its p99 could).
			if errors.As(err, &verdict) && verdict.Verdict.Baseline.P99 > quietP99 && !strings.Contains(err.Error(), "max_p99_increase") {
				t.Skipf("the machine's tail swamps the 20ms v2 adds: the old version's p99 was %s for its 100ms (over %s); %v",
					verdict.Verdict.Baseline.P99, quietP99, err)
			}
			if !errors.As(err, &verdict) || !strings.Contains(err.Error(), "more than rollout.analysis.max_p99_increase 5%") {
				t.Fatalf("deploy of a 20%% slower version at max_p99_increase 0.05: %v; want a failed p99 verdict\nevents:\n%s", err, &ev)
			}
			v := verdict.Verdict
			t.Logf("verdict: %s", v.Reason)
			if v.New.Requests < p99Requests || v.Baseline.Requests < p99Requests || v.New.P99 <= v.Baseline.P99 {
				t.Errorf("verdict %s: want at least %d requests a side and the new p99 above the old", v.Reason, p99Requests)
			}
			for host, ver := range f.versions() {
				if ver != "v1" {
					t.Errorf("%s runs %q after the failed verdict, want v1", host, ver)
				}
			}
		})
	}
}

func TestJudgeRules(t *testing.T) {
	a := config.Defaults().Rollout.Analysis
	a.MinRequests = 20
	ev := func(req, errs uint64, p99 time.Duration) Evidence {
		return Evidence{Requests: req, Errors: errs, ServerErrors: errs, P99: p99}
	}
	for _, tc := range []struct {
		name        string
		fresh, base Evidence
		onNoTraffic string
		pass, none  bool
		says        string
	}{
		{"clean", ev(100, 0, 10*time.Millisecond), ev(200, 0, 10*time.Millisecond), "pass", true, false, "holds"},
		{"every request fails", ev(100, 100, time.Millisecond), ev(200, 0, time.Millisecond), "pass", false, false, "above rollout.analysis.max_error_rate 5.0%"},
		{"at the absolute limit", ev(100, 5, time.Millisecond), ev(100, 4, time.Millisecond), "pass", true, false, "holds"},
		{"just above it", ev(100, 6, time.Millisecond), ev(100, 5, time.Millisecond), "pass", false, false, "max_error_rate"},
		{"an increase over a noisy baseline", ev(100, 4, time.Millisecond), ev(100, 1, time.Millisecond), "pass", false, false, "max_error_rate_increase"},
		{"the same noise as the baseline", ev(100, 4, time.Millisecond), ev(100, 3, time.Millisecond), "pass", true, false, "holds"},
		{"twice as slow is still allowed", ev(100, 0, 20*time.Millisecond), ev(100, 0, 10*time.Millisecond), "pass", true, false, "holds"},
		{"more than twice as slow", ev(100, 0, 21*time.Millisecond), ev(100, 0, 10*time.Millisecond), "pass", false, false, "max_p99_increase"},
		{"three times as slow, but by less than min_p99_increase 5ms", ev(100, 0, 1500*time.Microsecond), ev(100, 0, 500*time.Microsecond), "pass", true, false, "holds"},
		{"three times as slow, and by more than min_p99_increase", ev(100, 0, 9*time.Millisecond), ev(100, 0, 3*time.Millisecond), "pass", false, false, "more than rollout.analysis.min_p99_increase 5ms"},
		{"slower, but too few requests for a p99", ev(99, 0, 50*time.Millisecond), ev(100, 0, 10*time.Millisecond), "pass", true, false, "holds"},
		{"too little traffic, pass", ev(19, 1, 0), ev(100, 0, 0), "pass", true, true, "not enough traffic"},
		{"too little traffic, but every request failed", ev(19, 19, 0), ev(100, 0, 0), "pass", false, false, "more errors than rollout.analysis.max_error_rate 5.0% allows even of 20 (1)"},
		{"too little traffic, and already more errors than min_requests allows", ev(3, 2, 0), ev(100, 0, 0), "pass", false, false, "2 errors in 3 requests"},
		{"too little traffic, fail", ev(19, 0, 0), ev(100, 0, 0), "fail", false, true, "not enough traffic"},
		{"no baseline: the absolute rule alone", ev(100, 3, 50*time.Millisecond), Evidence{}, "pass", true, false, "no baseline"},
		{"a baseline too small to compare", ev(100, 4, 50*time.Millisecond), ev(5, 0, time.Millisecond), "pass", true, false, "holds"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			a := a
			a.OnNoTraffic = tc.onNoTraffic
			v := judge(a, 10*time.Second, tc.fresh, tc.base)
			if v.Pass != tc.pass || v.NoTraffic != tc.none || !strings.Contains(v.Reason, tc.says) {
				t.Errorf("judge = pass %v, no traffic %v, %q; want pass %v, no traffic %v, saying %q", v.Pass, v.NoTraffic, v.Reason, tc.pass, tc.none, tc.says)
			}
		})
	}
}

func TestPoolAddsEveryTargetAndInstanceOfTheWindow(t *testing.T) {
	bounds := []float64{0.001, 0.01, 0.1}
	st := func(addr string, answered, errs uint64, counts ...uint64) adminapi.BackendStatus {
		return adminapi.BackendStatus{Address: addr, Outcomes: adminapi.Outcomes{Answered: answered, ServerErrors: errs,
			Latency: adminapi.Histogram{Bounds: bounds, Counts: counts}}}
	}
	before := balancer.Outcomes{
		"a": {st("a", 10, 1, 10, 0, 0, 0), st("a", 5, 0, 5, 0, 0, 0)},
		"b": {st("b", 7, 0, 7, 0, 0, 0)},
	}
	after := balancer.Outcomes{
		"a": {st("a", 30, 11, 10, 20, 0, 0), st("a", 25, 0, 5, 0, 20, 0)},
		"b": {st("b", 9, 0, 9, 0, 0, 0)},
		"c": {st("c", 100, 100, 100, 0, 0, 0)}, // not asked for
	}
	e, err := pool(before, after, []string{"a", "b"})
	if err != nil {
		t.Fatal(err)
	}
	if e.Requests != 42 || e.Errors != 10 || e.ServerErrors != 10 {
		t.Errorf("pooled %d requests, %d errors; want 20+20+2 = 42 and 10", e.Requests, e.Errors)
	}
	if e.P99 < 10*time.Millisecond || e.P99 > 100*time.Millisecond {
		t.Errorf("p99 %s: want it in the slowest bucket holding requests (10–100ms)", e.P99)
	}
}

// TestPoolCountsACounterThatRestartedInTheWindow: a balancer that restarts (an in-place upgrade,
// one instance of a tier) during the window starts its counters again. What they hold after was
// all got inside the window: a version that failed every one of those requests must not be judged
// by "no traffic" (with on_no_traffic pass, a bad version went on).
func TestPoolCountsACounterThatRestartedInTheWindow(t *testing.T) {
	bounds := []float64{0.001, 0.01, 0.1}
	st := func(addr string, answered, errs uint64) adminapi.BackendStatus {
		return adminapi.BackendStatus{Address: addr, Outcomes: adminapi.Outcomes{Answered: answered, ServerErrors: errs,
			Latency: adminapi.Histogram{Bounds: bounds, Counts: []uint64{answered, 0, 0, 0}}}}
	}
	before := balancer.Outcomes{"new": {st("new", 1000, 0), st("new", 400, 0)}, "old": {st("old", 5000, 0)}}
	after := balancer.Outcomes{"new": {st("new", 200, 200), st("new", 450, 50)}, "old": {st("old", 5900, 0)}}
	fresh, err := pool(before, after, []string{"new"})
	if err != nil {
		t.Fatal(err)
	}
	if fresh.Requests != 250 || fresh.Errors != 250 || fresh.Restarted != 1 {
		t.Fatalf("pooled %d requests, %d errors, %d restarted; want 200 since the restart + 50 = 250, all errors, 1 restarted",
			fresh.Requests, fresh.Errors, fresh.Restarted)
	}
	base, err := pool(before, after, []string{"old"})
	if err != nil {
		t.Fatal(err)
	}
	a := config.Defaults().Rollout.Analysis
	a.OnNoTraffic = config.OnNoTrafficPass
	v := judge(a, 30*time.Second, fresh, base)
	if v.Pass || v.NoTraffic || !strings.Contains(v.Reason, "counted from their restart") {
		t.Errorf("judge = pass %v, no traffic %v, %q; want a failed verdict that says the counters restarted", v.Pass, v.NoTraffic, v.Reason)
	}
}

// TestJudgeNoRequestIsNoEvidenceWhateverMinRequests: min_requests 0 means "judge whatever came",
// not "pass when nothing came": no request at all is no traffic, and on_no_traffic decides.
func TestJudgeNoRequestIsNoEvidenceWhateverMinRequests(t *testing.T) {
	a := config.Defaults().Rollout.Analysis
	a.MinRequests = 0
	a.OnNoTraffic = "fail"
	v := judge(a, 10*time.Second, Evidence{}, Evidence{Requests: 100})
	if v.Pass || !v.NoTraffic || !strings.Contains(v.Reason, "not enough traffic") {
		t.Errorf("judge of 0 requests with min_requests 0, on_no_traffic fail = pass %v, no traffic %v, %q; want a no-traffic fail", v.Pass, v.NoTraffic, v.Reason)
	}
	if v := judge(a, 10*time.Second, Evidence{Requests: 1}, Evidence{Requests: 100}); !v.Pass || v.NoTraffic {
		t.Errorf("judge of 1 clean request with min_requests 0 = pass %v, no traffic %v, %q; want it judged and passed", v.Pass, v.NoTraffic, v.Reason)
	}
}

// baselineP99 is the old version's p99 in a verdict's text ("baseline (…): …, p99 109.9ms").
// oldVersionP99 is the old version's p99 the deploy measured on its first host: from its
// failed verdict, or from the verdict its report holds.
func oldVersionP99(rep *report.Report, err error) (time.Duration, bool) {
	var verdict *VerdictError
	if errors.As(err, &verdict) {
		return verdict.Verdict.Baseline.P99, true
	}
	if rep != nil && len(rep.Hosts) > 0 {
		return baselineP99(rep.Hosts[0].Verdict)
	}
	return 0, false
}

func baselineP99(verdict string) (time.Duration, bool) {
	m := regexp.MustCompile(`baseline \(the old version's targets\):[^;]*p99 ([0-9.]+(?:µs|ms|s))`).FindStringSubmatch(verdict)
	if m == nil {
		return 0, false
	}
	d, err := time.ParseDuration(m[1])
	return d, err == nil
}

// TestJudgeAP99BeyondTheHistogramFailsBesideABaselineWithin: a new version whose p99 lies above
// the LB's last latency bound is only "at least that bound"; beside an old version measured
// within it, the p99 rule fails it rather than compare the bound (3.2s × 2 > 5s passed a version
// answering in 30s).
func TestJudgeAP99BeyondTheHistogramFailsBesideABaselineWithin(t *testing.T) {
	a := config.Defaults().Rollout.Analysis
	a.MinRequests = 20
	bounds := []float64{1, 2.5, 5}
	ev := func(counts ...uint64) Evidence {
		h := adminapi.Histogram{Bounds: bounds, Counts: counts}
		return Evidence{Requests: h.Count(), P99: h.Quantile(0.99), latency: h}
	}
	slowBase := ev(0, 0, 200, 0)   // every answer in (2.5s, 5s]
	beyond := ev(0, 0, 0, 200)     // every answer above 5s
	alsoBeyond := ev(0, 0, 0, 200) // the old version beyond too: nothing to tell them apart by
	if v := judge(a, 10*time.Second, beyond, slowBase); v.Pass || !strings.Contains(v.Reason, "longest the balancer's latency histogram measures") {
		t.Errorf("p99 beyond the last bound beside a baseline within it: pass %v, %q; want a failed p99 rule", v.Pass, v.Reason)
	}
	if v := judge(a, 10*time.Second, beyond, alsoBeyond); !v.Pass {
		t.Errorf("both beyond the last bound: %q; want it to hold (the rule cannot tell them apart)", v.Reason)
	}
}

// A version that fails every real request while it warms up, for less than its bake, is judged
// by those failures: a new target's requests count from its coming into rotation, not only over
// the window after the bake. Judged by the window alone, it passed with 0 errors, and the fleet
// rolled to it.
func TestAVersionFailingWhileItWarmsUpIsJudgedByItsBake(t *testing.T) {
	t.Parallel()
	f, _, v2 := analysisFleet(t, analysisWindow, "--fail-for", "2500ms")
	cfg := f.load(v2)
	cfg.Rollout.Bake = 3 * time.Second // the failures end within it
	v2 = f.write("v2-baked.yaml", cfg)
	m := startMeasureAt(t, f.listen, analysisRate, "/", "/orders", "/health")
	time.Sleep(300 * time.Millisecond)
	var ev eventLog
	rep, err := f.deployer(f.load(v2), &ev, Options{}).Deploy(context.Background(), "v2")
	res := m.stop(t)
	if res.Counts["500"]+res.Counts["other_5xx"] == 0 {
		t.Fatalf("load saw no 500 (%v): the warming version never served, so the test proves nothing\nevents:\n%s", res.Counts, &ev)
	}
	var verdict *VerdictError
	if !errors.As(err, &verdict) || !strings.Contains(err.Error(), "analysis of host-a failed") {
		t.Fatalf("deploy of a version failing for its first 2.5s, within its 3s bake: %v; want host-a's analysis failed\nevents:\n%s", err, &ev)
	}
	if v := verdict.Verdict; v.Pass || v.New.ServerErrors == 0 {
		t.Errorf("verdict %+v: want the warm-up's 5xx counted", v)
	}
	if a := rep.Hosts[0]; a.Outcome != report.OutcomeRolledBack || a.Running != "v1" {
		t.Errorf("host-a: %s, runs %q; want rolled back to v1", a.Outcome, a.Running)
	}
	for host, v := range f.versions() {
		if v != "v1" {
			t.Errorf("%s runs %q after the failed verdict, want v1", host, v)
		}
	}
}

// TestPoolCountsARestartWhoseCountersOvertookTheOnesBefore: the balancer restarted early in the
// window and its counters since already exceed the ones before it. Only their start says so:
// diffed as one run, 1000 requests and 300 errors since the restart would pool as 600 requests
// and 300 errors, half of them failed where 30 % were.
func TestPoolCountsARestartWhoseCountersOvertookTheOnesBefore(t *testing.T) {
	bounds := []float64{0.001, 0.01, 0.1}
	began := time.Date(2026, 12, 7, 1, 0, 0, 0, time.UTC)
	st := func(since time.Time, answered, errs uint64) adminapi.BackendStatus {
		return adminapi.BackendStatus{Address: "new", Outcomes: adminapi.Outcomes{Answered: answered, ServerErrors: errs,
			Latency: adminapi.Histogram{Bounds: bounds, Counts: []uint64{answered, 0, 0, 0}}, CountingSince: since}}
	}
	before := balancer.Outcomes{"new": {st(began, 400, 0)}}
	after := balancer.Outcomes{"new": {st(began.Add(40*time.Second), 1000, 300)}}
	fresh, err := pool(before, after, []string{"new"})
	if err != nil {
		t.Fatal(err)
	}
	if fresh.Requests != 1000 || fresh.Errors != 300 || fresh.Restarted != 1 {
		t.Fatalf("pooled %d requests, %d errors, %d restarted; want the 1000 and 300 since the restart, 1 restarted",
			fresh.Requests, fresh.Errors, fresh.Restarted)
	}
}

// TestPoolPairsEachBalancerInstancesOwnEntries: the first of two LBs gained the new target during
// the window (it had it not at the snapshot before). Its 100 answers, all 5xx, count whole; the
// second's count from its own snapshot. Paired by position in the old way, the second's before
// was the first's after, and the 5xx went uncounted.
func TestPoolPairsEachBalancerInstancesOwnEntries(t *testing.T) {
	bounds := []float64{0.001, 0.01, 0.1}
	began := time.Date(2026, 12, 7, 1, 0, 0, 0, time.UTC)
	st := func(since time.Time, answered, errs uint64) adminapi.BackendStatus {
		return adminapi.BackendStatus{Address: "new", Outcomes: adminapi.Outcomes{Answered: answered, ServerErrors: errs,
			Latency: adminapi.Histogram{Bounds: bounds, Counts: []uint64{answered, 0, 0, 0}}, CountingSince: since}}
	}
	before := balancer.Outcomes{"new": {{}, st(began, 400, 0)}}
	after := balancer.Outcomes{"new": {st(began.Add(time.Minute), 100, 100), st(began, 500, 0)}}
	fresh, err := pool(before, after, []string{"new"})
	if err != nil {
		t.Fatal(err)
	}
	if fresh.Requests != 200 || fresh.Errors != 100 || fresh.Restarted != 0 {
		t.Fatalf("pooled %d requests, %d errors, %d restarted; want 100 + 100 = 200 requests, 100 errors, none restarted",
			fresh.Requests, fresh.Errors, fresh.Restarted)
	}
	// gone from the first by the end: what it got there is unknown, the second's still counts
	fresh, err = pool(after, balancer.Outcomes{"new": {{}, st(began, 600, 10)}}, []string{"new"})
	if err != nil || fresh.Requests != 100 || fresh.Errors != 10 {
		t.Fatalf("pooled %+v, %v; want the second instance's 100 requests and 10 errors", fresh, err)
	}
}

// The verdict's numbers add up: errors are the 5xx plus the attempts with no answer, and the
// balancer's own answers are some of the latter, said as such (not a third kind beside them).
func TestEvidenceSaysTheBalancersOwnAnswersAreAmongTheUnanswered(t *testing.T) {
	e := Evidence{Requests: 100, Errors: 12, ServerErrors: 4, Failures: 8, LBAnswers: 3}
	if s := e.String(); !strings.Contains(s, "12 errors (12.0%: 4 5xx, 8 with no answer, 3 of them answered by the balancer itself)") {
		t.Errorf("evidence %q: want 4 5xx and 8 with no answer, 3 of them answered by the balancer", s)
	}
	if s := (Evidence{Requests: 10, Errors: 1, ServerErrors: 1}).String(); strings.Contains(s, "balancer") {
		t.Errorf("evidence %q: with no unanswered attempt, nothing to say of the balancer's own answers", s)
	}
}
