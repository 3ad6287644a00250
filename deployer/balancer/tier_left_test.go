package balancer_test

import (
	"context"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/zero502/zero502/deployer/balancer"
)

// TestTierLeftOnlyWhenOutAtEveryInstance: a target drained at one LB of a tier is out of
// rotation for the tier's TargetState (it is not fully back), but it has not left: the other LB
// still sends it requests, and LeftState names that LB until it takes the target out too.
func TestTierLeftOnlyWhenOutAtEveryInstance(t *testing.T) {
	t.Parallel()
	app := healthyApp(t)
	_, a := inHouseLB(t, app)
	lb2, b := inHouseLB(t, app)
	tier := balancer.Tier{a, b}
	var _ balancer.LeaveViewer = tier
	ctx := context.Background()
	waitFor(t, 5*time.Second, "the app in rotation at both", func() (bool, error) {
		st, err := tier.TargetState(ctx, app)
		return st.InRotation, err
	})
	st, still, err := tier.LeftState(ctx, app)
	if err != nil || !st.InRotation || !slices.Equal(still, []string{a.Name(), b.Name()}) {
		t.Fatalf("in at both: %+v, still %v, %v; want in rotation at both, both named", st, still, err)
	}

	if err := a.Drain(ctx, app); err != nil {
		t.Fatal(err)
	}
	if st, err := tier.TargetState(ctx, app); err != nil || st.InRotation {
		t.Fatalf("TargetState drained at the first only: %+v, %v; want out of rotation (not back at every instance)", st, err)
	}
	st, still, err = tier.LeftState(ctx, app)
	if err != nil || !st.InRotation || !slices.Equal(still, []string{b.Name()}) || !strings.Contains(st.State, lb2.AdminAddr()) {
		t.Fatalf("LeftState drained at the first only: %+v, still %v, %v; want still in rotation at %s", st, still, err, b.Name())
	}

	if err := b.Drain(ctx, app); err != nil {
		t.Fatal(err)
	}
	st, still, err = tier.LeftState(ctx, app)
	if err != nil || st.InRotation || len(still) != 0 || st.State != "draining" {
		t.Fatalf("LeftState drained at both: %+v, still %v, %v; want draining, out of rotation, none named", st, still, err)
	}
}
