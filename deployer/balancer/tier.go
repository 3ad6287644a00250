package balancer

import (
	"context"
	"errors"
	"fmt"
	"strings"

	"github.com/zero502/zero502/infra/adminapi"
	"github.com/zero502/zero502/infra/config"
)

// Tier is several instances of one balancer seen as one: the LB instances in front of an app
// (balancer.kind inhouse with balancer.admins), or the edges in front of the LB instances
// (balancer.kind edges). A target is in rotation only when every instance has it in; Add, Drain
// and Remove go to every instance; a target is drained when every instance says so. Every
// instance must be a Rotation.
type Tier []Balancer

var (
	_ Balancer = Tier(nil)
	_ Rotation = Tier(nil)
)

// Name lists the instances.
func (t Tier) Name() string {
	names := make([]string, len(t))
	for i, b := range t {
		names[i] = b.Name()
	}
	return strings.Join(names, " + ")
}

// TargetState is in rotation only when every instance has target in rotation; otherwise it is
// the first instance's state that keeps it out, named after that instance.
func (t Tier) TargetState(ctx context.Context, target string) (TargetState, error) {
	var all TargetState
	for i, b := range t {
		st, err := b.TargetState(ctx, target)
		if err != nil {
			return TargetState{}, err
		}
		switch {
		case i == 0:
			all = st
		case all.InRotation && !st.InRotation:
			all = TargetState{State: st.State + " at " + b.Name(), Since: st.Since}
		case all.InRotation == st.InRotation && st.Since.After(all.Since):
			all.Since = st.Since
		}
	}
	return all, nil
}

// Outcomes are every instance's, a target's entries in the instances' order, one per instance
// that publishes outcomes: where that instance does not have the target, its entry is the zero
// BackendStatus (no Address), so the nth entry of two snapshots is always the same instance's.
// An instance that publishes none adds nothing, and a tier none of whose instances does has
// ErrNoView.
func (t Tier) Outcomes(ctx context.Context) (Outcomes, error) {
	var each []Outcomes
	for _, b := range t {
		ov, ok := b.(OutcomeViewer)
		if !ok {
			continue
		}
		o, err := ov.Outcomes(ctx)
		if errors.Is(err, ErrNoView) {
			continue
		}
		if err != nil {
			return nil, err
		}
		each = append(each, o)
	}
	if len(each) == 0 {
		return nil, fmt.Errorf("no instance of %s publishes outcomes: %w", t.Name(), ErrNoView)
	}
	out := Outcomes{}
	for i, o := range each {
		for addr, sts := range o {
			if out[addr] == nil {
				out[addr] = make([]adminapi.BackendStatus, 0, len(each))
			}
			for len(out[addr]) < i { // the instances before this one do not have it
				out[addr] = append(out[addr], adminapi.BackendStatus{})
			}
			out[addr] = append(out[addr], sts...)
		}
	}
	for addr := range out {
		for len(out[addr]) < len(each) {
			out[addr] = append(out[addr], adminapi.BackendStatus{})
		}
	}
	return out, nil
}

// SetWeight sets target's weight at every instance that weighs targets (Weighter): it asks each
// one, even after another failed (a weight left at one instance stays there until set again),
// and returns their failures joined, each named after its instance (tierResult).
func (t Tier) SetWeight(ctx context.Context, target string, weight int) error {
	var errs []error
	for _, b := range t {
		w, ok := b.(Weighter)
		if !ok {
			continue
		}
		err := w.SetWeight(ctx, target, weight)
		if errors.Is(err, ErrNoView) {
			continue
		}
		if err != nil {
			err = fmt.Errorf("set the weight of %s to %d at %s: %w", target, weight, b.Name(), err)
		}
		errs = append(errs, err)
	}
	if len(errs) == 0 {
		return fmt.Errorf("no instance of %s weighs targets: %w", t.Name(), ErrNoView)
	}
	return tierResult(errs)
}

// tierResult is the outcome of one change asked of several instances, errs holding each one's
// answer (nil: done). An instance that does not know the target (ErrUnknownTarget) is harmless
// while another took the change: the result wraps ErrUnknownTarget only when every instance
// said so, for callers treat that as nothing to change anywhere. Any other failures are
// joined, without the unknown ones, so no caller takes them for harmless.
func tierResult(errs []error) error {
	var failed, unknown []error
	for _, err := range errs {
		switch {
		case err == nil:
		case errors.Is(err, ErrUnknownTarget):
			unknown = append(unknown, err)
		default:
			failed = append(failed, err)
		}
	}
	switch {
	case len(failed) > 0:
		return errors.Join(failed...)
	case len(unknown) == len(errs):
		return errors.Join(unknown...) // nil for no instance
	}
	return nil
}

// Settings are the first instance's, without its listen address (each instance listens on its
// own); LiveDrift compares every instance's with the config.
func (t Tier) Settings(ctx context.Context) (Settings, error) {
	if len(t) == 0 {
		return Settings{}, fmt.Errorf("a tier of no balancer: %w", ErrNoView)
	}
	s, err := t[0].Settings(ctx)
	s.Listen = ""
	return s, err
}

// drift is every setting of every instance that differs from the config, those of the second
// and later instances named after them (instances of one tier must run the same numbers), with
// the first instance's settings. Instances without live settings (edges) are skipped; a tier
// where none has them wraps ErrNoView.
func (t Tier) drift(ctx context.Context, cfg config.Balancer) (Settings, []config.Drift, error) {
	var first Settings
	var out []config.Drift
	seen := false
	for i, b := range t {
		live, err := b.Settings(ctx)
		if errors.Is(err, ErrNoView) {
			continue
		}
		if err != nil {
			return Settings{}, nil, err
		}
		live.Listen = "" // each instance listens on its own address
		if !seen {
			first, seen = live, true
		}
		for _, d := range live.Drift(cfg) {
			if i > 0 {
				d.Field += " (" + b.Name() + ")"
			}
			out = append(out, d)
		}
	}
	if !seen {
		return Settings{}, nil, fmt.Errorf("%s: %w", t.Name(), ErrNoView)
	}
	return first, out, nil
}

// each asks do of every instance, even after another failed or did not know the target: an
// instance asked nothing keeps a target in rotation (or out) that the rest changed. Its errors
// are tierResult's: ErrUnknownTarget only when no instance knows the target.
func (t Tier) each(ctx context.Context, what string, do func(Rotation) error) error {
	errs := make([]error, 0, len(t))
	for _, b := range t {
		rot, ok := b.(Rotation)
		if !ok {
			errs = append(errs, fmt.Errorf("%s: %s cannot change its rotation; list only LB instances or edges in the tier", what, b.Name()))
			continue
		}
		if err := do(rot); err != nil {
			errs = append(errs, fmt.Errorf("%s at %s: %w", what, b.Name(), err))
			continue
		}
		errs = append(errs, nil)
	}
	return tierResult(errs)
}

// Add adds target at every instance.
func (t Tier) Add(ctx context.Context, target string) error {
	return t.each(ctx, "add "+target, func(r Rotation) error { return r.Add(ctx, target) })
}

// Drain drains target at every instance.
func (t Tier) Drain(ctx context.Context, target string) error {
	return t.each(ctx, "drain "+target, func(r Rotation) error { return r.Drain(ctx, target) })
}

// Remove removes target at every instance.
func (t Tier) Remove(ctx context.Context, target string) error {
	return t.each(ctx, "remove "+target, func(r Rotation) error { return r.Remove(ctx, target) })
}

// Drained is true when every instance has nothing in flight to target.
func (t Tier) Drained(ctx context.Context, target string) (bool, error) {
	all := true
	err := t.each(ctx, "drained "+target, func(r Rotation) error {
		ok, err := r.Drained(ctx, target)
		all = all && ok
		return err
	})
	return all && err == nil, err
}

// tierFor builds the balancer of one instance or a Tier of several.
func tierFor(addrs []string, one func(addr string) Balancer) Balancer {
	if len(addrs) == 1 {
		return one(addrs[0])
	}
	t := make(Tier, len(addrs))
	for i, a := range addrs {
		t[i] = one(a)
	}
	return t
}
