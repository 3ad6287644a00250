package elbv2double

import (
	"net"
	"sort"
	"strconv"
	"time"
)

// Target states, as DescribeTargetHealth reports them.
const (
	StateInitial     = "initial"
	StateHealthy     = "healthy"
	StateUnhealthy   = "unhealthy"
	StateDraining    = "draining"
	stateUnused      = "unused"
	stateUnavailable = "unavailable"
)

// fixedAttributes are the other attributes of an HTTP target group: reported and modifiable,
// but without effect in the double.
var fixedAttributes = map[string]string{
	"stickiness.enabled":                                             "false",
	"stickiness.type":                                                "lb_cookie",
	"stickiness.lb_cookie.duration_seconds":                          "86400",
	"load_balancing.algorithm.type":                                  "round_robin",
	"load_balancing.cross_zone.enabled":                              "use_load_balancer_configuration",
	"target_group_health.dns_failover.minimum_healthy_targets.count": "1",
}

type targetGroup struct {
	arn, name  string
	port       int
	targetType string
	settings   Settings
	extra      map[string]string
	targets    map[string]*target // by targetKey
	failOpen   bool
	rounds     int
}

type target struct {
	id          string
	port        int
	generation  int // bumped on every (re)registration, so a stale check result is dropped
	state       string
	reason      string
	description string
	since       time.Time
	successes   int // consecutive good checks
	failures    int // consecutive failed checks
	checked     bool
	drainUntil  time.Time
}

func targetKey(id string, port int) string { return net.JoinHostPort(id, strconv.Itoa(port)) }

// trafficPort is the HealthCheckPort that checks each target on its own port.
const trafficPort = "traffic-port"

// checkPort is the port the health check of a target on port goes to: the target's own
// (traffic-port) or the fixed HealthCheckPort, the same for every target.
func (s Settings) checkPort(port int) int {
	if p, err := strconv.Atoi(s.HealthCheckPort); err == nil {
		return p
	}
	return port
}

func (g *targetGroup) xml() xmlTargetGroup {
	return xmlTargetGroup{
		TargetGroupArn: g.arn, TargetGroupName: g.name, Protocol: "HTTP", ProtocolVersion: "HTTP1",
		Port: g.port, VpcId: "vpc-0double0000000001", HealthCheckProtocol: g.settings.HealthCheckProtocol,
		HealthCheckPort: g.settings.HealthCheckPort, HealthCheckEnabled: true,
		HealthCheckIntervalSeconds: int(g.settings.Interval / time.Second),
		HealthCheckTimeoutSeconds:  int(g.settings.Timeout / time.Second),
		HealthyThresholdCount:      g.settings.HealthyThreshold,
		UnhealthyThresholdCount:    g.settings.UnhealthyThreshold,
		HealthCheckPath:            g.settings.HealthCheckPath,
		Matcher:                    xmlMatcher{HttpCode: g.settings.Matcher},
		TargetType:                 g.targetType, IpAddressType: "ipv4",
	}
}

func (g *targetGroup) attributes() []xmlAttribute {
	out := []xmlAttribute{
		{"deregistration_delay.timeout_seconds", strconv.Itoa(int(g.settings.DeregistrationDelay / time.Second))},
		{"slow_start.duration_seconds", strconv.Itoa(int(g.settings.SlowStart / time.Second))},
	}
	keys := make([]string, 0, len(g.extra))
	for k := range g.extra {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	for _, k := range keys {
		out = append(out, xmlAttribute{k, g.extra[k]})
	}
	return out
}

func (g *targetGroup) register(id string, port int, now time.Time) {
	key := targetKey(id, port)
	t, ok := g.targets[key]
	if ok && t.state != StateDraining {
		return // registering a registered target is a no-op, as in ELBv2
	}
	gen := 1
	if ok {
		gen = t.generation + 1
	}
	g.targets[key] = &target{id: id, port: port, generation: gen, state: StateInitial,
		reason: "Elb.RegistrationInProgress", description: "Target registration is in progress", since: now}
}

// deregister starts key's draining: no new requests, removed once the deregistration delay is
// over (expire). A real ALB also ends the draining early, as soon as the target has no request
// in flight and no open connection; the double forwards no traffic, so it cannot see either and
// always keeps the full delay. A deployer polling for the end of draining therefore waits the
// longest an ALB would, never less.
func (g *targetGroup) deregister(key string, now time.Time) {
	t := g.targets[key]
	if t.state == StateDraining {
		return
	}
	if g.settings.DeregistrationDelay == 0 {
		delete(g.targets, key)
		return
	}
	t.generation++
	t.state, t.since = StateDraining, now
	t.reason, t.description = "Target.DeregistrationInProgress", "Target deregistration is in progress"
	t.drainUntil = now.Add(g.settings.DeregistrationDelay)
}

// expire removes the targets whose deregistration delay is over.
func (g *targetGroup) expire(now time.Time) {
	for k, t := range g.targets {
		if t.state == StateDraining && !now.Before(t.drainUntil) {
			delete(g.targets, k)
		}
	}
}

// updateFailOpen: an ALB with registered targets none of which is healthy routes to all of
// them (fails open) rather than to none.
func (g *targetGroup) updateFailOpen() {
	active, healthy, unhealthy := 0, 0, 0
	for _, t := range g.targets {
		switch t.state {
		case StateDraining:
			continue
		case StateHealthy:
			healthy++
		case StateUnhealthy:
			unhealthy++
		}
		active++
	}
	g.failOpen = active > 0 && healthy == 0 && unhealthy > 0
}

// routes are the targets the load balancer sends new requests to.
func (g *targetGroup) routes() []string {
	var out []string
	for k, t := range g.targets {
		if t.state == StateHealthy || g.failOpen && t.state != StateDraining {
			out = append(out, k)
		}
	}
	sort.Strings(out)
	return out
}

func (t *target) xml(s Settings) xmlTargetHealthDescription {
	d := xmlTargetHealthDescription{
		Target: xmlTarget{Id: t.id, Port: t.port}, HealthCheckPort: strconv.Itoa(s.checkPort(t.port)),
		TargetHealth: xmlTargetHealth{State: t.state},
	}
	if t.state != StateHealthy {
		d.TargetHealth.Reason, d.TargetHealth.Description = t.reason, t.description
	}
	return d
}

// record applies one health-check result to the target's streaks and state, as an ALB does:
// healthy after healthy_threshold consecutive good checks, unhealthy after
// unhealthy_threshold consecutive failed ones. A newly registered target, too, stays initial
// until healthy_threshold good checks: the ELB user guide says a new target "must pass one
// health check", while deploys through real ALBs report new targets waiting
// healthy_threshold × interval; the double takes the slower of the two, so a deployer that
// works against it waits long enough on either.
func (t *target) record(res checkResult, s Settings, now time.Time) {
	t.checked = true
	if res.ok {
		t.successes++
		t.failures = 0
	} else {
		t.failures++
		t.successes = 0
	}
	set := func(state, reason, desc string) {
		if state != t.state {
			t.since = now
		}
		t.state, t.reason, t.description = state, reason, desc
	}
	switch {
	case res.ok && t.successes >= s.HealthyThreshold:
		set(StateHealthy, "", "")
	case !res.ok && t.failures >= s.UnhealthyThreshold:
		set(StateUnhealthy, res.reason, res.description)
	case t.state == StateInitial:
		set(StateInitial, "Elb.InitialHealthChecking", "Initial health checks in progress")
	case t.state == StateUnhealthy && !res.ok:
		set(StateUnhealthy, res.reason, res.description)
	}
}

// FailOpen reports whether the target group currently routes to all its targets because none
// is healthy.
func (s *Server) FailOpen(arn string) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	g, ok := s.groups[arn]
	return ok && g.failOpen
}

// Routes are the targets (id:port) the load balancer would send a new request to now.
func (s *Server) Routes(arn string) []string {
	s.mu.Lock()
	defer s.mu.Unlock()
	g, ok := s.groups[arn]
	if !ok {
		return nil
	}
	g.expire(s.clock.Now())
	g.updateFailOpen()
	return g.routes()
}

// Rounds is how many health-check rounds the target group has completed.
func (s *Server) Rounds(arn string) int {
	s.mu.Lock()
	defer s.mu.Unlock()
	if g, ok := s.groups[arn]; ok {
		return g.rounds
	}
	return 0
}
