package balancer

import (
	"context"
	"fmt"
	"net"
	"os"
	"strings"
	"sync"
	"time"

	"github.com/zero502/zero502/infra/alb"
	"github.com/zero502/zero502/infra/clock"
	"github.com/zero502/zero502/infra/config"
)

// EnvALBEndpoint names the environment variable that, when set, replaces the regional ELBv2
// endpoint the deployer (and zero502 invariants --live) talks to: a VPC endpoint, or a local
// ELBv2 API double in tests (e.g. ZERO502_ALB_ENDPOINT=http://127.0.0.1:4566).
const EnvALBEndpoint = "ZERO502_ALB_ENDPOINT"

// DrainGuarder is a Balancer that must approve every drain before it starts. The ALB does: an
// ALB whose targets are all unhealthy fails open and routes to every one of them, so a target
// may leave only while every other target is healthy. Preflight asks before each batch.
type DrainGuarder interface {
	// DrainGuard returns nil when draining target (host:port, as configured) is safe, else an
	// error naming the targets in the way.
	DrainGuard(ctx context.Context, target string) error
}

// PacedViewer is a Balancer whose view costs an API call that its provider throttles (the
// ALB: DescribeTargetHealth). While a new instance comes up the deployer then asks it every
// pollEvery (interval/5, at most once a second per host) instead of every startPoll.
type PacedViewer interface {
	// PacedView marks the Balancer; it does nothing.
	PacedView()
}

// ALB is the deployer's view of an AWS ALB target group (balancer.kind alb), through
// alb.Balancer: DescribeTargetHealth for a target's state, DescribeTargetGroups and
// DescribeTargetGroupAttributes for the live numbers, RegisterTargets and DeregisterTargets
// for its Rotation (Add, Drain, Drained, Remove). A target is in rotation only when the
// ALB says healthy; draining, unhealthy, initial, unused and unavailable are out. The ALB
// reports no time of entry into a state, so Since is when this ALB value first saw it.
type ALB struct {
	bal   *alb.Balancer
	api   alb.API
	arn   string
	clock clock.Clock
	// targets maps every service address of every host (host:port as the deployer names
	// targets: both start-first ports) to its target in the group (alb.TargetIDAt: the host's
	// instance id or IP, on that address's port).
	targets map[string]string
	// hostTargets maps a host's address to its target id without a port, for an address of
	// that host on a port the config does not list.
	hostTargets map[string]string

	mu   sync.Mutex
	seen map[string]seenState // by target id
}

type seenState struct {
	state string
	since time.Time
}

// NewALB watches and changes cfg's target group (balancer.target_group_arn) through api. Every
// address of a host (both ports of a start-first service) maps to its target with
// alb.TargetIDAt: hosts[].target, else the address, on the port of the address asked about.
// clk stamps Since; nil: the wall clock.
func NewALB(api alb.API, cfg *config.Config, clk clock.Clock) *ALB {
	if clk == nil {
		clk = clock.Real{}
	}
	b := &ALB{bal: alb.NewBalancer(api, cfg.Balancer.TargetGroupARN), api: api, arn: cfg.Balancer.TargetGroupARN,
		clock: clk, targets: map[string]string{}, hostTargets: map[string]string{}, seen: map[string]seenState{}}
	svc, ok := cfg.BalancedService()
	for _, h := range cfg.Hosts {
		if h.Target != "" {
			b.hostTargets[h.Address] = h.Target
		}
		if !ok {
			continue
		}
		for _, addr := range h.ServiceAddrs(svc) {
			if id, err := alb.TargetIDAt(h, addr); err == nil {
				b.targets[addr] = id
			}
		}
	}
	return b
}

// newALBFromEnv is BalancerFor's ALB: the SDK's default credential chain and region
// (balancer.region first), and the endpoint in ZERO502_ALB_ENDPOINT when set.
func newALBFromEnv(cfg *config.Config) (*ALB, error) {
	endpoint := strings.TrimSpace(os.Getenv(EnvALBEndpoint))
	api, err := alb.NewClient(context.Background(), cfg.Balancer, alb.ClientOptions{Endpoint: endpoint})
	if err != nil {
		return nil, fmt.Errorf("balancer.kind alb: %w", err)
	}
	return NewALB(api, cfg, nil), nil
}

// Name is "alb" and the target group's ARN.
func (b *ALB) Name() string { return b.bal.Name() }

// PacedView makes the deployer ask the ALB at most once a second per host (pacedViewer).
func (b *ALB) PacedView() {}

// targetID is the target group's id for target (host:port as configured): the mapped target of
// a host's service address; a host's address on another port keeps that port on the host's
// target; an address no host has is taken as an ip:port target as it stands.
func (b *ALB) targetID(target string) string {
	if id, ok := b.targets[target]; ok {
		return id
	}
	if host, port, err := net.SplitHostPort(target); err == nil {
		if id, ok := b.hostTargets[host]; ok {
			return net.JoinHostPort(id, port)
		}
	}
	return target
}

// TargetState is the ALB's state of target: in rotation only when healthy.
func (b *ALB) TargetState(ctx context.Context, target string) (TargetState, error) {
	id := b.targetID(target)
	state, reason, err := b.bal.TargetHealth(ctx, id)
	if err != nil {
		return TargetState{}, err
	}
	if reason == alb.ReasonNotRegistered {
		return TargetState{}, fmt.Errorf("target %s (host address %s) in %s: %w (the ALB says %s, %s); register it "+
			"in the target group, or set hosts[].target to the id it is registered under", id, target, b.arn,
			ErrUnknownTarget, state, reason)
	}
	now := b.clock.Now()
	b.mu.Lock()
	s, ok := b.seen[id]
	if !ok || s.state != state {
		s = seenState{state: state, since: now}
		b.seen[id] = s
	}
	b.mu.Unlock()
	return TargetState{State: state, InRotation: state == alb.StateHealthy, Since: s.since}, nil
}

// Settings are the target group's live numbers under their balancer.* names (the ones a target
// group has, alb.Numbers: health check, deregistration delay, slow start) and its matcher. The
// listener's numbers (listen, idle_timeout, …) are not the target group's, so they are not
// reported and the drift check skips them.
func (b *ALB) Settings(ctx context.Context) (Settings, error) {
	t, err := alb.Live(ctx, b.api, b.arn)
	if err != nil {
		return Settings{}, err
	}
	return Settings{BalancerNumbers: t.BalancerNumbers, Reported: alb.Numbers(), Matcher: t.Matcher,
		HealthCheckPort: t.HealthCheckPort, HealthCheckProtocol: t.HealthCheckProtocol}, nil
}

// DrainGuard is the fail-open guard: nil only when every other registered target of the group
// is healthy, else an error (wrapping alb.ErrOthersNotHealthy) naming each one that is not.
func (b *ALB) DrainGuard(ctx context.Context, target string) error {
	return b.bal.DrainGuard(ctx, b.targetID(target))
}

// Add registers target in the target group (RegisterTargets, on the port of the address): the
// ALB reports it initial until its health checks pass healthy_threshold times, then healthy.
func (b *ALB) Add(ctx context.Context, target string) error {
	return b.bal.Register(ctx, b.targetID(target))
}

// Drain deregisters target (DeregisterTargets): the ALB sends it no new request and lets the
// ones in flight finish for at most the target group's deregistration delay
// (balancer.deregistration_delay), the drain window of a balancer-side drain.
func (b *ALB) Drain(ctx context.Context, target string) error {
	return b.bal.Deregister(ctx, b.targetID(target))
}

// Drained reports whether the ALB is done draining target: it no longer holds it
// (Target.NotRegistered), its deregistration delay over or, on a real ALB, its requests and
// connections gone. While it is draining, and while it is still registered at all (an ALB may
// answer the state from before a DeregisterTargets for a moment), it is not drained.
func (b *ALB) Drained(ctx context.Context, target string) (bool, error) {
	_, reason, err := b.bal.TargetHealth(ctx, b.targetID(target))
	if err != nil {
		return false, err
	}
	return reason == alb.ReasonNotRegistered, nil
}

// Remove deregisters target, with no look first: ELBv2 leaves a target it does not hold (never
// registered, or its deregistration over) and one already draining as they are, and its reads are
// eventually consistent, so a target registered a moment ago may still read "not registered"
// and would be left in the group for good (a start-first instance that died at once).
func (b *ALB) Remove(ctx context.Context, target string) error {
	return b.bal.Deregister(ctx, b.targetID(target))
}

var (
	_ Rotation     = (*ALB)(nil)
	_ Balancer     = (*ALB)(nil)
	_ DrainGuarder = (*ALB)(nil)
)
