package deployer

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/zero502/zero502/infra/alb"
	"github.com/zero502/zero502/infra/alb/elbv2double"
)

// A third-party server behind an ALB (the ELBv2 double, through the real SDK), start-first and
// drained at the balancer: each new instance is registered on the other port and must be healthy
// at the ALB (its real health checks) before the old target is deregistered (draining for the
// deregistration delay) and its instance stopped; the old port is left unregistered.
func TestALBStartFirstThirdPartyServerDrainedAtTheBalancer(t *testing.T) {
	a := newALBDouble(t, nil, elbv2double.Settings{HealthCheckPath: "/version.txt", Interval: 2 * time.Second,
		Timeout: time.Second, HealthyThreshold: 2, UnhealthyThreshold: 2, DeregistrationDelay: time.Second})
	f := newFleet(t, 2)
	second := f.gatewayBase()
	quoted, _ := json.Marshal(pythonServer(t, f.dir, false))
	var b strings.Builder
	fmt.Fprintf(&b, `balancer:
  kind: alb
  target_group_arn: %s
  region: eu-west-1
  service: web
  health_path: /version.txt
  interval: 2s
  timeout: 1s
  unhealthy_threshold: 2
  healthy_threshold: 2
  idle_timeout: 5s
  header_timeout: 800ms
  deregistration_delay: 1s
drain:
  window: 7s
  shutdown: 1s
  stop_grace: 10s
  max_recovery: 5s
watchdog:
  interval: 3s
  heal_after: 4
  state_dir: %s
app:
  keepalive_idle_timeout: 10s
rollout:
  runtime: process
  strategy: start-first
  healthy_deadline: 30s
services:
  - name: web
    command: %s
    ports: [%d, %d]
    drain: balancer
    health: {path: /version.txt}
    verify: {version_path: /version.txt}
hosts:
`, a.arn, f.dir, quoted, f.base, second)
	for i := range f.hosts {
		fmt.Fprintf(&b, "  - name: %s\n    port_offset: %d\n    state_dir: %s\n", hostName(i), f.offsets[i], f.stateDir(i))
	}
	path := filepath.Join(f.dir, "alb-any.yaml")
	if err := os.WriteFile(path, []byte(b.String()), 0o644); err != nil {
		t.Fatal(err)
	}
	cfg := f.load(path)
	ctx := context.Background()

	var ev1 eventLog
	if _, err := f.deployer(cfg, &ev1, Options{}).Deploy(ctx, "v1"); err != nil {
		t.Fatalf("deploy v1 onto fresh hosts: %v\nevents:\n%s", err, &ev1)
	}
	var ev2 eventLog
	rep, err := f.deployer(cfg, &ev2, Options{}).Deploy(ctx, "v2")
	if err != nil {
		t.Fatalf("deploy v2: %v\nevents:\n%s", err, &ev2)
	}
	if !strings.Contains(ev2.String(), "drained at the balancer by the deployer") {
		t.Errorf("no balancer-side drain:\n%s", &ev2)
	}
	for i, h := range rep.Hosts {
		if h.Outcome != OutcomeDeployed || h.Running != "v2" {
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
