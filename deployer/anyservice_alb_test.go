package deployer

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/zero502/zero502/deployer/report"
	"github.com/zero502/zero502/infra/alb"
	"github.com/zero502/zero502/infra/alb/elbv2double"
	"github.com/zero502/zero502/infra/config"
)

// A third-party server behind an ALB (the ELBv2 double, through the real SDK), start-first and
// drained at the balancer: each new instance is registered on the other port and must be healthy
// at the ALB (its real health checks) before the old target is deregistered (draining for the
// deregistration delay) and its instance stopped; the old port is left unregistered.
func pythonBehindALBStartFirstDrainedAtTheBalancer(t *testing.T) {
	a := newALBDouble(t, nil, elbv2double.Settings{HealthCheckPath: "/version.txt", Interval: 2 * time.Second,
		Timeout: time.Second, HealthyThreshold: 2, UnhealthyThreshold: 2, DeregistrationDelay: time.Second})
	f := newFleet(t, 2)
	second := f.gatewayBase()
	spec := f.albFleetConfig(a.arn)
	spec.Balancer.HealthPath = "/version.txt"
	spec.Balancer.HeaderTimeout = 800 * time.Millisecond
	spec.Rollout.Strategy = config.StartFirst
	spec.Services = []config.Service{{Name: "web", Command: pythonServer(t, f.dir, false), Port: f.base, Ports: []int{f.base, second},
		Drain: config.DrainBalancer, Health: config.ServiceHealth{Path: "/version.txt"}, Verify: config.ServiceVerify{VersionPath: "/version.txt"}}}
	path := f.write("alb-any.yaml", spec)
	cfg := f.load(path)
	ctx := context.Background()

	var ev1 eventLog
	if _, err := f.deployer(cfg, &ev1, a.options(cfg)).Deploy(ctx, "v1"); err != nil {
		t.Fatalf("deploy v1 onto fresh hosts: %v\nevents:\n%s", err, &ev1)
	}
	var ev2 eventLog
	rep, err := f.deployer(cfg, &ev2, a.options(cfg)).Deploy(ctx, "v2")
	if err != nil {
		t.Fatalf("deploy v2: %v\nevents:\n%s", err, &ev2)
	}
	if !strings.Contains(ev2.String(), "drained at the balancer by the deployer") {
		t.Errorf("no balancer-side drain:\n%s", &ev2)
	}
	for i, h := range rep.Hosts {
		if h.Outcome != report.OutcomeDeployed || h.Running != "v2" {
			t.Errorf("%s: %s, runs %q; want deployed v2", h.Host, h.Outcome, h.Running)
		}
		oldAddr := fmt.Sprintf("127.0.0.1:%d", f.base+f.offsets[i])
		newAddr := fmt.Sprintf("127.0.0.1:%d", second+f.offsets[i])
		if st, err := a.state(newAddr); err != nil || st != alb.StateHealthy {
			t.Errorf("%s's new target %s at the ALB: %q %v, want healthy", h.Host, newAddr, st, err)
		}
		if st, _ := a.state(oldAddr); st != alb.StateUnused {
			t.Errorf("%s's old target %s at the ALB: %q, want unused (deregistered)", h.Host, oldAddr, st)
		}
	}
}
