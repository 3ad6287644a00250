package balancer_test

import (
	"context"
	"errors"
	"net"
	"strings"
	"testing"
	"time"

	"github.com/zero502/zero502/deployer/balancer"
	"github.com/zero502/zero502/infra/config"
)

// TestTierOfTwoRealLBs drives two real in-house LB instances as one balancer: a target is in
// rotation only when both have it in, a drain reaches both, and it is drained only when both
// say so.
func TestTierOfTwoRealLBs(t *testing.T) {
	t.Parallel()
	app := healthyApp(t)
	lb1, a := inHouseLB(t, app)
	lb2, b := inHouseLB(t, app)
	tier := balancer.Tier{a, b}
	ctx := context.Background()
	if !strings.Contains(tier.Name(), lb1.AdminAddr()) || !strings.Contains(tier.Name(), lb2.AdminAddr()) {
		t.Errorf("Name %q: want both admin addresses", tier.Name())
	}
	waitFor(t, 5*time.Second, "the app in rotation at both", func() (bool, error) {
		st, err := tier.TargetState(ctx, app)
		return st.InRotation, err
	})

	// Drained at one instance only: out of rotation for the tier, named after that instance.
	if err := a.Drain(ctx, app); err != nil {
		t.Fatal(err)
	}
	st, err := tier.TargetState(ctx, app)
	if err != nil || st.InRotation || st.State != "draining" {
		t.Fatalf("drained at the first only: %+v, %v; want draining and out of rotation", st, err)
	}
	if err := a.Add(ctx, app); err != nil {
		t.Fatal(err)
	}
	if _, _, err := lb1.AddBackend(app); err != nil {
		t.Fatal(err)
	}
	waitFor(t, 5*time.Second, "the app back in rotation at both", func() (bool, error) {
		st, err := tier.TargetState(ctx, app)
		return st.InRotation, err
	})
	if err := b.Drain(ctx, app); err != nil {
		t.Fatal(err)
	}
	st, err = tier.TargetState(ctx, app)
	if err != nil || st.InRotation || !strings.Contains(st.State, lb2.AdminAddr()) {
		t.Fatalf("drained at the second only: %+v, %v; want out of rotation, naming %s", st, err, lb2.AdminAddr())
	}

	// The tier's own drain reaches both, and it is drained when both say so.
	if err := tier.Drain(ctx, app); err != nil {
		t.Fatal(err)
	}
	for _, one := range []*balancer.InHouse{a, b} {
		if st, err := one.TargetState(ctx, app); err != nil || st.InRotation {
			t.Errorf("%s after the tier's drain: %+v, %v", one.Name(), st, err)
		}
	}
	waitFor(t, 5*time.Second, "drained at both", func() (bool, error) { return tier.Drained(ctx, app) })
	if err := tier.Remove(ctx, app); err != nil {
		t.Fatal(err)
	}
	for _, one := range []*balancer.InHouse{a, b} {
		if _, err := one.TargetState(ctx, app); err == nil {
			t.Errorf("%s still knows %s after the tier removed it", one.Name(), app)
		}
	}
}

// TestTierComparesEveryInstancesSettings: instances of one tier must run the config's numbers;
// the second one's drift is named after it.
func TestTierComparesEveryInstancesSettings(t *testing.T) {
	t.Parallel()
	app := healthyApp(t)
	_, a := inHouseLB(t, app)
	_, b := inHouseLB(t, app)
	live, err := a.Settings(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	cfg := config.Defaults().Balancer
	cfg.Listen, cfg.HealthPath, cfg.Interval, cfg.Timeout = live.Listen, live.HealthPath, live.Interval, live.Timeout
	cfg.UnhealthyThreshold, cfg.HealthyThreshold = live.UnhealthyThreshold, live.HealthyThreshold
	cfg.IdleTimeout, cfg.ConnectTimeout, cfg.HeaderTimeout, cfg.MaxHeaderBytes = live.IdleTimeout, live.ConnectTimeout, live.HeaderTimeout, live.MaxHeaderBytes
	cfg.Interval = 3 * time.Second // both LBs check every 100ms: both drift, each named
	_, drifts, err := balancer.LiveDrift(context.Background(), balancer.Tier{a, b}, cfg)
	if err != nil {
		t.Fatal(err)
	}
	var first, second bool
	for _, d := range drifts {
		if d.Field == "balancer.interval" {
			first = true
		}
		if d.Field == "balancer.interval ("+b.Name()+")" {
			second = true
		}
		if strings.HasPrefix(d.Field, "balancer.listen") {
			t.Errorf("drift %v: instances of a tier listen on their own addresses; listen is not compared", d)
		}
	}
	if !first || !second {
		t.Errorf("drifts %v: want balancer.interval for the first instance and for %s", drifts, b.Name())
	}
}

// TestTierDrainReachesAnInstanceAfterOneThatForgotTheTarget: the first instance does not know
// the target (restarted, or its config predates it) but the second has it in rotation; the
// tier's drain must still reach the second, and only a target no instance knows is unknown.
func TestTierDrainReachesAnInstanceAfterOneThatForgotTheTarget(t *testing.T) {
	t.Parallel()
	app, other := healthyApp(t), healthyApp(t)
	_, a := inHouseLB(t, other) // does not know app
	_, b := inHouseLB(t, app)
	ctx := context.Background()
	waitFor(t, 5*time.Second, "the app in rotation at the second", func() (bool, error) {
		st, err := b.TargetState(ctx, app)
		return st.InRotation, err
	})
	if err := (balancer.Tier{a, b}).Drain(ctx, app); err != nil {
		t.Errorf("tier drain of a target only the second knows: %v, want nil", err)
	}
	if st, err := b.TargetState(ctx, app); err != nil || st.InRotation || st.State != "draining" {
		t.Fatalf("%s after the tier's drain: %+v, %v; want draining, out of rotation (the first instance did not know it)", b.Name(), st, err)
	}
	_, c := inHouseLB(t, other)
	err := (balancer.Tier{a, c}).Drain(ctx, app)
	if !errors.Is(err, balancer.ErrUnknownTarget) {
		t.Errorf("tier drain of a target no instance knows: %v, want ErrUnknownTarget", err)
	}
}

// adminWeight is target's weight as the LB behind admin reports it (0: not there).
func adminWeight(t *testing.T, admin *balancer.InHouse, target string) int {
	t.Helper()
	o, err := admin.Outcomes(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	if sts := o[target]; len(sts) > 0 {
		return sts[0].Weight
	}
	return 0
}

// TestTierSetWeightAsksEveryInstance: an instance that fails does not keep the weight from the
// next one, and its failure names it; one that does not know the target is harmless while
// another does.
func TestTierSetWeightAsksEveryInstance(t *testing.T) {
	t.Parallel()
	app, other := healthyApp(t), healthyApp(t)
	_, a := inHouseLB(t, app, other)
	_, forgot := inHouseLB(t, other)
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	gone := ln.Addr().String()
	_ = ln.Close()
	dead := balancer.NewInHouse(gone, "")
	ctx := context.Background()

	err = (balancer.Tier{dead, a}).SetWeight(ctx, app, 7)
	if err == nil || !strings.Contains(err.Error(), gone) || errors.Is(err, balancer.ErrUnknownTarget) {
		t.Errorf("set the weight with the first instance down: %v, want an error naming %s, not ErrUnknownTarget", err, gone)
	}
	if w := adminWeight(t, a, app); w != 7 {
		t.Errorf("weight at %s after the tier set it, its first instance down: %d, want 7", a.Name(), w)
	}
	if err := (balancer.Tier{forgot, a}).SetWeight(ctx, app, 9); err != nil {
		t.Errorf("set the weight with the first instance not knowing the target: %v, want nil", err)
	}
	if w := adminWeight(t, a, app); w != 9 {
		t.Errorf("weight at %s after the tier set it, its first instance not knowing it: %d, want 9", a.Name(), w)
	}
	err = (balancer.Tier{forgot, dead, a}).SetWeight(ctx, app, 11)
	if err == nil || errors.Is(err, balancer.ErrUnknownTarget) {
		t.Errorf("set the weight with one instance down and one not knowing it: %v, want the failure, not ErrUnknownTarget", err)
	}
	if err := (balancer.Tier{forgot, forgot}).SetWeight(ctx, app, 9); !errors.Is(err, balancer.ErrUnknownTarget) {
		t.Errorf("set the weight of a target no instance knows: %v, want ErrUnknownTarget", err)
	}
}

// A tier's outcomes keep one entry per instance in the instances' order, an empty one where an
// instance does not have the target: the nth entries of two snapshots are one instance's, so an
// instance that gains or loses the target between them does not pair the others' wrongly.
func TestTierOutcomesKeepOneEntryPerInstance(t *testing.T) {
	t.Parallel()
	app, other := healthyApp(t), healthyApp(t)
	_, a := inHouseLB(t, other) // does not know app
	_, b := inHouseLB(t, app)
	o, err := (balancer.Tier{a, b}).Outcomes(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	if sts := o[app]; len(sts) != 2 || sts[0].Address != "" || sts[1].Address != app {
		t.Fatalf("outcomes of %s: %+v; want two entries, the first instance's empty, the second's for it", app, sts)
	}
	if sts := o[other]; len(sts) != 2 || sts[0].Address != other || sts[1].Address != "" {
		t.Fatalf("outcomes of %s: %+v; want two entries, the first instance's for it, the second's empty", other, sts)
	}
}
