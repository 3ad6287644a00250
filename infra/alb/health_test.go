package alb_test

import (
	"context"
	"errors"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	elbv2 "github.com/aws/aws-sdk-go-v2/service/elasticloadbalancingv2"
	"github.com/aws/aws-sdk-go-v2/service/elasticloadbalancingv2/types"

	"github.com/zero502/zero502/infra/alb"
	"github.com/zero502/zero502/infra/alb/elbv2double"
	"github.com/zero502/zero502/infra/config"
	"github.com/zero502/zero502/internal/testrig/albtest"
)

// sourceNumbers is a target group already provisioned with the source's numbers: every 5s,
// unhealthy after 2 failures, healthy after 2 successes, 30s deregistration delay.
var sourceNumbers = elbv2double.Settings{
	HealthCheckPath: "/health", Interval: 5 * time.Second, Timeout: 2 * time.Second,
	HealthyThreshold: 2, UnhealthyThreshold: 2, Matcher: "200", DeregistrationDelay: 30 * time.Second,
}

func wantState(t *testing.T, b *alb.Balancer, target, state, reason string) {
	t.Helper()
	got, gotReason, err := b.TargetHealth(context.Background(), target)
	if err != nil {
		t.Fatalf("TargetHealth(%s): %v", target, err)
	}
	if got != state || reason != "" && gotReason != reason {
		t.Fatalf("target %s is %s (%s), want %s (%s)", target, got, gotReason, state, reason)
	}
}

func TestTargetHealthFollowsTheHealthEndpointByTheThresholds(t *testing.T) {
	f := newFixture(t, sourceNumbers)
	b := alb.NewBalancer(f.api, f.arn)
	app := newBackend(t)
	f.register(t, app.addr())

	wantState(t, b, app.addr(), alb.StateInitial, "Elb.RegistrationInProgress")
	f.step(t)
	wantState(t, b, app.addr(), alb.StateInitial, "Elb.InitialHealthChecking") // 1 of 2 good checks
	f.step(t)
	wantState(t, b, app.addr(), alb.StateHealthy, "")

	app.status.Store(http.StatusServiceUnavailable) // the drain handshake: /health answers 503
	f.step(t)
	wantState(t, b, app.addr(), alb.StateHealthy, "") // 1 of 2 failures: still in rotation
	f.step(t)
	wantState(t, b, app.addr(), alb.StateUnhealthy, "Target.ResponseCodeMismatch")
	if !f.double.FailOpen(f.arn) {
		t.Fatal("its only target is unhealthy but the target group does not report failing open")
	}

	app.status.Store(http.StatusOK)
	f.step(t)
	wantState(t, b, app.addr(), alb.StateUnhealthy, "")
	f.step(t)
	wantState(t, b, app.addr(), alb.StateHealthy, "")
	if f.double.FailOpen(f.arn) {
		t.Fatal("still failing open with a healthy target")
	}
}

func TestAStoppedBackendIsUnhealthyWithFailedHealthChecks(t *testing.T) {
	f := newFixture(t, sourceNumbers)
	b := alb.NewBalancer(f.api, f.arn)
	app := newBackend(t)
	f.register(t, app.addr())
	f.step(t)
	f.step(t)
	wantState(t, b, app.addr(), alb.StateHealthy, "")
	app.srv.Close() // the server left before the traffic did: connection refused
	f.step(t)
	f.step(t)
	wantState(t, b, app.addr(), alb.StateUnhealthy, "Target.FailedHealthChecks")
}

func TestFailOpenGuardNeverDrainsUnlessEveryOtherTargetIsHealthy(t *testing.T) {
	f := newFixture(t, sourceNumbers)
	ctx := context.Background()
	b := alb.NewBalancer(f.api, f.arn)
	one, two := newBackend(t), newBackend(t)
	f.register(t, one.addr())

	if ok, err := b.AllOthersHealthy(ctx, one.addr()); err != nil || ok {
		t.Fatalf("only target: AllOthersHealthy = %v, %v; want false (draining it leaves none)", ok, err)
	}
	f.register(t, two.addr())
	if ok, _ := b.AllOthersHealthy(ctx, one.addr()); ok {
		t.Fatal("the other target is still initial, yet AllOthersHealthy is true")
	}
	f.step(t)
	f.step(t)
	if ok, err := b.AllOthersHealthy(ctx, one.addr()); err != nil || !ok {
		t.Fatalf("both healthy: AllOthersHealthy = %v, %v; want true", ok, err)
	}

	two.status.Store(http.StatusServiceUnavailable)
	f.step(t)
	f.step(t)
	if ok, err := b.AllOthersHealthy(ctx, one.addr()); err != nil || ok {
		t.Fatalf("other unhealthy: AllOthersHealthy = %v, %v; want false", ok, err)
	}
	err := b.DrainGuard(ctx, one.addr())
	if !errors.Is(err, alb.ErrOthersNotHealthy) || !strings.Contains(err.Error(), two.addr()+" is unhealthy") {
		t.Fatalf("DrainGuard: %v", err)
	}
	if f.double.FailOpen(f.arn) {
		t.Fatal("failing open while one target is healthy")
	}

	// Had the guard been ignored: both unhealthy, and the ALB routes to both of them.
	one.status.Store(http.StatusServiceUnavailable)
	f.step(t)
	f.step(t)
	if !f.double.FailOpen(f.arn) {
		t.Fatal("all targets unhealthy but the target group does not fail open")
	}
	if routes := f.double.Routes(f.arn); !slices.Equal(routes, sorted(one.addr(), two.addr())) {
		t.Fatalf("fail-open routes %v, want both targets", routes)
	}
}

func TestDeregisteredTargetDrainsForTheDeregistrationDelay(t *testing.T) {
	f := newFixture(t, sourceNumbers)
	ctx := context.Background()
	b := alb.NewBalancer(f.api, f.arn)
	app := newBackend(t)
	f.register(t, app.addr())
	f.step(t)
	f.step(t)

	if _, err := f.api.DeregisterTargets(ctx, &elbv2.DeregisterTargetsInput{
		TargetGroupArn: aws.String(f.arn), Targets: []types.TargetDescription{albtest.Target(t, app.addr())},
	}); err != nil {
		t.Fatal(err)
	}
	wantState(t, b, app.addr(), alb.StateDraining, "Target.DeregistrationInProgress")
	f.clock.Advance(29 * time.Second)
	wantState(t, b, app.addr(), alb.StateDraining, "")
	f.clock.Advance(time.Second)
	wantState(t, b, app.addr(), alb.StateUnused, "Target.NotRegistered")
	if all, err := b.Targets(ctx); err != nil || len(all) != 0 {
		t.Fatalf("targets after the delay: %v, %v; want none", all, err)
	}
}

func TestTargetIDIsTheHostsTargetOnTheServicePort(t *testing.T) {
	svc := config.Service{Name: "api", Port: 8000}
	for _, tc := range []struct {
		host config.Host
		want string
	}{
		{config.Host{Address: "app-1.internal", Target: "i-0a1b2c3d4e5f60001"}, "i-0a1b2c3d4e5f60001:8000"},
		{config.Host{Address: "10.0.1.7"}, "10.0.1.7:8000"},
		{config.Host{Address: "127.0.0.1", PortOffset: 10}, "127.0.0.1:8010"},
	} {
		if got := alb.TargetID(tc.host, svc); got != tc.want {
			t.Errorf("TargetID(%+v) = %s, want %s", tc.host, got, tc.want)
		}
	}
}

func sorted(s ...string) []string { slices.Sort(s); return s }

// A target already draining (a batch before, or a start-first host's old port, deregistered and
// within its delay) is not in the way of the next drain: it gets no new request, and a group that
// fails open routes only to its registered targets. It does not count as a healthy one either.
func TestFailOpenGuardLooksPastTargetsAlreadyDraining(t *testing.T) {
	f := newFixture(t, sourceNumbers)
	ctx := context.Background()
	b := alb.NewBalancer(f.api, f.arn)
	one, two, gone := newBackend(t), newBackend(t), newBackend(t)
	for _, a := range []string{one.addr(), two.addr(), gone.addr()} {
		f.register(t, a)
	}
	f.step(t)
	f.step(t)
	if _, err := f.api.DeregisterTargets(ctx, &elbv2.DeregisterTargetsInput{
		TargetGroupArn: aws.String(f.arn), Targets: []types.TargetDescription{albtest.Target(t, gone.addr())},
	}); err != nil {
		t.Fatal(err)
	}
	wantState(t, b, gone.addr(), alb.StateDraining, "Target.DeregistrationInProgress")
	if err := b.DrainGuard(ctx, one.addr()); err != nil {
		t.Fatalf("one healthy other and one draining: DrainGuard = %v; want nil", err)
	}
	two.status.Store(http.StatusServiceUnavailable)
	f.step(t)
	f.step(t)
	err := b.DrainGuard(ctx, one.addr())
	if !errors.Is(err, alb.ErrOthersNotHealthy) || !strings.Contains(err.Error(), two.addr()+" is unhealthy") || strings.Contains(err.Error(), gone.addr()) {
		t.Fatalf("the other unhealthy, one draining: DrainGuard = %v; want it to name %s only", err, two.addr())
	}
	if _, err := f.api.DeregisterTargets(ctx, &elbv2.DeregisterTargetsInput{
		TargetGroupArn: aws.String(f.arn), Targets: []types.TargetDescription{albtest.Target(t, two.addr())},
	}); err != nil {
		t.Fatal(err)
	}
	if err := b.DrainGuard(ctx, one.addr()); !errors.Is(err, alb.ErrOthersNotHealthy) || !strings.Contains(err.Error(), "no target at all") {
		t.Fatalf("every other target draining: DrainGuard = %v; want no target left", err)
	}
}

// An ALB's health checker does not follow redirects: a 302 is the answer, checked against the
// matcher (Target.ResponseCodeMismatch, "[302]"). A health path that redirects to a page
// answering 200 must read unhealthy, as it would against AWS, not healthy.
func TestAHealthPathThatRedirectsIsNotHealthy(t *testing.T) {
	f := newFixture(t, sourceNumbers)
	b := alb.NewBalancer(f.api, f.arn)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/health" {
			http.Redirect(w, r, "/login", http.StatusFound)
			return
		}
		w.WriteHeader(http.StatusOK)
	}))
	t.Cleanup(srv.Close)
	addr := strings.TrimPrefix(srv.URL, "http://")
	f.register(t, addr)
	f.step(t)
	f.step(t)
	wantState(t, b, addr, alb.StateUnhealthy, "Target.ResponseCodeMismatch")
}
