package alb_test

import (
	"context"
	"net"
	"net/http"
	"slices"
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"
	elbv2 "github.com/aws/aws-sdk-go-v2/service/elasticloadbalancingv2"

	"github.com/zero502/zero502/infra/alb"
	"github.com/zero502/zero502/infra/alb/elbv2double"
	"github.com/zero502/zero502/infra/config"
)

// fixedPort is sourceNumbers with the health check sent to port 8000 over HTTPS: what a
// console default or an older script may have left on the target group.
func fixedPort() elbv2double.Settings {
	s := sourceNumbers
	s.HealthCheckPort, s.HealthCheckProtocol = "8000", "HTTPS"
	return s
}

func TestProvisionSendsTheHealthCheckToEachTargetsPortOverHTTP(t *testing.T) {
	f := newFixture(t, fixedPort())
	ctx := context.Background()
	d, err := alb.Provision(ctx, f.api, f.cfg, false)
	if err != nil {
		t.Fatalf("Provision: %v", err)
	}
	var changed []string
	for _, c := range d.Changes() {
		changed = append(changed, c.Key+" "+c.Live+"→"+c.Config)
	}
	want := []string{alb.HealthCheckPortKey + " 8000→traffic-port", alb.HealthCheckProtocolKey + " HTTPS→HTTP"}
	if !slices.Equal(changed, want) || !slices.Equal(d.Calls, []string{"ModifyTargetGroup"}) {
		t.Fatalf("changes %q, calls %v; want %q by ModifyTargetGroup", changed, d.Calls, want)
	}
	if s, _ := f.double.Settings(f.arn); s.HealthCheckPort != "traffic-port" || s.HealthCheckProtocol != "HTTP" {
		t.Fatalf("double health-checks port %q over %q after provision", s.HealthCheckPort, s.HealthCheckProtocol)
	}
	modifies := f.double.ModifyCalls()
	if d2, err := alb.Provision(ctx, f.api, f.cfg, false); err != nil || !d2.NoChanges() || f.double.ModifyCalls() != modifies {
		t.Fatalf("second run: %v, changes %v, Modify calls %d→%d; want none", err, d2.Changes(), modifies, f.double.ModifyCalls())
	}
}

func TestLiveReportsAHealthCheckOnAFixedPortOrHTTPSAsDrift(t *testing.T) {
	f := newFixture(t, sourceNumbers)
	ctx := context.Background()
	live, err := alb.Live(ctx, f.api, f.arn)
	if err != nil {
		t.Fatal(err)
	}
	if live.HealthCheckPort != alb.HealthCheckPort || live.HealthCheckProtocol != alb.HealthCheckProtocol ||
		len(live.FixedDrift()) != 0 {
		t.Fatalf("live %q over %q, drift %v; want traffic-port over HTTP, no drift",
			live.HealthCheckPort, live.HealthCheckProtocol, live.FixedDrift())
	}

	f.double.Console(f.arn, func(s *elbv2double.Settings) { s.HealthCheckPort, s.HealthCheckProtocol = "8000", "HTTPS" })
	if live, err = alb.Live(ctx, f.api, f.arn); err != nil {
		t.Fatal(err)
	}
	want := []config.Drift{
		{Field: alb.HealthCheckPortKey, Config: "traffic-port", Live: "8000"},
		{Field: alb.HealthCheckProtocolKey, Config: "HTTP", Live: "HTTPS"},
	}
	if got := live.FixedDrift(); !slices.Equal(got, want) {
		t.Fatalf("drift after a console click:\n got %v\nwant %v", got, want)
	}
	d, err := alb.Provision(ctx, f.api, f.cfg, true)
	if err != nil || len(d.Changes()) != 2 {
		t.Fatalf("dry run: %v, changes %v; want the port and the protocol", err, d.Changes())
	}
}

// A fixed health-check port checks one port for every target: a start-first instance
// registered on its own port is judged by the old instance's health endpoint. The double
// models that, and ModifyTargetGroup back to traffic-port ends it.
func TestDoubleHealthChecksTheFixedPortForEveryTarget(t *testing.T) {
	old, next := newBackend(t), newBackend(t)
	next.status.Store(http.StatusServiceUnavailable) // the new instance is not well
	_, oldPort, _ := net.SplitHostPort(old.addr())
	s := sourceNumbers
	s.HealthCheckPort = oldPort
	f := newFixture(t, s)
	b := alb.NewBalancer(f.api, f.arn)
	f.register(t, next.addr())
	f.step(t)
	f.step(t)
	wantState(t, b, next.addr(), alb.StateHealthy, "")
	if next.checks.Load() != 0 || old.checks.Load() == 0 {
		t.Fatalf("health checks: %d to the new instance, %d to the fixed port; want all to the fixed port",
			next.checks.Load(), old.checks.Load())
	}
	out, err := f.api.DescribeTargetHealth(context.Background(), &elbv2.DescribeTargetHealthInput{TargetGroupArn: aws.String(f.arn)})
	if err != nil || len(out.TargetHealthDescriptions) != 1 || aws.ToString(out.TargetHealthDescriptions[0].HealthCheckPort) != oldPort {
		t.Fatalf("DescribeTargetHealth: %v; want the target's health check on port %s", err, oldPort)
	}

	if _, err := f.api.ModifyTargetGroup(context.Background(), &elbv2.ModifyTargetGroupInput{
		TargetGroupArn: aws.String(f.arn), HealthCheckPort: aws.String(alb.HealthCheckPort)}); err != nil {
		t.Fatal(err)
	}
	f.step(t)
	f.step(t)
	wantState(t, b, next.addr(), alb.StateUnhealthy, "Target.ResponseCodeMismatch")
}
