package alb_test

import (
	"context"
	"errors"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/service/elasticloadbalancingv2/types"

	"github.com/zero502/zero502/infra/alb"
	"github.com/zero502/zero502/infra/alb/elbv2double"
	"github.com/zero502/zero502/infra/config"
)

func TestProvisionAppliesTheConfigNumbersAndASecondRunChangesNothing(t *testing.T) {
	f := newFixture(t, elbv2double.Settings{}) // AWS defaults: 30s, 5s, 5, 2, "/", 300s
	ctx := context.Background()

	d, err := alb.Provision(ctx, f.api, f.cfg, false)
	if err != nil {
		t.Fatalf("Provision: %v", err)
	}
	var changed []string
	for _, c := range d.Changes() {
		changed = append(changed, c.Key+" "+c.Live+"→"+c.Config)
	}
	want := []string{
		"balancer.health_path /→/health",
		"balancer.interval 30s→5s",
		"balancer.timeout 5s→2s",
		"balancer.healthy_threshold 5→2",
		"balancer.deregistration_delay 5m0s→30s",
	}
	if !slices.Equal(changed, want) {
		t.Fatalf("changes:\n got %q\nwant %q", changed, want)
	}
	if !slices.Equal(d.Calls, []string{"ModifyTargetGroup", "ModifyTargetGroupAttributes"}) {
		t.Fatalf("calls %v", d.Calls)
	}
	s, _ := f.double.Settings(f.arn)
	if s.Interval != 5*time.Second || s.Timeout != 2*time.Second || s.HealthyThreshold != 2 ||
		s.UnhealthyThreshold != 2 || s.HealthCheckPath != "/health" || s.Matcher != "200" ||
		s.DeregistrationDelay != 30*time.Second || s.SlowStart != 0 {
		t.Fatalf("double runs %+v after provision", s)
	}
	if got := f.double.SigningRegions(); !slices.Equal(got, []string{"eu-west-1"}) {
		t.Fatalf("requests signed for regions %v, want balancer.region eu-west-1", got)
	}

	modifies := f.double.ModifyCalls()
	d2, err := alb.Provision(ctx, f.api, f.cfg, false)
	if err != nil {
		t.Fatalf("second Provision: %v", err)
	}
	if !d2.NoChanges() || len(d2.Calls) != 0 || f.double.ModifyCalls() != modifies {
		t.Fatalf("second run: changes %v, calls %v, Modify calls %d→%d; want none",
			d2.Changes(), d2.Calls, modifies, f.double.ModifyCalls())
	}
	var out strings.Builder
	if err := d2.WriteTable(&out); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(out.String(), "no changes") {
		t.Fatalf("second run output does not say no changes:\n%s", out.String())
	}
}

func TestProvisionSetsSlowStartOnlyWhenItDiffers(t *testing.T) {
	f := newFixture(t, elbv2double.Settings{})
	f.cfg.SlowStart = 45 * time.Second
	if _, err := alb.Provision(context.Background(), f.api, f.cfg, false); err != nil {
		t.Fatal(err)
	}
	if s, _ := f.double.Settings(f.arn); s.SlowStart != 45*time.Second {
		t.Fatalf("slow start %s, want 45s", s.SlowStart)
	}
	f.cfg.SlowStart = 0 // the config turns it off again
	if _, err := alb.Provision(context.Background(), f.api, f.cfg, false); err != nil {
		t.Fatal(err)
	}
	if s, _ := f.double.Settings(f.arn); s.SlowStart != 0 {
		t.Fatalf("slow start %s, want off", s.SlowStart)
	}
}

func TestDryRunShowsTheDiffAndChangesNothing(t *testing.T) {
	f := newFixture(t, elbv2double.Settings{})
	d, err := alb.Provision(context.Background(), f.api, f.cfg, true)
	if err != nil {
		t.Fatal(err)
	}
	if len(d.Changes()) != 5 || len(d.Calls) != 0 || f.double.ModifyCalls() != 0 {
		t.Fatalf("dry run: %d changes, calls %v, %d Modify calls", len(d.Changes()), d.Calls, f.double.ModifyCalls())
	}
	if s, _ := f.double.Settings(f.arn); s.Interval != 30*time.Second {
		t.Fatalf("dry run changed the interval to %s", s.Interval)
	}
	var out strings.Builder
	_ = d.WriteTable(&out)
	if !strings.Contains(out.String(), "balancer.interval") || !strings.Contains(out.String(), "dry run: 5 change(s)") {
		t.Fatalf("table:\n%s", out.String())
	}
}

func TestValuesOutsideAWSRangesAreRefusedBeforeAnyCall(t *testing.T) {
	for _, tc := range []struct {
		name  string
		set   func(*balancerCfg)
		key   string
		value string
	}{
		{"interval below 5s", func(b *balancerCfg) { b.Interval = 4 * time.Second }, "balancer.interval", "4s"},
		{"interval above 300s", func(b *balancerCfg) { b.Interval = 301 * time.Second }, "balancer.interval", "5m1s"},
		{"interval not whole seconds", func(b *balancerCfg) { b.Interval = 5500 * time.Millisecond }, "balancer.interval", "5.5s"},
		{"timeout below 2s", func(b *balancerCfg) { b.Timeout = time.Second }, "balancer.timeout", "1s"},
		{"timeout above 120s", func(b *balancerCfg) { b.Interval, b.Timeout = 300*time.Second, 121*time.Second }, "balancer.timeout", "2m1s"},
		{"timeout equal to interval", func(b *balancerCfg) { b.Timeout = 5 * time.Second }, "balancer.timeout", "5s"},
		{"unhealthy threshold 1", func(b *balancerCfg) { b.UnhealthyThreshold = 1 }, "balancer.unhealthy_threshold", "1"},
		{"healthy threshold 11", func(b *balancerCfg) { b.HealthyThreshold = 11 }, "balancer.healthy_threshold", "11"},
		{"deregistration delay above 3600s", func(b *balancerCfg) { b.DeregistrationDelay = 3601 * time.Second }, "balancer.deregistration_delay", "1h0m1s"},
		{"slow start below 30s", func(b *balancerCfg) { b.SlowStart = 29 * time.Second }, "balancer.slow_start", "29s"},
		{"slow start above 900s", func(b *balancerCfg) { b.SlowStart = 901 * time.Second }, "balancer.slow_start", "15m1s"},
		{"health path without /", func(b *balancerCfg) { b.HealthPath = "health" }, "balancer.health_path", `"health"`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			f := newFixture(t, elbv2double.Settings{})
			tc.set(&f.cfg)
			_, err := alb.Provision(context.Background(), f.api, f.cfg, false)
			if !errors.Is(err, alb.ErrOutOfRange) {
				t.Fatalf("err = %v, want ErrOutOfRange", err)
			}
			if !strings.Contains(err.Error(), tc.key+": "+tc.value+": must") {
				t.Fatalf("error does not name %s and %s: %v", tc.key, tc.value, err)
			}
			if n := f.double.TotalCalls(); n != 0 {
				t.Fatalf("%d API calls made before the refusal, want 0", n)
			}
		})
	}
}

func TestRangeBoundariesAreAccepted(t *testing.T) {
	f := newFixture(t, elbv2double.Settings{})
	for _, set := range []func(*balancerCfg){
		func(b *balancerCfg) { b.Interval, b.Timeout = 300*time.Second, 120*time.Second },
		func(b *balancerCfg) { b.Interval, b.Timeout = 5*time.Second, 4*time.Second },
		func(b *balancerCfg) { b.HealthyThreshold, b.UnhealthyThreshold = 10, 2 },
		func(b *balancerCfg) { b.DeregistrationDelay, b.SlowStart = 0, 30*time.Second },
		func(b *balancerCfg) { b.DeregistrationDelay, b.SlowStart = 3600*time.Second, 900*time.Second },
	} {
		b := f.cfg
		set(&b)
		if err := alb.Check(b); err != nil {
			t.Errorf("Check refused a boundary AWS accepts: %v", err)
			continue
		}
		if _, err := alb.Provision(context.Background(), f.api, b, false); err != nil {
			t.Errorf("the ELBv2 API refused what Check accepted: %v", err)
		}
	}
}

func TestDriftIsReportedAfterAConsoleClick(t *testing.T) {
	f := newFixture(t, elbv2double.Settings{})
	ctx := context.Background()
	if _, err := alb.Provision(ctx, f.api, f.cfg, false); err != nil {
		t.Fatal(err)
	}
	live, err := alb.Live(ctx, f.api, f.arn)
	if err != nil {
		t.Fatal(err)
	}
	if drift := f.cfg.Drift(live.BalancerNumbers, alb.Numbers()); len(drift) != 0 || live.Matcher != alb.Matcher {
		t.Fatalf("drift right after provision: %v, matcher %q", drift, live.Matcher)
	}

	f.double.Console(f.arn, func(s *elbv2double.Settings) { s.Interval = 30 * time.Second })
	live, err = alb.Live(ctx, f.api, f.arn)
	if err != nil {
		t.Fatal(err)
	}
	drift := f.cfg.Drift(live.BalancerNumbers, alb.Numbers())
	want := []config.Drift{{Field: "balancer.interval", Config: "5s", Live: "30s"}}
	if !slices.Equal(drift, want) {
		t.Fatalf("drift %v, want %v", drift, want)
	}
	got := f.cfg.Overlay(live.BalancerNumbers, alb.Numbers())
	if got.Interval != 30*time.Second || got.Detection() != 60*time.Second || got.IdleTimeout != f.cfg.IdleTimeout {
		t.Fatalf("live balancer interval %s detection %s idle %s, want 30s, 60s and the config's idle timeout %s",
			got.Interval, got.Detection(), got.IdleTimeout, f.cfg.IdleTimeout)
	}

	d, err := alb.Provision(ctx, f.api, f.cfg, false) // provisioning again repairs it
	if err != nil || !slices.Equal(d.Calls, []string{"ModifyTargetGroup"}) {
		t.Fatalf("repair: calls %v, err %v", d.Calls, err)
	}
}

func TestUnknownTargetGroupIsTargetGroupNotFound(t *testing.T) {
	f := newFixture(t, elbv2double.Settings{})
	f.cfg.TargetGroupARN = "arn:aws:elasticloadbalancing:eu-west-1:123456789012:targetgroup/gone/0000000000000000"
	_, err := alb.Provision(context.Background(), f.api, f.cfg, false)
	var nf *types.TargetGroupNotFoundException
	if !errors.As(err, &nf) {
		t.Fatalf("err = %v, want the SDK's TargetGroupNotFoundException", err)
	}
	if !strings.Contains(err.Error(), "balancer.target_group_arn") {
		t.Fatalf("error does not say what to check: %v", err)
	}
}
