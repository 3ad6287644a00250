package deployer

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/zero502/zero502/infra"
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
	// Settings are the balancer's live health-check and timeout numbers. A balancer without
	// live settings returns an error wrapping ErrNoView.
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

// Settings are a balancer's live numbers, named as the balancer.* keys of the config. A zero
// field is one the balancer does not report; the drift check skips it.
type Settings struct {
	Listen             string        `json:"listen,omitempty"`
	HealthPath         string        `json:"health_path,omitempty"`
	Interval           time.Duration `json:"interval,omitempty"`
	Timeout            time.Duration `json:"timeout,omitempty"`
	UnhealthyThreshold int           `json:"unhealthy_threshold,omitempty"`
	HealthyThreshold   int           `json:"healthy_threshold,omitempty"`
	IdleTimeout        time.Duration `json:"idle_timeout,omitempty"`
	ConnectTimeout     time.Duration `json:"connect_timeout,omitempty"`
	HeaderTimeout      time.Duration `json:"header_timeout,omitempty"`
	MaxHeaderBytes     int           `json:"max_header_bytes,omitempty"`
}

// Drift is one balancer setting whose live value differs from the config.
type Drift struct {
	// Field is the config key (balancer.interval).
	Field string `json:"field"`
	// Config and Live are the two values as people write them.
	Config string `json:"config"`
	Live   string `json:"live"`
}

func (d Drift) String() string {
	return fmt.Sprintf("%s: config %s, live balancer %s", d.Field, d.Config, d.Live)
}

// CompareSettings returns every reported live setting that differs from cfg, in key order.
func CompareSettings(cfg infra.Balancer, live Settings) []Drift {
	var out []Drift
	str := func(field, c, l string) {
		if l != "" && c != l {
			out = append(out, Drift{Field: "balancer." + field, Config: c, Live: l})
		}
	}
	dur := func(field string, c, l time.Duration) {
		if l != 0 && c != l {
			out = append(out, Drift{Field: "balancer." + field, Config: c.String(), Live: l.String()})
		}
	}
	num := func(field string, c, l int) {
		if l != 0 && c != l {
			out = append(out, Drift{Field: "balancer." + field, Config: fmt.Sprint(c), Live: fmt.Sprint(l)})
		}
	}
	str("listen", cfg.Listen, live.Listen)
	str("health_path", cfg.HealthPath, live.HealthPath)
	dur("interval", cfg.Interval, live.Interval)
	dur("timeout", cfg.Timeout, live.Timeout)
	num("unhealthy_threshold", cfg.UnhealthyThreshold, live.UnhealthyThreshold)
	num("healthy_threshold", cfg.HealthyThreshold, live.HealthyThreshold)
	dur("idle_timeout", cfg.IdleTimeout, live.IdleTimeout)
	dur("connect_timeout", cfg.ConnectTimeout, live.ConnectTimeout)
	dur("header_timeout", cfg.HeaderTimeout, live.HeaderTimeout)
	num("max_header_bytes", cfg.MaxHeaderBytes, live.MaxHeaderBytes)
	return out
}

// LiveDrift reads bal's live settings and lists every one that differs from cfg: CompareSettings,
// plus the ExtraDrift of a balancer with settings Settings cannot carry (ALB). A balancer without
// live settings returns an error wrapping ErrNoView.
func LiveDrift(ctx context.Context, bal Balancer, cfg infra.Balancer) (Settings, []Drift, error) {
	live, err := bal.Settings(ctx)
	if err != nil {
		return Settings{}, nil, err
	}
	drifts := CompareSettings(cfg, live)
	if x, ok := bal.(ExtraDrifter); ok {
		extra, err := x.ExtraDrift(ctx, cfg)
		if err != nil {
			return Settings{}, nil, err
		}
		drifts = append(drifts, extra...)
	}
	return live, drifts, nil
}

// ApplySettings returns cfg's balancer with every reported live setting in place of the
// configured one: the balancer the deploy really runs through, for the invariants.
func ApplySettings(cfg infra.Balancer, live Settings) infra.Balancer {
	if live.Listen != "" {
		cfg.Listen = live.Listen
	}
	if live.HealthPath != "" {
		cfg.HealthPath = live.HealthPath
	}
	setDur := func(dst *time.Duration, v time.Duration) {
		if v != 0 {
			*dst = v
		}
	}
	setNum := func(dst *int, v int) {
		if v != 0 {
			*dst = v
		}
	}
	setDur(&cfg.Interval, live.Interval)
	setDur(&cfg.Timeout, live.Timeout)
	setNum(&cfg.UnhealthyThreshold, live.UnhealthyThreshold)
	setNum(&cfg.HealthyThreshold, live.HealthyThreshold)
	setDur(&cfg.IdleTimeout, live.IdleTimeout)
	setDur(&cfg.ConnectTimeout, live.ConnectTimeout)
	setDur(&cfg.HeaderTimeout, live.HeaderTimeout)
	setNum(&cfg.MaxHeaderBytes, live.MaxHeaderBytes)
	return cfg
}

// BalancerFor builds the balancer cfg describes: the in-house LB's admin API client, the ALB
// target group (AWS SDK default credential chain; endpoint from ZERO502_ALB_ENDPOINT when set),
// or None.
func BalancerFor(cfg *infra.Config) (Balancer, error) {
	switch cfg.Balancer.Kind {
	case infra.BalancerInHouse:
		return tierFor(cfg.Balancer.AdminAddrs(), func(a string) Balancer { return NewInHouse(a, cfg.Balancer.AdminToken) }), nil
	case infra.BalancerEdges:
		return tierFor(cfg.Balancer.Admins, func(a string) Balancer { return NewEdgeAdmin(a, cfg.Balancer.AdminToken) }), nil
	case infra.BalancerDNS:
		return dnsSetFor(cfg)
	case infra.BalancerNone:
		return None{}, nil
	case infra.BalancerALB:
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
