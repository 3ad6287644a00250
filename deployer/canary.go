package deployer

import (
	"context"
	"fmt"
	"strings"
	"time"
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

// canaryHosts is how many hosts form the canary: rollout.canary.hosts, capped at the fleet, or
// 0 when the deploy cannot judge one.
func (d *Deployer) canaryHosts() int {
	_, outcomes := d.bal.(OutcomeViewer)
	if !d.cfg.Rollout.Analysis.Enabled || !outcomes || d.opts.Naive || !d.view {
		return 0
	}
	return min(d.cfg.Rollout.Canary.Hosts, len(d.cfg.Hosts))
}

// judgeBatch runs the analysis of a batch just deployed: the canary for rollout.canary.duration,
// any other batch for rollout.analysis.window.
func (d *Deployer) judgeBatch(ctx context.Context, version string, rep *Report, b batch) error {
	window := d.cfg.Rollout.Analysis.Window
	if b.canary {
		window = d.cfg.Rollout.Canary.Duration
		names := make([]string, 0, b.end-b.first)
		for _, h := range d.cfg.Hosts[b.first:b.end] {
			names = append(names, h.Name)
		}
		d.emit(Event{Step: StepCanary, Version: version, Message: fmt.Sprintf("canary %s: judged for %s (rollout.canary.duration) before the rest rolls",
			strings.Join(names, ", "), window.Round(time.Millisecond))})
	}
	return d.analyse(ctx, version, rep, b.first, b.end, window)
}
