package alb_test

import (
	"context"
	"errors"
	"net"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/service/elasticloadbalancingv2/types"

	"github.com/zero502/zero502/infra/alb"
	"github.com/zero502/zero502/infra/alb/elbv2double"
	"github.com/zero502/zero502/infra/config"
)

// A target registered through Register starts initial and turns healthy only once the ALB's
// health checker has really requested its health endpoint healthy_threshold times.
func TestRegisterStartsInitialAndTurnsHealthyAfterThresholdRealChecks(t *testing.T) {
	settings := sourceNumbers
	settings.HealthyThreshold = 3
	f := newFixture(t, settings)
	ctx := context.Background()
	b := alb.NewBalancer(f.api, f.arn)
	app := newBackend(t)

	if err := b.Register(ctx, app.addr()); err != nil {
		t.Fatalf("Register(%s): %v", app.addr(), err)
	}
	wantState(t, b, app.addr(), alb.StateInitial, "Elb.RegistrationInProgress")
	for i := 1; i < 3; i++ {
		f.step(t)
		wantState(t, b, app.addr(), alb.StateInitial, "Elb.InitialHealthChecking")
		if n := app.checks.Load(); n != int32(i) {
			t.Fatalf("after %d rounds the backend saw %d health checks, want %d", i, n, i)
		}
	}
	f.step(t)
	wantState(t, b, app.addr(), alb.StateHealthy, "")
	if n := app.checks.Load(); n != 3 {
		t.Fatalf("healthy after %d real health checks, want healthy_threshold 3", n)
	}
	if err := b.Register(ctx, app.addr()); err != nil {
		t.Fatalf("registering a registered target again: %v", err)
	}
	wantState(t, b, app.addr(), alb.StateHealthy, "") // a no-op, as in ELBv2
}

// Deregister drains for the deregistration delay and not a moment less (the double cannot see
// connections, so it never ends a drain early); deregistering what the group does not hold,
// or the same id on another port, changes nothing and is no error.
func TestDeregisterDrainsForTheDelayAndLeavesUnregisteredTargetsAlone(t *testing.T) {
	f := newFixture(t, sourceNumbers)
	ctx := context.Background()
	b := alb.NewBalancer(f.api, f.arn)
	one, two := newBackend(t), newBackend(t)
	if err := b.Register(ctx, one.addr()); err != nil {
		t.Fatal(err)
	}
	if err := b.Register(ctx, two.addr()); err != nil {
		t.Fatal(err)
	}
	f.step(t)
	f.step(t)
	wantState(t, b, two.addr(), alb.StateHealthy, "")

	host, _, _ := net.SplitHostPort(two.addr())
	otherPort := net.JoinHostPort(host, "1") // the same IP on a port nothing registered
	if err := b.Deregister(ctx, otherPort); err != nil {
		t.Fatalf("Deregister(%s), never registered: %v; want no error", otherPort, err)
	}
	wantState(t, b, two.addr(), alb.StateHealthy, "")
	wantState(t, b, otherPort, alb.StateUnused, alb.ReasonNotRegistered)

	if err := b.Deregister(ctx, one.addr()); err != nil {
		t.Fatalf("Deregister(%s): %v", one.addr(), err)
	}
	wantState(t, b, one.addr(), alb.StateDraining, "Target.DeregistrationInProgress")
	checks := one.checks.Load()
	f.step(t) // 5s of the 30s delay
	if one.checks.Load() != checks {
		t.Error("the ALB kept health-checking a draining target")
	}
	f.clock.Advance(25*time.Second - time.Millisecond)
	wantState(t, b, one.addr(), alb.StateDraining, "")
	f.clock.Advance(time.Millisecond)
	wantState(t, b, one.addr(), alb.StateUnused, alb.ReasonNotRegistered)
	if err := b.Deregister(ctx, one.addr()); err != nil {
		t.Fatalf("Deregister(%s) once its drain is over: %v; want no error", one.addr(), err)
	}
	wantState(t, b, two.addr(), alb.StateHealthy, "")
}

// An instance-id target is registered on the port of the service address it stands for (the
// second start-first port included), not on the target group's port, and the ALB checks it
// there.
func TestRegisterAnInstanceTargetOnThePortOfTheAddress(t *testing.T) {
	settings := sourceNumbers
	f := newFixtureOf(t, elbv2double.TargetGroup{Name: "api", Port: 8000, TargetType: "instance", Settings: settings})
	const instance = "i-0a1b2c3d4e5f60001"
	f.double.SetInstanceAddress(instance, "127.0.0.1")
	ctx := context.Background()
	b := alb.NewBalancer(f.api, f.arn)
	app := newBackend(t)
	_, port, _ := net.SplitHostPort(app.addr())

	h := config.Host{Name: "app-1", Address: "app-1.internal", Target: instance}
	id, err := alb.TargetIDAt(h, "app-1.internal:"+port)
	if err != nil || id != instance+":"+port {
		t.Fatalf("TargetIDAt(second port %s) = %q, %v; want %s:%s", port, id, err, instance, port)
	}
	if err := b.Register(ctx, id); err != nil {
		t.Fatalf("Register(%s): %v", id, err)
	}
	all, err := b.Targets(ctx)
	if err != nil || len(all) != 1 || all[0].ID != id {
		t.Fatalf("targets after Register: %v, %v; want only %s (not the group's port 8000)", all, err, id)
	}
	f.step(t)
	f.step(t)
	wantState(t, b, id, alb.StateHealthy, "")
	if app.checks.Load() != 2 {
		t.Fatalf("the backend on port %s saw %d health checks, want 2", port, app.checks.Load())
	}

	err = b.Register(ctx, "127.0.0.1:"+port)
	var invalid *types.InvalidTargetException
	if !errors.As(err, &invalid) || !strings.Contains(err.Error(), "hosts[].target") {
		t.Fatalf("registering an IP in an instance group: %v; want InvalidTarget and the hint to set hosts[].target", err)
	}
	if _, err := alb.TargetIDAt(h, "app-1.internal"); err == nil || !strings.Contains(err.Error(), `"app-1.internal"`) {
		t.Fatalf("TargetIDAt without a port: %v; want an error naming the address", err)
	}
}
