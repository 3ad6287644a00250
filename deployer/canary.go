package deployer

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
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
// 0 when the deploy cannot judge one.
func (d *Deployer) canaryHosts() int {
	_, outcomes := d.bal.(balancer.OutcomeViewer)
	judged := outcomes || len(d.cfg.Rollout.Alarms) > 0 // by what users got, or by alarms
	if !d.cfg.Rollout.Analysis.Enabled || !judged || d.opts.Naive || !d.view {
		return 0
	}
	return min(d.cfg.Rollout.Canary.Hosts, len(d.cfg.Hosts))
}

// judgeBatch runs the analysis of a batch just deployed: the canary for rollout.canary.duration,
// with rollout.canary.weight % of the traffic, any other batch for rollout.analysis.window. It
// returns the window it judged the batch for (0: not judged), the deploy's floor's part.
func (d *Deployer) judgeBatch(ctx context.Context, version string, rep *report.Report, b batch) (window time.Duration, judged error) {
	window = d.cfg.Rollout.Analysis.Window
	fresh := true // a first deploy onto empty hosts has no users yet, nor an old version to compare with
	for _, hr := range rep.Hosts[b.first:b.end] {
		fresh = fresh && hr.From == ""
	}
	if fresh {
		return 0, nil
	}
	if b.canary {
		window = d.cfg.Rollout.Canary.Duration
		names := make([]string, 0, b.end-b.first)
		for _, h := range d.cfg.Hosts[b.first:b.end] {
			names = append(names, h.Name)
		}
		share := d.weighCanary(ctx, d.deployedTargets(rep, b))
		// Put back once the canary passed; a failed one keeps its small share through its rollback
		// (the deploy puts it back as it ends).
		defer func() {
			if judged == nil {
				d.unweighCanary(ctx, version)
			}
		}()
		d.emit(Event{Step: StepCanary, Version: version, Message: fmt.Sprintf("canary %s: %s, judged for %s (rollout.canary.duration) before the rest rolls",
			strings.Join(names, ", "), share, window.Round(time.Millisecond))})
	}
	analysed, err := d.analyse(ctx, version, rep, b.first, b.end, window)
	if err != nil {
		return window, err
	}
	if !analysed && (d.alarms == nil || d.opts.Naive) {
		window = 0 // nothing to judge by: no wait
	}
	return window, d.watchAlarms(ctx, version, rep, b, window, analysed)
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
// balancer that weighs targets, and says what it set.
func (d *Deployer) weighCanary(ctx context.Context, targets []string) string {
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
		if !canaries[addr] && len(sts) > 0 && sts[0].InRotation {
			others++
		}
	}
	weight := canaryWeight(share, len(canaries), others)
	for t := range canaries {
		if _, known := snap[t]; !known {
			continue // not at the balancer yet (a start-first port before its instance started)
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
// are deployed (stop-first keeps a host's address), so a bad version never gets a full share,
// not even during its bake; weighCanary sets it again once they are deployed.
func (d *Deployer) weighCanaryAhead(ctx context.Context, version string, b batch) {
	if !b.canary {
		return
	}
	var ts []string
	for _, h := range d.cfg.Hosts[b.first:b.end] {
		if t := d.targetOf(spec.Render(d.cfg, h, version, d.self)); t != "" {
			ts = append(ts, t)
		}
	}
	d.weighCanary(ctx, ts)
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
