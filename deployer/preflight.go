package deployer

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"github.com/zero502/zero502/deployer/balancer"
	"github.com/zero502/zero502/deployer/report"
	"github.com/zero502/zero502/infra/config"
	"github.com/zero502/zero502/infra/spec"
	"github.com/zero502/zero502/infra/trust"
	"github.com/zero502/zero502/invariants"
)

// hostView is what preflight found on one host before touching anything.
type hostView struct {
	from string
	// instance: the host runs an instance of the balanced service (of any service when none
	// has a port); a host without one is fresh and is simply started.
	instance bool
	// inProgress: the host's published spec already names the version (an interrupted deploy,
	// or a finished one): its step completes or verifies it, so it need not be serving now.
	inProgress bool
	// previous: with inProgress, the version of the spec the host keeps from before it (an
	// earlier run of this version moved it from there; never judged, maybe): where a failed
	// verdict sends it back. Empty: none kept, or the same version.
	previous string
	// serving: healthy directly and in rotation at the balancer.
	serving bool
	detail  string
	// target is where the balanced service answers on the host (its instance's address: a
	// start-first service moves between its two ports); empty: the host's first port.
	target string
}

// preflight checks everything a deploy needs before it changes anything: the invariants (of
// the config, and of the live balancer's numbers), drift between the two, every target healthy
// and no batch draining the last healthy target. Every problem is reported at once.
func (d *Deployer) preflight(ctx context.Context, version string) ([]hostView, error) {
	var reasons []string
	for _, w := range invariants.Warnings(d.cfg) { // said, never refused: the numbers may still judge
		d.emit(Event{Step: stepPreflight, Version: version, Message: "warning: invariant " + w.Error()})
	}
	for _, v := range invariants.Check(d.cfg) {
		reasons = append(reasons, "invariant "+v.Error())
	}
	reasons = append(reasons, d.checkDrift(ctx)...)
	reasons = append(reasons, d.checkDrainModes()...)
	reasons = append(reasons, d.checkStateDirsShared()...)
	reasons = append(reasons, d.checkHostsWritable(ctx, version)...)
	reasons = append(reasons, d.checkHooks()...)
	reasons = append(reasons, d.checkCanaryPause()...)

	views := make([]hostView, len(d.cfg.Hosts))
	lookErrs := make([]error, len(d.cfg.Hosts))
	d.eachHost(hostIndexes(len(d.cfg.Hosts)), func(i int) {
		h := d.cfg.Hosts[i]
		if h.SSH != "" {
			// The host's step, opened now, prints its look and waits for its batch
			// (remote_turn.go). A step that ends without a look (a zero502 there that predates
			// --look-first) leaves the look to `host look` and its step to its turn.
			t := d.openStep(ctx, h, version, false, true)
			views[i], lookErrs[i] = t.view(ctx, d)
			if !t.predates() {
				d.turns.put(t) // one that failed its look is abandoned with the rest
				return
			}
		}
		views[i], lookErrs[i] = d.look(ctx, h, version)
	})
	for i, h := range d.cfg.Hosts {
		v := views[i]
		if err := lookErrs[i]; err != nil {
			reasons = append(reasons, err.Error())
			continue
		}
		if v.instance && !v.inProgress && !v.serving {
			reasons = append(reasons, fmt.Sprintf("every target must be healthy before a deploy: host %s: %s; "+
				"fix or wait for it, then deploy again", h.Name, v.detail))
		}
	}
	if err := d.alarmsQuiet(ctx); err != nil {
		reasons = append(reasons, err.Error())
	}
	if len(reasons) == 0 {
		for _, b := range d.batches() {
			if err := d.batchLeavesHealthy(ctx, version, b.first, b.end, views); err != nil {
				reasons = append(reasons, err.Error())
				break
			}
		}
	}
	if len(reasons) > 0 {
		for _, r := range reasons {
			d.emit(Event{Step: stepRefused, Message: r, Version: version})
		}
		return nil, &refusedError{Reasons: reasons}
	}
	d.emit(Event{Step: stepPreflight, Version: version, Message: fmt.Sprintf(
		"invariants hold, balancer %s matches the config, every running target healthy", d.bal.Name())})
	return views, nil
}

// checkHooks finds, before anything changes, a hook that could not run: its program missing, or
// it or a script it names failing the trust rule (runHook's own check, made early). The per-host
// hooks (pre_traffic, post_traffic) run where a host's step runs: here only for a local host, on
// the host for one over ssh, where its step checks them.
func (d *Deployer) checkHooks() []string {
	local := slices.ContainsFunc(d.cfg.Hosts, func(h config.Host) bool { return h.SSH == "" })
	var reasons []string
	for _, n := range d.cfg.Hooks.Named() {
		perHost := n.Name == "pre_traffic" || n.Name == "post_traffic"
		if !n.Hook.Set() || perHost && !local {
			continue
		}
		if _, err := trust.Command(n.Hook.Command, "", os.Getuid()); err != nil {
			reasons = append(reasons, fmt.Sprintf("hooks.%s.command %q: %v; fix the hook, then deploy again", n.Name, n.Hook.Command, err))
		}
	}
	return reasons
}

// programChecker is a runtime that can tell, before anything starts, whether a service's
// program could run (the process runtime: it is there and passes the trust rule).
type programChecker interface {
	CheckProgram(svc spec.Service) error
}

// checkPrograms finds, before anything changes, a service whose program could not start on a
// host stepped from here (a --self or a services[].command that is not there, or that fails the
// trust rule): else the first host would be drained and stopped before its start failed. It runs
// after the pre_deploy hook, which may be what installs the version's program. A host over ssh
// is not checked here: its program is on the host.
func (d *Deployer) checkPrograms(version string) []string {
	var reasons []string
	for _, h := range d.cfg.Hosts {
		pc, ok := d.runtimes[h.Name].(programChecker)
		if h.SSH != "" || !ok {
			continue
		}
		for _, svc := range spec.Render(d.cfg, h, version, d.self).Services {
			if svc.Stopped {
				continue
			}
			if err := pc.CheckProgram(svc); err != nil {
				self := ""
				if d.opts.Self != "" && len(svc.Command) > 0 && svc.Command[0] == d.self {
					self = " ({self} is --self " + d.opts.Self + ")"
				}
				reasons = append(reasons, fmt.Sprintf("host %s: service %s %v%s; fix it, then deploy again", h.Name, svc.Name, err, self))
			}
		}
	}
	return reasons
}

// checkDrift compares the live balancer's settings with the config.
func (d *Deployer) checkDrift(ctx context.Context) []string {
	live, drifts, err := balancer.LiveDrift(ctx, d.bal, d.cfg.Balancer)
	if errors.Is(err, balancer.ErrNoView) {
		d.emit(Event{Step: stepPreflight, Message: "balancer.kind none: no balancer view, direct health checks only"})
		return nil
	}
	if err != nil {
		return []string{fmt.Sprintf("read the live balancer settings: %v", err)}
	}
	if len(drifts) == 0 {
		return nil
	}
	var reasons []string
	if !d.opts.AcceptDrift {
		for _, dr := range drifts {
			reasons = append(reasons, fmt.Sprintf("balancer drift: %s (restart the balancer from this config, "+
				"change the config to match, or pass --accept-drift)", dr))
		}
		return reasons
	}
	for _, dr := range drifts {
		d.emit(Event{Step: stepPreflight, Message: "drift accepted: " + dr.String()})
	}
	liveCfg := *d.cfg
	liveCfg.Balancer.BalancerNumbers = d.cfg.Balancer.Overlay(live.BalancerNumbers, live.Reported)
	for _, v := range invariants.Check(&liveCfg) {
		reasons = append(reasons, "with the live balancer's numbers, invariant "+v.Error())
	}
	if len(reasons) == 0 {
		// The deploy runs on what the balancer does, not on what the config said it would: an
		// ALB that holds a target draining 8s while the config says 1s must be waited out 8s
		// before the stop signal, here and in every host's step (configFor sends d.cfg).
		d.cfg = &liveCfg
		d.checkTimeout = checkTimeoutOf(&liveCfg)
		d.emit(Event{Step: stepPreflight, Message: "drift accepted: the deploy waits, checks and bakes by the live balancer's numbers"})
	}
	return reasons
}

// look reads host h's state: its running instances, its published spec, whether it serves.
func (d *Deployer) look(ctx context.Context, h config.Host, version string) (hostView, error) {
	if h.SSH != "" {
		return d.remoteView(ctx, h, version) // read on the host over ssh (remote.go)
	}
	var v hostView
	rt := d.runtimes[h.Name]
	published, err := spec.Read(spec.Path(d.cfg.HostStateDir(h)))
	switch {
	case errors.Is(err, spec.ErrNone), errors.Is(err, spec.ErrCorrupt): // its step sets a corrupt one aside
	case err != nil:
		return v, fmt.Errorf("host %s: %w", h.Name, err)
	default:
		v.inProgress = published.Version == version
		v.from = published.Version
		if prev, err := spec.Read(filepath.Join(d.cfg.HostStateDir(h), previousFileName)); v.inProgress && err == nil && prev.Version != version {
			v.previous = prev.Version
		}
	}
	svc, balanced := d.cfg.BalancedService()
	names := []string{svc.Name}
	if !balanced {
		names = names[:0]
		for _, s := range d.cfg.Services {
			names = append(names, s.Name)
		}
	}
	for _, name := range names {
		insts, err := running(ctx, rt, h.Name, name)
		if err != nil {
			return v, err
		}
		if len(insts) > 0 {
			v.instance = true
			v.from = insts[0].Version // what runs beats what was published
		}
	}
	if !v.instance {
		v.detail = "no running instance"
		return v, nil
	}
	if !balanced {
		v.serving, v.detail = true, "running (no service with a port to check)"
		return v, nil
	}
	v.target = d.currentTarget(ctx, h, svc)
	v.serving, v.detail = d.servingAt(ctx, h, svc, v.target)
	return v, nil
}

// serving reports whether the balanced service on h answers its health check directly and is
// in rotation at the balancer, and if not, says what each one said. It has the balancer's
// patience: a target that fails is looked at again until the balancer's own detection plus
// recovery plus one check have passed (interval × (unhealthy_threshold + healthy_threshold + 1)),
// so one check that timed out on a loaded machine neither refuses a deploy nor counts a healthy
// host as down.
func (d *Deployer) serving(ctx context.Context, h config.Host, svc config.Service) (bool, string) {
	return d.servingAt(ctx, h, svc, "")
}

// servingAt is serving with svc's target on h known (a host over ssh says it in its look, or
// its step in its report); empty: currentTarget.
func (d *Deployer) servingAt(ctx context.Context, h config.Host, svc config.Service, target string) (bool, string) {
	deadline := d.clock.Now().Add(d.patience())
	for {
		ok, detail := d.servingNow(ctx, h, svc, target)
		if ok || !d.clock.Now().Before(deadline) || d.sleep(ctx, d.pollEvery()) != nil {
			return ok, detail
		}
	}
}

// patience is how long a failing look at a target that should serve is repeated before it
// counts: the balancer's detection plus its recovery plus one check.
func (d *Deployer) patience() time.Duration {
	return d.cfg.Balancer.Detection() + d.cfg.Balancer.Recovery() + d.cfg.Balancer.Interval
}

// servingNow is one look of serving, at target (empty: currentTarget).
func (d *Deployer) servingNow(ctx context.Context, h config.Host, svc config.Service, target string) (bool, string) {
	if target == "" {
		target = d.currentTarget(ctx, h, svc)
	}
	_, direct := d.checkHealth(ctx, target, svc.Health.Rule())
	var problems []string
	if direct != nil {
		problems = append(problems, fmt.Sprintf("target %s: direct %s: %v", target, svc.Health.Path, direct))
	}
	if d.view {
		st, err := d.bal.TargetState(ctx, target)
		switch {
		case err != nil:
			problems = append(problems, fmt.Sprintf("target %s: %v", target, err))
		case !st.InRotation:
			problems = append(problems, fmt.Sprintf("target %s: balancer says %s since %s (%s ago)", target, st.State,
				st.Since.Format("15:04:05.000"), report.Round(d.clock.Now().Sub(st.Since))))
		}
	}
	if len(problems) > 0 {
		return false, strings.Join(problems, "; ")
	}
	return true, "target " + target + " healthy and in rotation"
}

// currentTarget is where svc answers on host h now: the address of its running instance (a
// start-first service moves between its two ports), else its first port. A host over ssh has no
// runtime here: its look says its target (knownTarget).
func (d *Deployer) currentTarget(ctx context.Context, h config.Host, svc config.Service) string {
	if t, ok := d.remoteTargets.Load(h.Name); ok && h.SSH != "" {
		return t.(string)
	}
	if rt := d.runtimes[h.Name]; rt != nil && len(svc.Ports) == 2 {
		if insts, err := running(ctx, rt, h.Name, svc.Name); err == nil && len(insts) > 0 && insts[0].Address != "" {
			return insts[0].Address
		}
	}
	return h.ServiceAddr(svc)
}

// noteRemoteTarget keeps target, said by host h over ssh (its look, its step's report), as where
// svc answers there now, for currentTarget; one that is not h's own is ignored (knownTarget).
func (d *Deployer) noteRemoteTarget(h config.Host, svc config.Service, target string) {
	if t := knownTarget(h, svc, target); t != "" && h.SSH != "" {
		d.remoteTargets.Store(h.Name, t)
	}
}

// knownTarget is target, said by host h (its look or its step's report) for svc, when it is one
// of the addresses svc may answer on there, else "" (currentTarget then): a host cannot have the
// deployer check, or drain, an address that is not its own.
func knownTarget(h config.Host, svc config.Service, target string) string {
	if target != "" && slices.Contains(h.ServiceAddrs(svc), target) {
		return target
	}
	return ""
}

// batchLeavesHealthy is invariant I8 on the live fleet for the batch of hosts [start, end):
// draining its serving hosts must leave at least one healthy target. At preflight (views set)
// hosts of earlier batches count as healthy, since they will be by the time this batch drains.
// Under start-first an old target leaves only once its successor is in rotation, so only the
// batch's rollout.max_unavailable hosts that drain early count.
func (d *Deployer) batchLeavesHealthy(ctx context.Context, version string, start, end int, views []hostView) error {
	if d.cfg.Rollout.Strategy == config.StartFirst && !d.opts.Naive {
		end = min(end, start+d.cfg.Rollout.MaxUnavailable)
		if end <= start {
			return nil // no batch drains the last one
		}
	}
	svc, balanced := d.cfg.BalancedService()
	drained, healthy := 0, 0
	serves := make([]bool, len(d.cfg.Hosts))
	d.eachHost(hostIndexes(len(d.cfg.Hosts)), func(i int) {
		h := d.cfg.Hosts[i]
		if views != nil {
			serves[i] = views[i].serving || i < start
		} else if balanced {
			serves[i], _ = d.serving(ctx, h, svc)
		} else {
			v, err := d.look(ctx, h, version)
			serves[i] = err == nil && v.serving
		}
	})
	for i := range d.cfg.Hosts {
		if !serves[i] {
			continue
		}
		healthy++
		if i >= start && i < end && (views == nil || views[i].serving) {
			drained++
		}
	}
	if drained == 0 {
		return nil
	}
	v := invariants.BatchLeavesHealthy(drained, healthy)
	if v.Status == invariants.Violated {
		return fmt.Errorf("invariant I8: draining %s (%d serving) with %d healthy targets in all (%s): %s",
			hostNames(d.cfg.Hosts[start:end]), drained, healthy, v.Arithmetic, v.Sentence)
	}
	if views != nil && start > 0 {
		return nil // a later batch's drain is guarded when it comes (deploy calls this again)
	}
	return d.failOpenGuard(ctx, start, end, views)
}

// failOpenGuard asks a balancer that guards drains (DrainGuarder: the ALB) about every serving
// host of the batch [start, end) before it drains: never drain a target unless every other
// target is healthy, since an ALB with no healthy target routes to all of them.
func (d *Deployer) failOpenGuard(ctx context.Context, start, end int, views []hostView) error {
	g, ok := d.bal.(balancer.DrainGuarder)
	svc, balanced := d.cfg.BalancedService()
	if !ok || !balanced || d.opts.Naive {
		return nil
	}
	var errs []error
	for i := start; i < end; i++ {
		h := d.cfg.Hosts[i]
		if views != nil && !views[i].serving {
			continue // not running: nothing to drain
		}
		if views == nil {
			if serving, _ := d.serving(ctx, h, svc); !serving {
				continue
			}
		}
		target := d.currentTarget(ctx, h, svc)
		if views != nil && views[i].target != "" {
			target = views[i].target
		}
		if err := g.DrainGuard(ctx, target); err != nil {
			errs = append(errs, fmt.Errorf("fail-open guard, host %s: %w", h.Name, err))
		}
	}
	return errors.Join(errs...)
}

// checkDrainModes refuses services with drain: balancer behind a balancer the deployer cannot
// change (kind none): nobody would take their target out of rotation.
func (d *Deployer) checkDrainModes() []string {
	if _, ok := d.bal.(balancer.Rotation); ok || d.opts.Naive {
		return nil
	}
	var reasons []string
	for i, svc := range d.cfg.Services {
		if svc.Drain == config.DrainBalancer {
			reasons = append(reasons, fmt.Sprintf("services[%d].drain: balancer: %s cannot take a target out of rotation; "+
				"use balancer.kind inhouse or alb, or drain: handshake for a service that answers 503 on health while it drains", i, d.bal.Name()))
		}
	}
	return reasons
}

// checkStateDirsShared refuses two hosts of the fleet whose specs would be published in one state
// dir of one machine (both local, or both over the same ssh target, with no hosts[].state_dir of
// their own or the same one): each deploy of one would overwrite the other's spec, and its
// watchdog would refuse the spec published for the other host on every tick.
func (d *Deployer) checkStateDirsShared() []string {
	var reasons []string
	first := map[[2]string]string{} // (ssh target, state dir) → the host that has it
	for _, h := range d.cfg.Hosts {
		key := [2]string{h.SSH, filepath.Clean(d.cfg.HostStateDir(h))}
		if other, ok := first[key]; ok {
			where := "this machine"
			if h.SSH != "" {
				where = "ssh " + h.SSH
			}
			reasons = append(reasons, fmt.Sprintf("hosts %s and %s have one state dir %s on %s: each would publish its spec over the "+
				"other's, and its watchdog refuse the other's; give each its own hosts[].state_dir", other, h.Name, key[1], where))
			continue
		}
		first[key] = h.Name
	}
	return reasons
}

// checkHostsWritable takes and releases every local host's lock (waiting for a holder up to the
// lock timeout, as a host step would) and writes a probe file in its state dir, so a held lock or
// an unwritable state dir refuses the deploy before the first host is touched, not after earlier
// hosts changed.
func (d *Deployer) checkHostsWritable(ctx context.Context, version string) []string {
	var reasons []string
	for _, h := range d.cfg.Hosts {
		if h.SSH != "" {
			continue // checked on the host by its own step
		}
		dir := d.cfg.HostStateDir(h)
		if err := trust.MkdirAll(dir, spec.DirMode, os.Getuid()); err != nil {
			reasons = append(reasons, fmt.Sprintf("host %s: state dir %s cannot be created: %v; fix its permissions or set hosts[].state_dir", h.Name, dir, err))
			continue
		}
		f, err := os.CreateTemp(dir, ".preflight-*")
		if err != nil {
			reasons = append(reasons, fmt.Sprintf("host %s: state dir %s is not writable: %v; the spec is published there: fix its permissions or set hosts[].state_dir", h.Name, dir, err))
			continue
		}
		f.Close()
		os.Remove(f.Name())
		l, err := d.takeLock(ctx, h, version)
		if err != nil {
			reasons = append(reasons, err.Error())
			continue
		}
		l.Release()
	}
	return reasons
}
