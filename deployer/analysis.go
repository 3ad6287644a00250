package deployer

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/zero502/zero502/deployer/balancer"
	"github.com/zero502/zero502/deployer/report"
	"github.com/zero502/zero502/infra/adminapi"
	"github.com/zero502/zero502/infra/config"
	"github.com/zero502/zero502/infra/spec"
)

// Evidence is what the requests sent to a set of targets got over one window, pooled.
type Evidence struct {
	Targets  []string
	Requests uint64
	Errors   uint64
	// ServerErrors are the 5xx answers among Errors; Failures the attempts with no answer.
	ServerErrors uint64
	Failures     uint64
	// LBAnswers are the 502/503/504 the balancer made itself because of these targets.
	LBAnswers uint64
	P99       time.Duration
	// Restarted counts the targets' counters (one per balancer instance) that went back to zero
	// during the window (the balancer restarted, or re-added the target): what they hold then is
	// counted, all of it got inside the window, so the evidence is a lower bound.
	Restarted int
	latency   adminapi.Histogram
}

// ErrorRate is Errors / Requests (0 with no request).
func (e Evidence) ErrorRate() float64 {
	if e.Requests == 0 {
		return 0
	}
	return float64(e.Errors) / float64(e.Requests)
}

// String is the evidence with its numbers, for a verdict's message.
func (e Evidence) String() string {
	restarted := ""
	if e.Restarted > 0 {
		restarted = fmt.Sprintf(" (at least: %d counter(s) restarted during the window, counted from their restart)", e.Restarted)
	}
	lb := ""
	if e.Failures > 0 { // the LB's own 502/503/504 are for attempts with no answer: among them, not beside
		lb = fmt.Sprintf(", %d of them answered by the balancer itself", e.LBAnswers)
	}
	return fmt.Sprintf("%d requests, %d errors (%.1f%%: %d 5xx, %d with no answer%s), p99 %s%s",
		e.Requests, e.Errors, 100*e.ErrorRate(), e.ServerErrors, e.Failures, lb, e.P99.Round(100*time.Microsecond), restarted)
}

// pool adds up what targets got between the snapshots before and after, instance by instance
// (a target's nth entry is the nth balancer instance's, Tier.Outcomes). A target missing from
// the snapshot after at an instance (removed meanwhile) counts nothing there; one missing from
// the snapshot before (added meanwhile) counts all it holds after. Counters that started again
// during the window (the balancer restarted, or dropped and re-added the target: their
// counting_since moved, or one went back) count what they hold after: all of that was got
// inside the window, and skipping it would judge a version that failed every request since by
// no requests at all.
func pool(before, after balancer.Outcomes, targets []string) (Evidence, error) {
	e := Evidence{Targets: targets}
	for _, t := range targets {
		for i, a := range after[t] {
			if a.Address == "" { // gone from that instance by the end: what it got there is not known
				continue
			}
			b := sinceStart(a) // added at that instance meanwhile: all it holds came in the window
			if i < len(before[t]) && before[t][i].Address != "" {
				b = before[t][i]
			}
			w, err := adminapi.Window(b, a)
			if errors.Is(err, adminapi.ErrNotOneWindow) && b.Address == a.Address {
				e.Restarted++
				w, err = adminapi.Window(sinceStart(a), a)
			}
			if err != nil {
				return Evidence{}, err
			}
			e.Requests += w.Requests
			e.Errors += w.Errors
			e.ServerErrors += w.ServerErrors
			e.Failures += w.Failures.Total()
			e.LBAnswers += w.LBAnswers.Total()
			if e.latency.Bounds == nil {
				e.latency = adminapi.Histogram{Bounds: w.Latency.Bounds, Counts: make([]uint64, len(w.Latency.Counts))}
			}
			if slices.Equal(e.latency.Bounds, w.Latency.Bounds) && len(e.latency.Counts) == len(w.Latency.Counts) {
				for j, c := range w.Latency.Counts {
					e.latency.Counts[j] += c
				}
				e.latency.SumSeconds += w.Latency.SumSeconds
			}
		}
	}
	e.P99 = e.latency.Quantile(0.99)
	return e, nil
}

// sinceStart is a snapshot of s's target with every counter at zero: the window from the
// counters' start to s.
func sinceStart(s adminapi.BackendStatus) adminapi.BackendStatus {
	return adminapi.BackendStatus{Address: s.Address, Outcomes: adminapi.Outcomes{Latency: adminapi.Histogram{
		Bounds: s.Outcomes.Latency.Bounds, Counts: make([]uint64, len(s.Outcomes.Latency.Counts))}}}
}

// Verdict is the analysis of one batch of new targets against the old version's (the baseline).
type Verdict struct {
	// Pass is false when the new version must not go on.
	Pass bool
	// NoTraffic: too few requests reached the new targets to judge them (rollout.analysis
	// min_requests); Pass is then rollout.analysis.on_no_traffic.
	NoTraffic bool
	New       Evidence
	Baseline  Evidence
	// Reason says why, with the numbers and the rule.
	Reason string
}

// p99Requests is how many requests each side needs before its p99 is compared: below 100 the
// "99th percentile" is the slowest request or two, one cold connection's worth of noise.
const p99Requests = 100

// judge applies rollout.analysis to what the new targets and the baseline got over window.
func judge(a config.Analysis, window time.Duration, fresh, base Evidence) Verdict {
	v := Verdict{Pass: true, New: fresh, Baseline: base}
	baseline := "no baseline (no target of the old version served)"
	comparable := base.Requests >= uint64(a.MinRequests) && a.MinRequests > 0 || base.Requests > 0 && a.MinRequests == 0
	if base.Requests > 0 {
		baseline = "baseline (the old version's targets): " + base.String()
	}
	switch {
	case fresh.Requests < uint64(a.MinRequests) && float64(fresh.Errors) > a.MaxErrorRate*float64(a.MinRequests):
		// Too few to judge the rate, but already more errors than max_error_rate allows of
		// min_requests: the requests still missing could not bring the rate under it.
		v.Pass = false
		v.Reason = fmt.Sprintf("%d errors in %d requests over %s: fewer requests than rollout.analysis.min_requests %d, but more errors than "+
			"rollout.analysis.max_error_rate %.1f%% allows even of %d (%.0f), whatever the others would have got: new version: %s; %s",
			fresh.Errors, fresh.Requests, window, a.MinRequests, 100*a.MaxErrorRate, a.MinRequests, a.MaxErrorRate*float64(a.MinRequests), fresh, baseline)
	case fresh.Requests < uint64(max(a.MinRequests, 1)): // min_requests 0 still needs one request: none is no evidence
		v.NoTraffic = true
		v.Pass = a.OnNoTraffic == config.OnNoTrafficPass
		v.Reason = fmt.Sprintf("not enough traffic to judge: %d requests reached the new version in %s, rollout.analysis.min_requests is %d; "+
			"rollout.analysis.on_no_traffic %s", fresh.Requests, window, a.MinRequests, a.OnNoTraffic)
	case fresh.ErrorRate() > a.MaxErrorRate:
		v.Pass = false
		v.Reason = fmt.Sprintf("error rate %.1f%% over %s is above rollout.analysis.max_error_rate %.1f%%: new version: %s; %s",
			100*fresh.ErrorRate(), window, 100*a.MaxErrorRate, fresh, baseline)
	case comparable && fresh.ErrorRate()-base.ErrorRate() > a.MaxErrorRateIncrease:
		v.Pass = false
		v.Reason = fmt.Sprintf("error rate %.1f%% is %.1f points above the old version's %.1f%%, more than rollout.analysis.max_error_rate_increase %.1f: new version: %s; %s",
			100*fresh.ErrorRate(), 100*(fresh.ErrorRate()-base.ErrorRate()), 100*base.ErrorRate(), 100*a.MaxErrorRateIncrease, fresh, baseline)
	case comparable && a.MaxP99Increase > 0 && fresh.Requests >= p99Requests && base.Requests >= p99Requests && base.P99 > 0 &&
		fresh.latency.Beyond(0.99) && !base.latency.Beyond(0.99) && fresh.P99-base.P99 > a.MinP99Increase:
		// Its p99 is only "at least the last bound": compared as that, a version slower than the
		// balancer measures would pass beside a baseline near it.
		v.Pass = false
		v.Reason = fmt.Sprintf("p99 above %s, the longest the balancer's latency histogram measures, while the old version's is %s: "+
			"rollout.analysis.max_p99_increase %.0f%% cannot hold: new version: %s; %s",
			fresh.P99.Round(100*time.Microsecond), base.P99.Round(100*time.Microsecond), 100*a.MaxP99Increase, fresh, baseline)
	case comparable && a.MaxP99Increase > 0 && fresh.Requests >= p99Requests && base.Requests >= p99Requests && base.P99 > 0 &&
		float64(fresh.P99) > float64(base.P99)*(1+a.MaxP99Increase) && fresh.P99-base.P99 > a.MinP99Increase:
		v.Pass = false
		v.Reason = fmt.Sprintf("p99 %s is %.0f%% above the old version's %s, more than rollout.analysis.max_p99_increase %.0f%%, and %s slower, more than rollout.analysis.min_p99_increase %s: new version: %s; %s",
			fresh.P99.Round(100*time.Microsecond), 100*(float64(fresh.P99)/float64(base.P99)-1), base.P99.Round(100*time.Microsecond),
			100*a.MaxP99Increase, (fresh.P99 - base.P99).Round(100*time.Microsecond), a.MinP99Increase, fresh, baseline)
	default:
		v.Reason = fmt.Sprintf("what users got over %s holds: new version: %s; %s", window, fresh, baseline)
	}
	return v
}

// VerdictError is a failed analysis: the batch's new version served users worse than the rules
// allow.
type VerdictError struct {
	Hosts   []string
	Verdict Verdict
}

func (e *VerdictError) Error() string {
	return fmt.Sprintf("analysis of %s failed: %s", strings.Join(e.Hosts, ", "), e.Verdict.Reason)
}

// analyse judges the hosts of one batch (first..end, just deployed, in rotation and baked) by what
// users got through the balancer over window, against the targets the old version still serves
// on. It returns nil when the verdict passes (the verdict is an event either way), a
// *VerdictError when it fails, and nil at once when there is nothing to read (analysis off, a
// balancer that publishes no outcomes, a naive deploy); watched says whether it watched the
// batch for window.
func (d *Deployer) analyse(ctx context.Context, version string, rep *report.Report, first, end int, window time.Duration) (watched bool, err error) {
	ov, ok := d.bal.(balancer.OutcomeViewer)
	a := d.cfg.Rollout.Analysis
	if !a.Enabled || !ok || d.opts.Naive || !d.view {
		return false, nil
	}
	var fresh, hosts []string
	newVersion := map[string]bool{} // every target this deploy put the new version on
	for i, hr := range rep.Hosts {
		if hr.Target == "" || hr.Outcome != report.OutcomeDeployed && hr.Outcome != report.OutcomeUnchanged {
			continue
		}
		newVersion[hr.Target] = true
		if i >= first && i < end && hr.Outcome == report.OutcomeDeployed { // a fresh one too: in rotation, it serves users (judgeBatch skips a first deploy)
			fresh = append(fresh, hr.Target)
			hosts = append(hosts, hr.Host)
		}
	}
	if len(fresh) == 0 {
		return false, nil
	}
	before, err := ov.Outcomes(ctx)
	if errors.Is(err, balancer.ErrNoView) {
		d.emit(Event{Step: stepVerdict, Version: version, Message: strings.Join(hosts, ", ") + ": not analysed: " + err.Error()})
		return false, nil
	}
	if err != nil {
		return true, fmt.Errorf("analysis of %s: read the balancer's outcomes: %w", strings.Join(hosts, ", "), err)
	}
	since := "for " + window.String()
	if before == nil {
		before = balancer.Outcomes{}
	}
	for i := first; i < end; i++ {
		hr := rep.Hosts[i]
		if at := d.rotated.at(hr.Host); slices.Contains(fresh, hr.Target) && len(at[hr.Target]) > 0 {
			before[hr.Target] = at[hr.Target] // counted from its coming into rotation (inRotation)
			since = "since each came into rotation (its bake too) and for " + window.String() + " more"
		}
	}
	d.emit(Event{Step: stepAnalysis, Version: version, Message: fmt.Sprintf("judging %s by what users get through %s %s (rollout.analysis) against the old version's targets",
		strings.Join(hosts, ", "), d.bal.Name(), since)})
	if err := d.sleep(ctx, window); err != nil {
		return true, fmt.Errorf("analysis of %s: %w", strings.Join(hosts, ", "), err)
	}
	after, err := ov.Outcomes(ctx)
	if err != nil {
		return true, fmt.Errorf("analysis of %s: read the balancer's outcomes: %w", strings.Join(hosts, ", "), err)
	}
	var base []string // the baseline: every other target the balancer sent users to
	for t := range after {
		if !newVersion[t] {
			base = append(base, t)
		}
	}
	slices.Sort(base)
	fe, err := pool(before, after, fresh)
	if err != nil {
		return true, fmt.Errorf("analysis of %s: %w", strings.Join(hosts, ", "), err)
	}
	be, err := pool(before, after, base)
	if err != nil {
		return true, fmt.Errorf("analysis of %s: %w", strings.Join(hosts, ", "), err)
	}
	v := judge(a, window, fe, be)
	for i := first; i < end; i++ {
		if slices.Contains(hosts, rep.Hosts[i].Host) {
			rep.Hosts[i].Verdict = v.Reason
		}
	}
	step := stepVerdict
	if !v.Pass {
		step = stepFailed
	}
	d.emit(Event{Step: step, Version: version, Message: strings.Join(hosts, ", ") + ": " + v.Reason})
	if !v.Pass {
		return true, &VerdictError{Hosts: hosts, Verdict: v}
	}
	return true, nil
}

// inRotation is what the balancer had counted for every target when each host's new target came
// into rotation in this deploy (its in-rotation event, local or relayed from a host's step): the
// analysis of a batch counts a new target's requests from there, its bake included, not only
// over the window after the bake. A version that fails while it warms up (a cold cache, a
// migration) for less than rollout.bake is judged by those failures. (Not from before its step:
// a stop-first target keeps its address, and the old version's drain would count as the new
// version's.) Without such a snapshot (the balancer did not answer in time) the window's own
// counts alone judge the target.
type inRotation struct {
	mu sync.Mutex
	by map[string]balancer.Outcomes // host name → the balancer's outcomes then
}

// inRotationLook bounds the read of the balancer's outcomes as a target comes into rotation.
const inRotationLook = 2 * time.Second

// at is the balancer's outcomes as host's new target came into rotation (nil: none seen).
func (r *inRotation) at(host string) balancer.Outcomes {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.by[host]
}

// noteInRotation keeps the balancer's outcomes when e says host e.Host's balanced service came
// into rotation, for a deploy whose batches are analysed (inRotation).
func (d *Deployer) noteInRotation(e Event) {
	bsvc, balanced := d.cfg.BalancedService()
	ov, ok := d.bal.(balancer.OutcomeViewer)
	if e.Step != stepInRotation || !balanced || e.Service != bsvc.Name || !ok || !d.cfg.Rollout.Analysis.Enabled || d.opts.Naive || !d.view {
		return
	}
	ctx, cancel := context.WithTimeout(context.Background(), inRotationLook)
	defer cancel()
	o, err := ov.Outcomes(ctx)
	if err != nil {
		return
	}
	d.rotated.mu.Lock()
	defer d.rotated.mu.Unlock()
	if d.rotated.by == nil {
		d.rotated.by = map[string]balancer.Outcomes{}
	}
	d.rotated.by[e.Host] = o
}

// targetOf is the address of host h's balanced service in spec s ("" when it has none).
func (d *Deployer) targetOf(s spec.Spec) string {
	bsvc, ok := d.cfg.BalancedService()
	if !ok {
		return ""
	}
	if svc, ok := s.Service(bsvc.Name); ok {
		return svc.Address
	}
	return ""
}
