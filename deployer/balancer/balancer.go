// Package balancer owns the deployer's view of the load balancer in front of a fleet, behind the
// interfaces the rollout pipeline asks through: Balancer (a target's state, the live numbers),
// Rotation (add, drain, drained, remove), Weighter (the canary's share) and OutcomeViewer (what
// users got from each target). The adapters: the in-house LB's admin API (InHouse, also an
// edge's), an AWS ALB target group (ALB), the edges' DNS A set (DNSSet), a tier of several
// (Tier), and None (direct checks only). For picks the one a config names.
package balancer

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/zero502/zero502/infra/adminapi"
	"github.com/zero502/zero502/infra/alb"
	"github.com/zero502/zero502/infra/config"
)

// Balancer is what the deployer needs of the load balancer in front of the fleet: its own view
// of one target (to record when the target left and re-entered rotation) and its live timing
// numbers (to refuse a deploy whose config drifted from the balancer it runs through).
// Implementations: the in-house LB's admin API (InHouse), the AWS ALB target group (ALB:
// DescribeTargetHealth, DescribeTargetGroups/Attributes) and None (direct checks only).
type Balancer interface {
	// Name says which balancer this is, for output ("inhouse 127.0.0.1:18081", "none").
	Name() string
	// TargetState is the balancer's current view of target (host:port, as configured). A
	// balancer without a view (None) returns an error wrapping ErrNoView.
	TargetState(ctx context.Context, target string) (TargetState, error)
	// Settings are the balancer's live numbers (the ones it has, listed in Settings.Reported).
	// A balancer without live settings returns an error wrapping ErrNoView.
	Settings(ctx context.Context) (Settings, error)
}

// Rotation is a Balancer the deployer can change itself, not only watch: the in-house LB's
// admin write API, the ALB's RegisterTargets and DeregisterTargets. It serves services with
// drain: balancer (the app knows nothing of the handshake, so the deployer takes the target out
// of rotation before it sends the stop signal) and start-first (the new instance is a new target
// beside the old one).
type Rotation interface {
	// Add puts target (host:port) in the balancer's set, or undrains it. The balancer sends it
	// traffic only once its own checks passed healthy_threshold times: watch TargetState.
	Add(ctx context.Context, target string) error
	// Drain takes target out of rotation: no new requests, in-flight ones finish.
	Drain(ctx context.Context, target string) error
	// Drained reports whether a drained target has nothing left in flight (in-house: its
	// in-flight count is 0; ALB: it left the draining state, its deregistration delay over or
	// its connections gone): the balancer's proof that stopping it now loses no request.
	Drained(ctx context.Context, target string) (bool, error)
	// Remove forgets target. Removing one that is unknown is not an error.
	Remove(ctx context.Context, target string) error
}

// LeaveViewer is a Balancer of several instances (a Tier) that can tell when a target has left
// rotation at every one of them. Its TargetState answers "is it in rotation?" (in only when
// every instance has it in: right for a target coming back); a target that left at one instance
// only still gets new requests from the others, so a drain asks LeftState instead.
type LeaveViewer interface {
	// LeftState is target's state with InRotation false only once every instance has it out of
	// rotation; while any still has it in, InRotation is true and still names those instances
	// (by their Name), in the instances' order.
	LeftState(ctx context.Context, target string) (st TargetState, still []string, err error)
}

// ErrNoView is wrapped by a Balancer that cannot see targets or settings (kind none): the
// deployer then relies on direct health checks alone.
var ErrNoView = errors.New("balancer has no view of its targets")

// ErrUnknownTarget is wrapped when the balancer does not know the target at all.
var ErrUnknownTarget = errors.New("balancer does not know this target")

// TargetState is the balancer's view of one target.
type TargetState struct {
	// State is the balancer's word for it: "healthy", "draining", "unhealthy".
	State string `json:"state"`
	// InRotation is true when the balancer sends the target new requests.
	InRotation bool `json:"in_rotation"`
	// Since is when the target entered State.
	Since time.Time `json:"since"`
}

// Settings are what a balancer runs now, named as the config names it: the balancer's numbers
// it has, its listen address (in-house LB) and its health-check matcher (ALB).
type Settings struct {
	// Listen is the in-house LB's listener; "" for a balancer without one of its own (ALB).
	Listen string `json:"listen,omitempty"`
	// BalancerNumbers are the live numbers; only those in Reported mean anything.
	config.BalancerNumbers
	// Reported are the config keys of the numbers this balancer has (in-house:
	// adminapi.InHouseNumbers; ALB: alb.Numbers). The drift check and the overlay of live
	// numbers onto the config (config.BalancerNumbers.Overlay) look at these only.
	Reported []string `json:"-"`
	// Matcher is an ALB target group's health-check success codes; "" for the in-house LB.
	Matcher string `json:"matcher,omitempty"`
	// HealthCheckPort and HealthCheckProtocol are where an ALB target group sends its health
	// checks ("traffic-port": each target's own port) and how; "" for the in-house LB.
	HealthCheckPort     string `json:"health_check_port,omitempty"`
	HealthCheckProtocol string `json:"health_check_protocol,omitempty"`
}

// Drift lists every setting of live that differs from the config cfg: the listen address,
// every reported number (infra's one comparison of the numbers, in the order of the type), and
// an ALB's fixed settings (alb.Timing.FixedDrift): the matcher, which must be alb.Matcher (200
// only, so a draining server's 503 takes it out), and the health check's port and protocol
// (each target's own port, over HTTP: a fixed port checks another instance than the target).
// One comparison for every kind of balancer; what a balancer does not have is not compared.
func (live Settings) Drift(cfg config.Balancer) []config.Drift {
	var out []config.Drift
	if live.Listen != "" && live.Listen != cfg.Listen {
		out = append(out, config.Drift{Field: "balancer.listen", Config: cfg.Listen, Live: live.Listen})
	}
	out = append(out, cfg.Drift(live.BalancerNumbers, live.Reported)...)
	if live.Matcher != "" { // an ALB's
		fixed := alb.Timing{Matcher: live.Matcher, HealthCheckPort: live.HealthCheckPort, HealthCheckProtocol: live.HealthCheckProtocol}
		out = append(out, fixed.FixedDrift()...)
	}
	return out
}

// LiveDrift reads bal's live settings and lists every one that differs from cfg (Settings.Drift);
// for a Tier, every instance's. A balancer without live settings returns an error wrapping
// ErrNoView.
func LiveDrift(ctx context.Context, bal Balancer, cfg config.Balancer) (Settings, []config.Drift, error) {
	if t, ok := bal.(Tier); ok {
		return t.drift(ctx, cfg)
	}
	live, err := bal.Settings(ctx)
	if err != nil {
		return Settings{}, nil, err
	}
	return live, live.Drift(cfg), nil
}

// For builds the balancer cfg describes: the in-house LB's admin API client, the ALB
// target group (AWS SDK default credential chain; endpoint from ZERO502_ALB_ENDPOINT when set),
// or None.
func For(cfg *config.Config) (Balancer, error) {
	switch cfg.Balancer.Kind {
	case config.BalancerInHouse:
		return tierFor(cfg.Balancer.AdminAddrs(), func(a string) Balancer { return NewInHouse(a, cfg.Balancer.AdminToken) }), nil
	case config.BalancerEdges:
		return tierFor(cfg.Balancer.Admins, func(a string) Balancer { return NewEdgeAdmin(a, cfg.Balancer.AdminToken) }), nil
	case config.BalancerDNS:
		return dnsSetFor(cfg)
	case config.BalancerNone:
		return None{}, nil
	case config.BalancerALB:
		return newALBFromEnv(cfg)
	}
	return nil, fmt.Errorf("balancer.kind %q: must be inhouse, alb, edges, dns or none", cfg.Balancer.Kind)
}

// None is the balancer of kind none: no view, so the deployer checks services directly only.
type None struct{}

// Name is "none".
func (None) Name() string { return "none" }

// TargetState always wraps ErrNoView.
func (None) TargetState(context.Context, string) (TargetState, error) {
	return TargetState{}, fmt.Errorf("balancer.kind none: %w", ErrNoView)
}

// Settings always wraps ErrNoView.
func (None) Settings(context.Context) (Settings, error) {
	return Settings{}, fmt.Errorf("balancer.kind none: %w", ErrNoView)
}

// OutcomeViewer is a Balancer that publishes, per target, what the requests it sent there got
// (the in-house LB: the outcomes in GET /admin/backends). The analysis reads it: health is not
// what users get.
type OutcomeViewer interface {
	// Outcomes is a snapshot of every target's cumulative outcomes, one entry per balancer
	// instance that has the target (one LB, or each LB of a tier).
	Outcomes(ctx context.Context) (Outcomes, error)
}

// Outcomes are a snapshot of the balancer's per-target evidence: target address → its status at
// each balancer instance (in the instances' order).
type Outcomes map[string][]adminapi.BackendStatus

// Weighter is a Balancer that splits new requests by per-target weights (the in-house LB's
// PUT /admin/backends/{addr}/weight): how the canary gets only its share.
type Weighter interface {
	// SetWeight sets target's weight (adminapi.MinWeight..MaxWeight; adminapi.DefaultWeight is
	// every target's at first): its share of new requests is its weight over the sum of the
	// weights in rotation.
	SetWeight(ctx context.Context, target string, weight int) error
}
