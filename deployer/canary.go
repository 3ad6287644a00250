package deployer

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"time"

	"github.com/zero502/zero502/deployer/balancer"
	"github.com/zero502/zero502/deployer/report"
	"github.com/zero502/zero502/infra/adminapi"
	"github.com/zero502/zero502/infra/config"
	"github.com/zero502/zero502/infra/spec"
)

// batch is one step of the rollout: hosts first..end-1 of hosts[], deployed at once and judged
// together; the canary is the first, when there is one.
type batch struct {
	first, end int
	canary     bool
}

// batches are the rollout's steps: the canary first (rollout.canary.hosts, when the deploy can
// judge it: the analysis on, behind a balancer that publishes outcomes, not naive), then the
// other hosts rollout.batch at a time.
func (d *Deployer) batches() []batch {
	var bs []batch
	n, start := len(d.cfg.Hosts), 0
	if c := d.canaryHosts(); c > 0 {
		bs = append(bs, batch{first: 0, end: c, canary: true})
		start = c
	}
	size := max(d.cfg.Rollout.Batch, 1)
	for ; start < n; start += size {
		bs = append(bs, batch{first: start, end: min(start+size, n)})
	}
	return bs
}

// drainsEarly reports whether host h's old instances drain as soon as their successors have
// started rather than once they are in rotation: under start-first, h is one of the first
// rollout.max_unavailable hosts of its batch. A host reached over ssh is told so by its config
// (configFor).
func (d *Deployer) drainsEarly(h config.Host) bool {
	if d.cfg.Rollout.Strategy != config.StartFirst || d.opts.Naive || d.cfg.Rollout.MaxUnavailable == 0 {
		return false
	}
	for _, b := range d.batches() {
		for i := b.first; i < b.end; i++ {
			if d.cfg.Hosts[i].Name == h.Name {
				return i-b.first < d.cfg.Rollout.MaxUnavailable
			}
		}
	}
	return false
}

// canaryHosts is how many hosts form the canary: rollout.canary.hosts, capped at the fleet, or
// 0 when the deploy cannot judge one (noCanary says why).
func (d *Deployer) canaryHosts() int {
	if d.noCanary() != "" {
		return 0
	}
	return min(d.cfg.Rollout.Canary.Hosts, len(d.cfg.Hosts))
}

// noCanary says why the deploy has no canary, and what would give it one; "" when it has one.
// A canary is judged by what users got (a balancer that publishes per-target outcomes) or by
// rollout.alarms, with the analysis on, behind a balancer the deployer sees, not naive.
func (d *Deployer) noCanary() string {
	_, outcomes := d.bal.(balancer.OutcomeViewer)
	switch {
	case d.opts.Naive:
		return "--naive judges nothing: deploy without it"
	case !d.view:
		return "balancer.kind none gives the deployer no view of the targets, so nothing judges a canary: " +
			"use balancer.kind inhouse, or alb with rollout.alarms"
	case !d.cfg.Rollout.Analysis.Enabled:
		return "rollout.analysis.enabled is false: set it to true"
	case d.cfg.Rollout.Canary.Hosts <= 0:
		return "rollout.canary.hosts is 0: set it to 1 or more"
	case !outcomes && len(d.cfg.Rollout.Alarms) == 0:
		return d.bal.Name() + " publishes no per-target outcomes and rollout.alarms is empty, so nothing judges a canary: " +
			"list in rollout.alarms the CloudWatch alarms that judge it"
	}
	return ""
}

// checkCanaryPause refuses, before anything changes, a deploy asked to pause after its canary
// (Options.PauseAfterCanary) when it has no canary: it would roll every host without a pause,
// the one thing the flag was given to prevent.
func (d *Deployer) checkCanaryPause() []string {
	if !d.opts.PauseAfterCanary {
		return nil
	}
	why := d.noCanary()
	if why == "" {
		return nil
	}
	return []string{"--pause-after-canary: this deploy has no canary to pause after (" + why + "); " +
		"without one every host would roll with no pause: give it a canary, or deploy without --pause-after-canary"}
}

// judgeBatch runs the analysis of a batch just deployed: the canary for rollout.canary.duration,
// with rollout.canary.weight % of the traffic, any other batch for rollout.analysis.window. It
// returns the window it judged the batch for (0: not judged), the deploy's floor's part.
//
// A batch is judged whenever the fleet served before the deploy, fresh hosts too (a host just
// added at the head of hosts[] is the canary): in rotation, it serves users, and the hosts still
// on the old version are the baseline. Only a first deploy, no host serving before it, has
// neither users to judge by nor an old version to compare with, and goes unjudged.
func (d *Deployer) judgeBatch(ctx context.Context, version string, rep *report.Report, b batch) (window time.Duration, judged error) {
	if !fleetServed(rep) {
		if b.canary {
			return 0, d.canaryNotJudged(ctx, version, rep, b, "a first deploy (no host served before it): no user to judge it by, no old version to compare with")
		}
		return 0, nil
	}
	window = d.cfg.Rollout.Analysis.Window
	if b.canary {
		window = d.cfg.Rollout.Canary.Duration
		share := d.weighCanary(ctx, d.deployedTargets(rep, b))
		d.emit(Event{Step: StepCanary, Version: version, Message: fmt.Sprintf("canary %s: %s, judged for %s (rollout.canary.duration) before the rest rolls",
			hostNames(d.cfg.Hosts[b.first:b.end]), share, window.Round(time.Millisecond))})
	}
	analysed, err := d.analyse(ctx, version, rep, b.first, b.end, window)
	if err != nil {
		return window, err // a failed canary keeps its small share through its rollback (the deploy puts it back as it ends)
	}
	if !analysed && (d.alarms == nil || d.opts.Naive || !deployedIn(rep, b)) {
		window = 0 // nothing to judge by: no wait
	}
	if err := d.watchAlarms(ctx, version, rep, b, window, analysed); err != nil {
		return window, err
	}
	if !b.canary {
		return window, nil
	}
	if window == 0 {
		why := "the balancer gave no view of its targets"
		if !deployedIn(rep, b) {
			why = "its hosts already ran " + version + " (verified, not redeployed)"
		}
		return 0, d.canaryNotJudged(ctx, version, rep, b, why)
	}
	if !d.pausesAfterCanary(b) {
		d.unweighCanary(ctx, version) // passed: the rest rolls, each target at the same weight
	}
	// Paused, the canary keeps its rollout.canary.weight share for as long as the pause lasts
	// (hours, maybe): the deploy puts it back once promoted, or as it ends after an abort.
	return window, nil
}

// pausesAfterCanary reports whether the deploy waits after batch b for promote or abort
// (Options.PauseAfterCanary): b is the canary and hosts remain to roll after it.
func (d *Deployer) pausesAfterCanary(b batch) bool {
	return b.canary && d.opts.PauseAfterCanary && b.end < len(d.cfg.Hosts)
}

// canaryNotJudged says the canary has no verdict and why, and puts its weight back at once:
// nothing judges it at that share, and on a first deploy the share would be most of the traffic
// once the others join at the default weight.
//
// A deploy asked to pause after the canary never pauses without a verdict that passed: a pause
// invites a promote, and a promote of a version nobody judged is the one step the pause exists
// to prevent. What happens instead is what a user of Argo Rollouts expects: on a first deploy
// Argo Rollouts skips its steps, pauses included, and rolls everything (nobody to protect), so
// this deploy rolls on without pausing; in a fleet that serves users Argo Rollouts never lets a
// rollout past a pause step without a promote, so this deploy refuses the pause and stops
// before the rest rolls, saying what to do.
func (d *Deployer) canaryNotJudged(ctx context.Context, version string, rep *report.Report, b batch, why string) error {
	d.unweighCanary(ctx, version)
	names := hostNames(d.cfg.Hosts[b.first:b.end])
	msg := fmt.Sprintf("canary not judged: %s: %s", names, why)
	switch {
	case !d.pausesAfterCanary(b):
	case !fleetServed(rep):
		msg += "; --pause-after-canary does not pause without a verdict, and a first deploy has no user to protect: the rest rolls"
	default:
		d.emit(Event{Step: StepCanary, Version: version, Message: msg})
		return fmt.Errorf("%s; --pause-after-canary pauses only after a verdict that passed, so the rest was not rolled (%s runs %s, unjudged; "+
			"the other hosts what they ran): deploy again without --pause-after-canary to roll the rest, or deploy the old version to take %s back",
			msg, names, version, names)
	}
	d.emit(Event{Step: StepCanary, Version: version, Message: msg})
	return nil
}

// fleetServed reports whether any host of the fleet ran a version before this deploy: its users
// and the old version's targets are there to judge a batch by, fresh hosts included.
func fleetServed(rep *report.Report) bool {
	for _, hr := range rep.Hosts {
		if hr.From != "" {
			return true
		}
	}
	return false
}

// deployedIn reports whether any host of batch b took the new version in this deploy (not one
// that already ran it).
func deployedIn(rep *report.Report, b batch) bool {
	for _, hr := range rep.Hosts[b.first:b.end] {
		if hr.Outcome == report.OutcomeDeployed {
			return true
		}
	}
	return false
}

// canaryWeight is the weight each of canaries targets needs so that together they get share %
// of new requests beside others targets at the default weight, within the LB's range.
func canaryWeight(share, canaries, others int) int {
	if share >= 100 || others == 0 || canaries == 0 {
		return adminapi.MaxWeight
	}
	w := (share*others*adminapi.DefaultWeight + (100-share)*canaries/2) / ((100 - share) * canaries) // rounded
	return min(max(w, adminapi.MinWeight), adminapi.MaxWeight)
}

// weighCanary gives the canary's targets their rollout.canary.weight share of new requests at a
// balancer that weighs targets, and says what it set; none while no other target is in rotation.
// A target the balancer does not know is weighed only when it is among add: added first.
func (d *Deployer) weighCanary(ctx context.Context, targets []string, add ...string) string {
	w, ok := d.bal.(balancer.Weighter)
	ov, views := d.bal.(balancer.OutcomeViewer)
	share := d.cfg.Rollout.Canary.Weight
	if !ok || !views {
		return "every target at the same weight (" + d.bal.Name() + " weighs none)"
	}
	canaries := map[string]bool{}
	for _, t := range targets {
		canaries[t] = true
	}
	if len(canaries) == 0 {
		return "no target to weigh"
	}
	snap, err := ov.Outcomes(ctx)
	if err != nil {
		return fmt.Sprintf("every target at the same weight (read the targets: %v)", err)
	}
	others := 0
	for addr, sts := range snap {
		if !canaries[addr] && slices.ContainsFunc(sts, func(st adminapi.BackendStatus) bool { return st.InRotation }) {
			others++
		}
	}
	if others == 0 {
		// Nothing to weigh it against (a first deploy onto empty hosts): at the maximum weight it
		// would keep most new requests once the other hosts join at the default weight.
		return "every target at the same weight (no other target in rotation at " + d.bal.Name() + " to weigh the canary against)"
	}
	weight := canaryWeight(share, len(canaries), others)
	for t := range canaries {
		if _, known := snap[t]; !known {
			rot, ok := d.bal.(balancer.Rotation)
			if !ok || !slices.Contains(add, t) || rot.Add(ctx, t) != nil {
				continue // not at the balancer yet (a start-first port before its instance started)
			}
		}
		// Recorded before it is asked: a balancer that fails may still have set it (one instance
		// of a tier of several, or an LB that applied it but answered late), and unweighCanary
		// puts back only what it finds here.
		d.weighted = append(d.weighted, t)
		if err := w.SetWeight(ctx, t, weight); err != nil {
			return fmt.Sprintf("the canary's weight %d may be set at part of %s only (set it for %s: %v); "+
				"every target weighed is put back to %d once the canary is judged or the deploy ends",
				weight, d.bal.Name(), t, err, adminapi.DefaultWeight)
		}
	}
	got := 100 * float64(weight*len(canaries)) / float64(weight*len(canaries)+others*adminapi.DefaultWeight)
	return fmt.Sprintf("weight %d against %d other target(s) at %d: %.0f%% of new requests (rollout.canary.weight %d%%)",
		weight, others, adminapi.DefaultWeight, got, share)
}

// deployedTargets are the targets of the batch's hosts that took the new version.
func (d *Deployer) deployedTargets(rep *report.Report, b batch) []string {
	var ts []string
	for _, hr := range rep.Hosts[b.first:b.end] {
		if hr.Target != "" && hr.Outcome == report.OutcomeDeployed {
			ts = append(ts, hr.Target)
		}
	}
	return ts
}

// weighCanaryAhead gives the canary's share to the targets its hosts will have before they
// are deployed, so a bad version never gets a full share, not even during its bake;
// weighCanary sets it again once they are deployed. Those are every address of the balanced
// service on the canary's hosts: stop-first keeps a host's address, and start-first takes
// whichever of its two ports the old version does not hold (the old instance, about to be
// replaced, keeps the canary's share meanwhile). A target the deployer adds itself once its
// instance started (addsItself), and the balancer does not know now (a start-first port an
// earlier deploy retired), is added first, out of rotation until its health checks pass, so
// that it joins at the canary's weight and not the default. On a first deploy no other target
// is in rotation and it weighs none; a canary that turns out not judged is put back at once
// (canaryNotJudged).
func (d *Deployer) weighCanaryAhead(ctx context.Context, version string, b batch) {
	bsvc, ok := d.cfg.BalancedService()
	if !b.canary || !ok {
		return
	}
	var ts, adds []string
	for _, h := range d.cfg.Hosts[b.first:b.end] {
		ts = append(ts, h.ServiceAddrs(bsvc)...)
		if svc, ok := spec.Render(d.cfg, h, version, d.self).Service(bsvc.Name); ok && d.addsItself(svc) {
			adds = append(adds, h.ServiceAddrs(bsvc)...)
		}
	}
	d.weighCanary(ctx, ts, adds...)
}

// unweighCanary puts every target weighCanary weighed back at the default weight, whatever the
// verdict or failure (the deploy calls it as it ends, too).
func (d *Deployer) unweighCanary(ctx context.Context, version string) {
	w, ok := d.bal.(balancer.Weighter)
	if !ok {
		return
	}
	for _, t := range slices.Compact(slices.Sorted(slices.Values(d.weighted))) {
		// A tier asks every instance and wraps ErrUnknownTarget only when none knows t (nothing
		// to put back); any other failure names the instance it comes from.
		err := w.SetWeight(context.WithoutCancel(ctx), t, adminapi.DefaultWeight)
		if err != nil && !errors.Is(err, balancer.ErrNoView) && !errors.Is(err, balancer.ErrUnknownTarget) {
			d.emit(Event{Step: StepCanary, Version: version, Message: fmt.Sprintf(
				"could not put %s back at weight %d at %s: %v; it keeps the canary's share of new requests until set by hand "+
					"(PUT /admin/backends/%s/weight {\"weight\": %d} on that LB's admin API)", t, adminapi.DefaultWeight, d.bal.Name(), err, t, adminapi.DefaultWeight)})
		}
	}
	d.weighted = nil
}
