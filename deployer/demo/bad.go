package demo

import (
	"context"
	"errors"
	"fmt"
	"io"
	"slices"
	"strings"
	"sync"
	"text/tabwriter"
	"time"

	"github.com/zero502/zero502/deployer"
	"github.com/zero502/zero502/deployer/measure"
	"github.com/zero502/zero502/infra/config"
)

// badVersionFlaw is what makes the bad version bad: its app answers 500 to every request but
// /health, which stays 200, so every health check passes and only what users get shows it.
const badVersionFlaw = "zero502 app --fail-every 1: 500 to every request, /health 200"

// badArgs are appended to the balanced service's command for the bad version.
var badArgs = []string{"--fail-every", "1"}

// The margin the bad-version run allows over its bound: the canary's weight only applies once
// the LB has it, the bad instance keeps serving while it drains on rollback, and the load
// comes in whole requests.
const (
	boundMarginFactor   = 1.5
	boundMarginRequests = 5
)

// badOptions configure one bad-version run: the embedded default fleet (process runtime,
// zero502 app) and load, with v2 a bad version.
type badOptions struct {
	// Self is the zero502 binary that runs the LB and the apps (os.Executable()).
	Self string
	// Rate is the load in requests per second; default 400.
	Rate int
	// Before and After are how long the load runs before the v2 rollout starts and after it
	// stopped; defaults 1s and 1.5s.
	Before, After time.Duration
	// Progress receives live progress lines; nil: none.
	Progress io.Writer
	// Keep leaves the temp dir (config, host state dirs, logs) in place and names it.
	Keep bool
}

// badResult is one bad-version run: what the deploy said about the bad version, what users
// got, and whether the canary stopped it within its bound.
type badResult struct {
	// Run is the demo run itself: the load, the deploy's report, each host's marks, versions.
	Run *Result `json:"run"`
	// CanaryHosts are the hosts the canary is made of (the first rollout.canary.hosts).
	CanaryHosts []string `json:"canary_hosts"`
	// Canary is the deploy's canary event: the canary's weight at the LB and its share.
	Canary string `json:"canary"`
	// DeployError is how the deploy of the bad version ended ("" when it went through).
	DeployError string `json:"deploy_error,omitempty"`
	// VerdictHosts are the hosts of the failed verdict (empty when no verdict failed) and
	// Verdict its reason with the numbers.
	VerdictHosts []string `json:"verdict_hosts,omitempty"`
	Verdict      string   `json:"verdict,omitempty"`
	// DeployRequests and DeployFailures are the requests sent during the deploy and how many of
	// them failed; Failures are every failed request of the run.
	DeployRequests int `json:"deploy_requests"`
	DeployFailures int `json:"deploy_failures"`
	Failures       int `json:"failures"`
	// Bound is what a bad version may cost, from the config.
	Bound Bound `json:"bound"`
	// Stopped is the exit rule: the bad version was stopped at the canary by a verdict, every
	// host runs From again, and the failures are within the bound's margin; Why says why not.
	Stopped bool   `json:"stopped"`
	Why     string `json:"why,omitempty"`
}

// Bound is what a bad version may cost users when the canary stops it: the canary's share of
// the load for as long as the bad version serves it, its bake, the canary's window and its
// drain on rollback.
//
//	failed ≤ canary.weight % × (bake + canary.duration + drain.window) × rate
//	bake = max(rollout.bake, balancer.healthy_threshold × balancer.interval)
type Bound struct {
	Weight int           `json:"weight_percent"`
	Bake   time.Duration `json:"bake_ns"`
	Canary time.Duration `json:"canary_ns"`
	Drain  time.Duration `json:"drain_ns"`
	Rate   int           `json:"rate"`
}

// boundOf is the bound of cfg under a load of rate requests per second.
func boundOf(cfg *config.Config, rate int) Bound {
	return Bound{
		Weight: cfg.Rollout.Canary.Weight,
		Bake:   max(cfg.Rollout.Bake, cfg.Balancer.Recovery()),
		Canary: cfg.Rollout.Canary.Duration,
		Drain:  cfg.Drain.Window,
		Rate:   rate,
	}
}

// Serves is how long the bad version serves its share: bake + canary.duration + drain.window.
func (b Bound) Serves() time.Duration { return b.Bake + b.Canary + b.Drain }

// Requests is the bound as a count of failed requests.
func (b Bound) Requests() float64 {
	return float64(b.Weight) / 100 * b.Serves().Seconds() * float64(b.Rate)
}

// Allowed is the bound with its margin: boundMarginFactor × Requests + boundMarginRequests.
func (b Bound) Allowed() float64 { return boundMarginFactor*b.Requests() + boundMarginRequests }

// Formula is the bound with its numbers: "10% × (bake 500ms + canary 2s + drain 1.5s) × 400 req/s = 160".
func (b Bound) Formula() string {
	return fmt.Sprintf("%d%% × (bake %s + canary %s + drain %s) × %d req/s = %.0f requests",
		b.Weight, b.Bake, b.Canary, b.Drain, b.Rate, b.Requests())
}

// Share is n as a share of the deploy's requests, in percent (0 with none).
func (r *badResult) Share(n float64) float64 {
	if r.DeployRequests == 0 {
		return 0
	}
	return 100 * n / float64(r.DeployRequests)
}

// badDeploy collects what the bad version's deploy said, while it runs and once it ended.
type badDeploy struct {
	mu sync.Mutex
	// cfg is the bad version's config (set before its deploy), canary the deploy's canary
	// event, err how the deploy ended.
	cfg    *config.Config
	canary string
	err    error
}

// watch wraps the deploy's events: it keeps the canary's first message (its weight and share).
func (b *badDeploy) watch(next func(deployer.Event)) func(deployer.Event) {
	return func(e deployer.Event) {
		if e.Step == deployer.StepCanary && strings.HasPrefix(e.Message, "canary ") {
			b.mu.Lock()
			if b.canary == "" {
				b.canary = e.Message
			}
			b.mu.Unlock()
		}
		next(e)
	}
}

// badConfig is the fleet's config (configPath) with the bad version's flaw appended to the
// balanced service's command: what v2 is deployed with. Rolling back puts each host's previous
// spec back, so v1 is the good one again.
func badConfig(configPath string) (*config.Config, error) {
	cfg, err := config.Load(configPath)
	if err != nil {
		return nil, fmt.Errorf("demo: the bad version's config: %w", err)
	}
	bsvc, ok := cfg.BalancedService()
	if !ok {
		return nil, errors.New("demo: the bad version's config has no balanced service")
	}
	for i := range cfg.Services {
		if s := &cfg.Services[i]; s.Name == bsvc.Name {
			s.Command = append(slices.Clone(s.Command), badArgs...)
		}
	}
	return cfg, nil
}

// runBadVersion runs the demo with a bad v2 (badVersionFlaw) on the embedded default fleet and
// load: the canary takes its share, the verdict fails it, the fleet is rolled back. The result
// says what the deploy said, what users got and whether the bad version was stopped within the
// bound (Stopped). The error is non-nil only when the demo could not run; a deploy that did not
// fail, or failed otherwise, is in the result.
func runBadVersion(ctx context.Context, opts badOptions) (*badResult, error) {
	if opts.Rate == 0 {
		opts.Rate = 400
	}
	bad := &badDeploy{}
	run, err := Run(ctx, Options{Self: opts.Self, Rate: opts.Rate, Before: opts.Before, After: opts.After,
		Progress: opts.Progress, Keep: opts.Keep, bad: bad})
	if run == nil {
		return nil, err
	}
	bad.mu.Lock()
	cfg, canary, deployErr := bad.cfg, bad.canary, bad.err
	bad.mu.Unlock()
	res := &badResult{Run: run, Canary: canary}
	if cfg != nil {
		res.Bound = boundOf(cfg, opts.Rate)
		for _, h := range cfg.Hosts[:min(cfg.Rollout.Canary.Hosts, len(cfg.Hosts))] {
			res.CanaryHosts = append(res.CanaryHosts, h.Name)
		}
	}
	if deployErr != nil {
		res.DeployError = deployErr.Error()
		if ve, ok := errors.AsType[*deployer.VerdictError](deployErr); ok {
			res.VerdictHosts, res.Verdict = ve.Hosts, ve.Verdict.Reason
		}
	}
	if load := run.Load; load != nil {
		res.Failures = load.Failures
	}
	for c, n := range duringDeploy(run) {
		res.DeployRequests += n
		if c.Failure() {
			res.DeployFailures += n
		}
	}
	res.Stopped, res.Why = res.judge()
	return res, err
}

// judge is the exit rule of a bad-version run: the deploy failed by a verdict at the canary
// (not another error), every host runs From again (read back), and the failed requests are
// within the bound's margin. why says what failed, "" when it passed.
func (r *badResult) judge() (stopped bool, why string) {
	switch {
	case r.Run == nil:
		return false, "the demo did not run"
	case r.Run.Error != "":
		return false, "the demo did not run through: " + r.Run.Error
	case r.DeployError == "":
		return false, fmt.Sprintf("the deploy of the bad %s went through: no verdict stopped it", To)
	case r.Verdict == "":
		return false, "the deploy failed, but not by a verdict: " + r.DeployError
	case !slices.Equal(r.VerdictHosts, r.CanaryHosts):
		return false, fmt.Sprintf("the verdict failed %s, not the canary %s: the bad version got past the canary",
			strings.Join(r.VerdictHosts, ", "), strings.Join(r.CanaryHosts, ", "))
	case !r.Run.OnTo(From):
		return false, fmt.Sprintf("not every host runs %s after the rollback: %s", From, versionList(r.Run.Versions, "nothing"))
	case float64(r.Failures) > r.Bound.Allowed():
		return false, fmt.Sprintf("%d requests failed, more than the bound's %.0f with its margin (%s; allowed %.1f× + %d = %.0f)",
			r.Failures, r.Bound.Allowed(), r.Bound.Formula(), boundMarginFactor, boundMarginRequests, r.Bound.Allowed())
	}
	return true, ""
}

// WriteBadSummary prints a bad-version run for people: what users got (the whole run and the
// deploy alone) first, then the story (the canary's share, the verdict with its numbers, which
// host runs what, the bound against what failed), each host's timeline, and the result.
func WriteBadSummary(w io.Writer, r *badResult) {
	rate := 0
	if r.Run.Load != nil {
		rate = r.Run.Load.Rate
	}
	fmt.Fprintf(w, "\nzero502 demo --bad-version: rolling %s → %s across %d hosts under %d req/s; %s is BAD (%s)\n\n",
		From, To, len(r.Run.Versions), rate, To, badVersionFlaw)
	writeBadClasses(w, r)
	fmt.Fprintln(w)
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	canary := strings.TrimPrefix(r.Canary, "canary ")
	if canary == "" {
		canary = "no canary step was seen"
	}
	fmt.Fprintf(tw, "canary\t%s\n", canary)
	switch {
	case r.Verdict != "":
		where := "after the canary"
		if slices.Equal(r.VerdictHosts, r.CanaryHosts) {
			where = "at the canary"
		}
		fmt.Fprintf(tw, "verdict\tFAILED %s (%s): %s\n", where, strings.Join(r.VerdictHosts, ", "), r.Verdict)
	case r.DeployError != "":
		fmt.Fprintf(tw, "verdict\tnone failed; the deploy failed otherwise: %s\n", r.DeployError)
	default:
		fmt.Fprintf(tw, "verdict\tnone failed: the bad %s went through\n", To)
	}
	fmt.Fprintf(tw, "after\t%s\n", afterLine(r))
	fmt.Fprintf(tw, "bound\t%s = %.1f%% of the %d requests during the deploy\n",
		r.Bound.Formula(), r.Share(r.Bound.Requests()), r.DeployRequests)
	fmt.Fprintf(tw, "\tbake = max(rollout.bake, healthy_threshold × interval); allowed with a margin of %.1f× + %d = %.0f "+
		"(the weight applies once the LB has it; the bad instance serves while it drains on rollback)\n",
		boundMarginFactor, boundMarginRequests, r.Bound.Allowed())
	within := "within the bound"
	switch {
	case float64(r.Failures) > r.Bound.Allowed():
		within = "OVER the bound and its margin"
	case float64(r.Failures) > r.Bound.Requests():
		within = "over the bound, within its margin"
	}
	fmt.Fprintf(tw, "measured\t%d failed = %.1f%% of the deploy's requests (%d of them during the deploy): %s\n",
		r.Failures, r.Share(float64(r.Failures)), r.DeployFailures, within)
	tw.Flush()
	fmt.Fprintln(w)
	touched := *r.Run // the hosts the deploy reached: the others have no timeline
	touched.Marks = slices.DeleteFunc(slices.Clone(r.Run.Marks), func(h HostMarks) bool { return len(h.Marks) == 0 })
	writeHosts(w, &touched)
	fmt.Fprintf(w, "took %s\n%s\n", r.Run.Took.Round(100*time.Millisecond), badVerdict(r))
}

// writeBadClasses is the request table of a bad-version run: the whole run and the deploy.
func writeBadClasses(w io.Writer, r *badResult) {
	whole, during, sent := map[measure.Class]int{}, duringDeploy(r.Run), 0
	if load := r.Run.Load; load != nil {
		whole, sent = load.Counts, load.Sent
	}
	fmt.Fprintf(w, "%-12s %10s %18s\n", "requests", "whole run", "during the deploy")
	for _, c := range measure.Classes {
		note := ""
		switch c {
		case measure.Health503:
			note = "  (the drain at work, not a failure)"
		case measure.C5xx:
			note = "  (the bad version's 500s)"
		}
		fmt.Fprintf(w, "%-12s %10d %18d%s\n", c, whole[c], during[c], note)
	}
	fmt.Fprintf(w, "%-12s %10d %18d\n", "FAILED", r.Failures, r.DeployFailures)
	fmt.Fprintf(w, "%-12s %10d %18d\n", "total", sent, r.DeployRequests)
}

// duringDeploy counts the load's requests by class sent during the deploy: the series' buckets
// (by send time) whose middle falls between the deploy's start and end.
func duringDeploy(r *Result) map[measure.Class]int {
	out := map[measure.Class]int{}
	if r.Load == nil {
		return out
	}
	for _, pt := range r.Load.Series {
		if mid := pt.At + r.Load.Bucket/2; mid >= r.DeployFrom && mid < r.DeployTo {
			for c, n := range pt.Counts {
				out[c] += n
			}
		}
	}
	return out
}

// afterLine is each host's outcome and the version it runs now, read back from its runtime.
func afterLine(r *badResult) string {
	var parts []string
	if rep := r.Run.Deploy; rep != nil {
		for _, h := range rep.Hosts {
			parts = append(parts, fmt.Sprintf("%s %s, runs %s", h.Host, h.Outcome, orNone(h.Running)))
		}
	}
	if len(parts) == 0 {
		parts = []string{versionList(r.Run.Versions, "nothing")}
	}
	s := strings.Join(parts, "; ")
	if r.Run.OnTo(From) {
		return s + fmt.Sprintf(" (every host on %s, read back)", From)
	}
	return s + fmt.Sprintf(" (NOT every host on %s)", From)
}

func orNone(v string) string {
	if v == "" {
		return "nothing"
	}
	return v
}

func badVerdict(r *badResult) string {
	if !r.Stopped {
		return "RESULT: the bad version was NOT stopped as it should be: " + r.Why
	}
	return fmt.Sprintf("RESULT: stopped at the canary: %d of %d requests failed (%.1f%% of the deploy's), within the bound of %.0f (allowed %.0f), every host back on %s",
		r.Failures, r.Run.Load.Sent, r.Share(float64(r.Failures)), r.Bound.Requests(), r.Bound.Allowed(), From)
}
