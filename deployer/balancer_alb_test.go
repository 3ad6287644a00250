package deployer

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"net/http/httptest"
	"slices"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	elbv2 "github.com/aws/aws-sdk-go-v2/service/elasticloadbalancingv2"

	"github.com/zero502/zero502/deployer/balancer"
	"github.com/zero502/zero502/infra/alb"
	"github.com/zero502/zero502/infra/alb/elbv2double"
	"github.com/zero502/zero502/infra/clock"
	"github.com/zero502/zero502/infra/config"
	"github.com/zero502/zero502/infra/spec"
	"github.com/zero502/zero502/internal/testrig/albtest"
	"github.com/zero502/zero502/internal/testrig/poll"
	"github.com/zero502/zero502/internal/testrig/tcpserver"
)

// albDouble is the ELBv2 API double on loopback with one target group, and the real SDK client
// a test uses to register targets. withEnv points the SDK's default chain (static credentials in
// the environment, no profile, no IMDS) and ZERO502_ALB_ENDPOINT at it, as CI would point them
// at AWS.
type albDouble struct {
	rig    *albtest.Double
	double *elbv2double.Server
	url    string
	arn    string
	api    *elbv2.Client
}

func newALBDouble(t *testing.T, clk clock.Clock, settings elbv2double.Settings) *albDouble {
	t.Helper()
	d := albtest.Start(t, clk, elbv2double.TargetGroup{Name: "web", Port: 8000, Settings: settings})
	return &albDouble{rig: d, double: d.Server, url: d.URL, arn: d.ARN, api: d.API}
}

// options are a deploy's Options watching this double through the real SDK (the environment's
// endpoint is TestALBAdapterStatesSinceDriftAndGuard's: the tests that deploy run in parallel).
func (a *albDouble) options(cfg *config.Config) Options {
	return Options{Balancer: balancer.NewALB(a.api, cfg, nil)}
}

func (a *albDouble) register(t *testing.T, addrs ...string) { a.rig.Register(t, addrs...) }

func (a *albDouble) deregister(t *testing.T, addr string) { a.rig.Deregister(t, addr) }

// state is the double's state of target id:port, through the SDK.
func (a *albDouble) state(addr string) (string, error) {
	st, _, err := alb.NewBalancer(a.api, a.arn).TargetHealth(context.Background(), addr)
	return st, err
}

// healthServer answers /health with a status the test sets.
type healthServer struct {
	addr   string
	status atomic.Int32
}

func newHealthServer(t *testing.T) *healthServer {
	t.Helper()
	h := &healthServer{}
	h.status.Store(http.StatusOK)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		w.WriteHeader(int(h.status.Load()))
	}))
	t.Cleanup(srv.Close)
	h.addr = strings.TrimPrefix(srv.URL, "http://")
	return h
}

// The adapter's view, on a fake clock so every health-check round is one step: states map to
// rotation (only healthy is in), Since is when the adapter first saw a state, an unregistered
// target is unknown, settings and the extra drift read back, and the drain guard names the
// target in the way.
func TestALBAdapterStatesSinceDriftAndGuard(t *testing.T) {
	clk := clock.NewFake(time.Date(2026, 11, 30, 15, 0, 0, 0, time.UTC))
	a := newALBDouble(t, clk, elbv2double.Settings{HealthCheckPath: "/health", Interval: 5 * time.Second,
		Timeout: 2 * time.Second, HealthyThreshold: 2, UnhealthyThreshold: 2, DeregistrationDelay: 30 * time.Second})
	one, two := newHealthServer(t), newHealthServer(t)
	a.register(t, one.addr, two.addr)
	step := func() {
		t.Helper()
		n := a.double.Rounds(a.arn)
		poll.UntilNil(t, 20*time.Second, "the health checker waits on the clock", func() error {
			if clk.Waiters() == 0 {
				return errors.New("no waiter")
			}
			return nil
		})
		clk.Advance(5 * time.Second)
		poll.UntilNil(t, 20*time.Second, "a health-check round", func() error {
			if a.double.Rounds(a.arn) <= n {
				return errors.New("round not done")
			}
			return nil
		})
	}

	cfg := &config.Config{Balancer: config.Defaults().Balancer}
	cfg.Balancer.Kind, cfg.Balancer.TargetGroupARN, cfg.Balancer.Region = config.BalancerALB, a.arn, "eu-west-1"
	t.Setenv(balancer.EnvALBEndpoint, a.url) // (so this test is not parallel)
	b, err := balancer.For(cfg)              // the SDK default chain + ZERO502_ALB_ENDPOINT, as in production
	if err != nil {
		t.Fatalf("BalancerFor(kind alb): %v", err)
	}
	if !strings.HasPrefix(b.Name(), "alb arn:aws:elasticloadbalancing:") {
		t.Errorf("Name() = %q", b.Name())
	}
	api, err := alb.NewClient(context.Background(), cfg.Balancer, alb.ClientOptions{Endpoint: a.url}) // a client as For builds it
	if err != nil {
		t.Fatal(err)
	}
	b = balancer.NewALB(api, cfg, clk) // stamped on the test's clock
	ctx := context.Background()

	t0 := clk.Now()
	st, err := b.TargetState(ctx, one.addr)
	if err != nil || st.State != alb.StateInitial || st.InRotation || !st.Since.Equal(t0) {
		t.Fatalf("new target: %+v %v; want initial, out of rotation, since first seen %s", st, err, t0)
	}
	step()
	step()
	st, err = b.TargetState(ctx, one.addr)
	if err != nil || st.State != alb.StateHealthy || !st.InRotation || !st.Since.Equal(clk.Now()) {
		t.Fatalf("after 2 good checks: %+v %v; want healthy, in rotation, since %s", st, err, clk.Now())
	}
	healthySince := st.Since
	step()
	if st, _ := b.TargetState(ctx, one.addr); !st.Since.Equal(healthySince) {
		t.Errorf("still healthy: since moved from %s to %s", healthySince, st.Since)
	}
	if err := b.(balancer.DrainGuarder).DrainGuard(ctx, one.addr); err != nil {
		t.Errorf("every other target healthy, yet DrainGuard: %v", err)
	}

	two.status.Store(http.StatusServiceUnavailable)
	step()
	step()
	st, err = b.TargetState(ctx, two.addr)
	if err != nil || st.State != alb.StateUnhealthy || st.InRotation {
		t.Fatalf("after 2 failed checks: %+v %v; want unhealthy, out of rotation", st, err)
	}
	err = b.(balancer.DrainGuarder).DrainGuard(ctx, one.addr)
	if !errors.Is(err, alb.ErrOthersNotHealthy) || !strings.Contains(err.Error(), two.addr+" is unhealthy") {
		t.Errorf("DrainGuard(%s) with %s unhealthy: %v; want a refusal naming it", one.addr, two.addr, err)
	}

	if _, err := b.TargetState(ctx, "127.0.0.1:1"); !errors.Is(err, balancer.ErrUnknownTarget) {
		t.Errorf("unregistered target: %v, want ErrUnknownTarget", err)
	}

	live, drifts, err := balancer.LiveDrift(ctx, b, cfg.Balancer)
	if err != nil || len(drifts) != 0 || live.Interval != 5*time.Second || live.HealthPath != "/health" || live.HealthyThreshold != 2 {
		t.Fatalf("LiveDrift on a matching group: %+v %v %v", live, drifts, err)
	}
	a.double.Console(a.arn, func(s *elbv2double.Settings) {
		s.Interval, s.Matcher, s.DeregistrationDelay = 10*time.Second, "200-499", 300*time.Second
	})
	_, drifts, err = balancer.LiveDrift(ctx, b, cfg.Balancer)
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, d := range drifts {
		got = append(got, d.Field+"="+d.Config+"→"+d.Live)
	}
	want := "balancer.interval=5s→10s balancer.deregistration_delay=30s→5m0s matcher (HttpCode, fixed)=200→200-499"
	if strings.Join(got, " ") != want {
		t.Errorf("drift after console changes:\n got %s\nwant %s", strings.Join(got, " "), want)
	}
}

// albFleetConfig is the ALB fleet's config, in real time: interval 2s (below AWS's 5s minimum,
// which the double does not enforce when set up directly), whole seconds as the API reports, and
// a drain window (7s) well past the detection (4s) so a loaded machine cannot make it flaky. It
// has no service yet.
func (f *fleet) albFleetConfig(arn string) *config.Config {
	cfg := f.fleetConfig()
	b := &cfg.Balancer
	b.Kind, b.TargetGroupARN, b.Region = config.BalancerALB, arn, albtest.Region
	b.Interval, b.Timeout = 2*time.Second, time.Second
	b.DeregistrationDelay = time.Second
	cfg.Drain = config.Drain{Window: 7 * time.Second, Shutdown: time.Second, StopGrace: 10 * time.Second, MaxRecovery: 5 * time.Second}
	cfg.Watchdog.Interval = 3 * time.Second
	cfg.Rollout.HealthyDeadline = 30 * time.Second
	return cfg
}

// albConfig writes the ALB fleet's config with the web service (zero502 app) and returns its path.
func (f *fleet) albConfig(arn string) string {
	f.t.Helper()
	cfg := f.albFleetConfig(arn)
	cfg.Services = []config.Service{{Name: "web", Port: f.base, Verify: config.ServiceVerify{VersionHeader: "X-Version"},
		Command: []string{"{self}", "app", "--version", "{version}", "--port", "{port}", "--drain", "{drain}",
			"--shutdown", "{shutdown}", "--idle-timeout", "{idle_timeout}"}}}
	return f.write("alb.yaml", cfg)
}

// A full deploy through the real SDK against the ELBv2 double, whose target group really
// health-checks the hosts' `zero502 app` instances every 2s: v1 onto fresh hosts; v2 refused
// while another target is unhealthy (fail-open guard, naming it) and while the interval drifted
// (someone changed it in the console); then v2 rolls, each host's timeline showing the ALB's
// unhealthy and healthy marks.
func TestALBDeployFailOpenGuardAndDrift(t *testing.T) {
	t.Parallel()
	a := newALBDouble(t, nil, elbv2double.Settings{HealthCheckPath: "/health", Interval: 2 * time.Second,
		Timeout: time.Second, HealthyThreshold: 2, UnhealthyThreshold: 2, DeregistrationDelay: time.Second})
	f := newFleet(t, 2)
	cfg := f.load(f.albConfig(a.arn))
	svc, _ := cfg.BalancedService()
	var targets []string
	for _, h := range cfg.Hosts {
		targets = append(targets, alb.TargetID(h, svc))
	}
	broken := fmt.Sprintf("127.0.0.1:%d", tcpserver.FreePorts(t, 1)[0]) // registered, nothing listens: unhealthy
	a.register(t, append(targets, broken)...)
	ctx := context.Background()

	var ev1 eventLog
	if _, err := f.deployer(cfg, &ev1, a.options(cfg)).Deploy(ctx, "v1"); err != nil {
		t.Fatalf("deploy v1 onto fresh hosts (nothing drained, so the broken target does not block it): %v\nevents:\n%s", err, &ev1)
	}

	// Fail-open: draining host-a while the broken target is unhealthy would leave host-b alone,
	// one failure away from an ALB that routes to every target.
	poll.UntilNil(t, 20*time.Second, "the broken target is unhealthy at the ALB", func() error {
		if st, err := a.state(broken); err != nil || st != alb.StateUnhealthy {
			return fmt.Errorf("state %q, %v", st, err)
		}
		return nil
	})
	var ev2 eventLog
	rep, err := f.deployer(cfg, &ev2, a.options(cfg)).Deploy(ctx, "v2")
	var refused *refusedError
	if !errors.As(err, &refused) || !strings.Contains(err.Error(), "fail-open guard, host host-a") ||
		!strings.Contains(err.Error(), broken+" is unhealthy") {
		t.Fatalf("deploy v2 with %s unhealthy: %v; want refused by the fail-open guard naming it\nevents:\n%s", broken, err, &ev2)
	}
	if strings.Contains(ev2.String(), "/web "+StepDrain+" ") || f.versions()["host-a"] != "v1" || !rep.Refused {
		t.Fatalf("the refused deploy touched a host: %v\nevents:\n%s", f.versions(), &ev2)
	}
	a.deregister(t, broken)
	poll.UntilNil(t, 20*time.Second, "the broken target's deregistration delay ends", func() error {
		ts, err := alb.NewBalancer(a.api, a.arn).Targets(ctx)
		if err != nil || len(ts) != 2 {
			return fmt.Errorf("targets %v, %v", ts, err)
		}
		return nil
	})

	// Drift: someone set the interval to 3s in the console.
	a.double.Console(a.arn, func(s *elbv2double.Settings) { s.Interval = 3 * time.Second })
	var ev3 eventLog
	_, err = f.deployer(cfg, &ev3, a.options(cfg)).Deploy(ctx, "v2")
	if !errors.As(err, &refused) || !strings.Contains(err.Error(), "balancer.interval: config 2s, live balancer 3s") {
		t.Fatalf("deploy v2 with the interval drifted: %v; want refused naming balancer.interval", err)
	}
	a.double.Console(a.arn, func(s *elbv2double.Settings) { s.Interval = 2 * time.Second })
	if s, err := spec.Read(spec.Path(f.stateDir(0))); err != nil || s.Version != "v1" {
		t.Fatalf("after the refusals host-a's spec is %q (%v), want v1 untouched", s.Version, err)
	}

	var ev4 eventLog
	looksBefore, began := a.double.Calls("DescribeTargetHealth"), time.Now()
	rep, err = f.deployer(cfg, &ev4, a.options(cfg)).Deploy(ctx, "v2")
	if err != nil {
		t.Fatalf("deploy v2: %v\nevents:\n%s", err, &ev4)
	}
	// The ALB's API is throttled: the deployer looks at it every interval/5 (pollEvery), one
	// look at a time, plus a look at every target before each batch (the fail-open guard).
	looks, took := a.double.Calls("DescribeTargetHealth")-looksBefore, time.Since(began)
	pace := cfg.Balancer.Interval / 5
	if limit := int(took/pace) + 4*len(cfg.Hosts); looks > limit {
		t.Errorf("%d DescribeTargetHealth calls in %s: more than one per %s (pollEvery) plus the guard's, %d", looks, took.Round(time.Millisecond), pace, limit)
	}
	t.Logf("%d DescribeTargetHealth calls in %s", looks, took.Round(time.Millisecond))
	var text strings.Builder
	_ = rep.WriteText(&text)
	t.Logf("report:\n%s\nevents:\n%s", &text, &ev4)
	for _, h := range rep.Hosts {
		requireDeployed(t, h, "v1", "v2")
		requireHandshakeInOrder(t, h, cfg)
	}
	events := ev4.String()
	for _, target := range targets {
		for _, want := range []string{target + " unhealthy at the balancer", target + " healthy directly and back in rotation at alb "} {
			if !strings.Contains(events, want) {
				t.Errorf("events do not say %q:\n%s", want, events)
			}
		}
	}
	for host, v := range f.versions() {
		if v != "v2" {
			t.Errorf("%s runs %q, want v2", host, v)
		}
	}
}

// rotationSettings are a target group fast enough for real time: checks every 200ms, healthy
// after 2, and a 1s deregistration delay (below AWS's minimums, which the double does not
// enforce when set up directly).
var rotationSettings = elbv2double.Settings{HealthCheckPath: "/health", Interval: 200 * time.Millisecond,
	Timeout: 100 * time.Millisecond, HealthyThreshold: 2, UnhealthyThreshold: 2, DeregistrationDelay: time.Second}

// rotationConfig is a fleet of hosts running service web (ports, for start-first) behind the
// target group arn.
func rotationConfig(arn string, ports []int, hosts ...config.Host) *config.Config {
	cfg := &config.Config{Balancer: config.Defaults().Balancer, Hosts: hosts}
	cfg.Balancer.Kind, cfg.Balancer.TargetGroupARN, cfg.Balancer.Region = config.BalancerALB, arn, "eu-west-1"
	cfg.Services = []config.Service{{Name: "web", Port: ports[0], Drain: config.DrainBalancer}}
	if len(ports) > 1 {
		cfg.Services[0].Ports = ports
		cfg.Rollout.Strategy = config.StartFirst
	}
	return cfg
}

func port(t *testing.T, addr string) int {
	t.Helper()
	_, p, err := net.SplitHostPort(addr)
	n, perr := strconv.Atoi(p)
	if err != nil || perr != nil {
		t.Fatalf("address %q: want host:port", addr)
	}
	return n
}

// waitState polls b until it reports target in state.
func waitState(t *testing.T, b balancer.Balancer, target, state string) {
	t.Helper()
	poll.UntilNil(t, 20*time.Second, target+" "+state+" at the ALB", func() error {
		st, err := b.TargetState(context.Background(), target)
		if err != nil || st.State != state || st.InRotation != (state == alb.StateHealthy) {
			return fmt.Errorf("state %+v, %v", st, err)
		}
		return nil
	})
}

// The ALB as the deployer's Rotation, through the real SDK against the double in real time:
// Add registers the target and the ALB's own checks make it healthy; Drain deregisters it, and
// Drained turns true once the 1s deregistration delay is over, never before; Remove of an
// unknown or already drained target is no error and leaves it so, and Remove deregisters a
// registered one.
func TestALBRotationAddDrainDrainedRemove(t *testing.T) {
	t.Parallel()
	a := newALBDouble(t, nil, rotationSettings)
	app := newHealthServer(t)
	cfg := rotationConfig(a.arn, []int{port(t, app.addr)}, config.Host{Name: "host-a", Address: "127.0.0.1"})
	var b balancer.Rotation = balancer.NewALB(a.api, cfg, nil)
	bal := b.(balancer.Balancer)
	ctx := context.Background()

	if err := b.Add(ctx, app.addr); err != nil {
		t.Fatalf("Add(%s): %v", app.addr, err)
	}
	if st, err := bal.TargetState(ctx, app.addr); err != nil || st.InRotation {
		t.Fatalf("just added: %+v, %v; want known and not yet in rotation", st, err)
	}
	waitState(t, bal, app.addr, alb.StateHealthy)

	delay := rotationSettings.DeregistrationDelay
	began := time.Now()
	if err := b.Drain(ctx, app.addr); err != nil {
		t.Fatalf("Drain(%s): %v", app.addr, err)
	}
	drained, err := b.Drained(ctx, app.addr)
	if asked := time.Since(began); asked < delay && (err != nil || drained) {
		t.Fatalf("Drained %s after the drain began: %v, %v; want false until the %s delay is over", asked, drained, err, delay)
	}
	st, err := bal.TargetState(ctx, app.addr)
	if asked := time.Since(began); asked < delay && (err != nil || st.State != alb.StateDraining || st.InRotation) {
		t.Fatalf("draining target %s after the drain began: %+v, %v; want draining, out of rotation", asked, st, err)
	}
	poll.UntilNil(t, 20*time.Second, "Drained", func() error {
		if ok, err := b.Drained(ctx, app.addr); err != nil || !ok {
			return fmt.Errorf("drained %v, %v", ok, err)
		}
		return nil
	})
	if took := time.Since(began); took < delay {
		t.Fatalf("Drained turned true %s after Drain, before the %s deregistration delay", took, delay)
	}

	for _, target := range []string{app.addr, "127.0.0.1:1"} { // ELBv2 leaves a target it does not hold as it is
		if err := b.Remove(ctx, target); err != nil {
			t.Errorf("Remove(%s), not registered: %v; want no error", target, err)
		}
		if ok, err := b.Drained(ctx, target); err != nil || !ok {
			t.Errorf("Remove(%s), not registered: afterwards drained %v, %v; want it still not registered", target, ok, err)
		}
	}
	if err := b.Add(ctx, app.addr); err != nil {
		t.Fatal(err)
	}
	if err := b.Remove(ctx, app.addr); err != nil {
		t.Fatalf("Remove(%s), registered: %v", app.addr, err)
	}
	if st, _, err := alb.NewBalancer(a.api, a.arn).TargetHealth(ctx, app.addr); err != nil || st != alb.StateDraining {
		t.Fatalf("after Remove of a registered target: %s, %v; want draining", st, err)
	}
}

// Every address of a host maps to its target: with start-first the host's service has two
// ports, and each registers as the host's instance id on that port (not the target group's
// port, not the first port), so the ALB checks and reports each one on its own.
func TestALBRotationMapsBothStartFirstPortsToTheHostsTarget(t *testing.T) {
	t.Parallel()
	a := newALBDouble(t, nil, rotationSettings)
	arn := a.double.AddTargetGroup(elbv2double.TargetGroup{Name: "web-instances", Port: 8000, TargetType: "instance",
		Settings: rotationSettings})
	const instance = "i-0a1b2c3d4e5f60001"
	a.double.SetInstanceAddress(instance, "127.0.0.1") // where the ALB's checks of the instance go
	oldApp, newApp := newHealthServer(t), newHealthServer(t)
	pa, pb := port(t, oldApp.addr), port(t, newApp.addr)
	host := config.Host{Name: "app-1", Address: "app-1.internal", Target: instance}
	cfg := rotationConfig(arn, []int{pa, pb}, host)
	b := balancer.NewALB(a.api, cfg, nil)
	ctx := context.Background()
	first, second := fmt.Sprintf("app-1.internal:%d", pa), fmt.Sprintf("app-1.internal:%d", pb)

	for _, target := range []string{first, second} {
		if err := b.Add(ctx, target); err != nil {
			t.Fatalf("Add(%s): %v", target, err)
		}
	}
	var ids []string
	all, err := alb.NewBalancer(a.api, arn).Targets(ctx)
	for _, ts := range all {
		ids = append(ids, ts.ID)
	}
	want := []string{fmt.Sprintf("%s:%d", instance, pa), fmt.Sprintf("%s:%d", instance, pb)}
	slices.Sort(want)
	if err != nil || !slices.Equal(ids, want) {
		t.Fatalf("registered targets %v, %v; want %v", ids, err, want)
	}
	waitState(t, b, second, alb.StateHealthy)
	waitState(t, b, first, alb.StateHealthy)

	if err := b.Drain(ctx, first); err != nil {
		t.Fatalf("Drain(%s): %v", first, err)
	}
	poll.UntilNil(t, 20*time.Second, first+" drained", func() error {
		if ok, err := b.Drained(ctx, first); err != nil || !ok {
			return fmt.Errorf("drained %v, %v", ok, err)
		}
		return nil
	})
	if st, err := b.TargetState(ctx, second); err != nil || st.State != alb.StateHealthy {
		t.Fatalf("the successor on the second port after the first drained: %+v, %v; want healthy", st, err)
	}
	if _, err := b.TargetState(ctx, first); !errors.Is(err, balancer.ErrUnknownTarget) {
		t.Fatalf("the drained first port: %v; want ErrUnknownTarget", err)
	}
	// The host's address on a port the config does not list still maps to its instance.
	if _, err := b.TargetState(ctx, "app-1.internal:1"); !errors.Is(err, balancer.ErrUnknownTarget) ||
		!strings.Contains(err.Error(), "target "+instance+":1 (host address app-1.internal:1)") {
		t.Fatalf("app-1.internal:1: %v; want the unknown target %s:1", err, instance)
	}
}

// With --accept-drift the deploy runs on what the balancer does: a target group that holds a
// deregistered target draining 8s, where the config says 1s, is waited out 8s before a
// balancer-side drain's stop signal (it waited 1s and signalled a target the ALB still sent
// requests to), and every host's step is sent the live numbers.
func TestAcceptedDriftRunsOnTheLiveNumbers(t *testing.T) {
	a := newALBDouble(t, nil, elbv2double.Settings{HealthCheckPath: "/health", Interval: 2 * time.Second,
		Timeout: time.Second, HealthyThreshold: 2, UnhealthyThreshold: 2, DeregistrationDelay: 8 * time.Second})
	f := newFleet(t, 2)
	c := f.albFleetConfig(a.arn)
	c.Balancer.HeaderTimeout = 500 * time.Millisecond
	c.Services = []config.Service{{Name: "web", Port: f.base, Drain: config.DrainBalancer,
		Command: []string{"{self}", "app", "--version", "{version}", "--port", "{port}"}}}
	cfg := f.load(f.write("alb.yaml", c))
	var ev eventLog
	opts := a.options(cfg)
	opts.AcceptDrift = true
	d := f.deployer(cfg, &ev, opts)
	if err := d.setup(); err != nil {
		t.Fatal(err)
	}
	if reasons := d.checkDrift(context.Background()); len(reasons) != 0 {
		t.Fatalf("drift of the deregistration delay with --accept-drift refused: %v", reasons)
	}
	if !strings.Contains(ev.String(), "drift accepted: balancer.deregistration_delay") {
		t.Errorf("no event names the accepted drift:\n%s", &ev)
	}
	if got := d.cfg.BalancerDrainWindow(); got != 8*time.Second {
		t.Errorf("the balancer-side drain waits %s; want the live deregistration delay 8s", got)
	}
	if got := d.configFor(cfg.Hosts[0], []string{"host", "step"}).Balancer.DeregistrationDelay; got != 8*time.Second {
		t.Errorf("a host's step is sent deregistration_delay %s; want the live 8s", got)
	}
	if cfg.Balancer.DeregistrationDelay != time.Second {
		t.Errorf("the caller's config was changed: deregistration_delay %s", cfg.Balancer.DeregistrationDelay)
	}
}
