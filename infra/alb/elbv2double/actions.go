package elbv2double

import (
	"fmt"
	"net"
	"net/http"
	"net/url"
	"slices"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/zero502/zero502/internal/testrig/awsdouble"
)

// handler answers one action: its result (the content of <ActionResult>) or the error to answer.
// It runs with s.mu held.
type handler func(form url.Values) (any, error)

// handlers are the actions, for a request signed for region.
func (s *Server) handlers(region string) map[string]handler {
	return map[string]handler{
		"DescribeTargetGroups":          func(form url.Values) (any, error) { return s.describeTargetGroups(form, region) },
		"DescribeTargetGroupAttributes": s.onGroup(describeTargetGroupAttributes),
		"ModifyTargetGroup":             s.onGroup(modifyTargetGroup),
		"ModifyTargetGroupAttributes":   s.onGroup(modifyTargetGroupAttributes),
		"DescribeTargetHealth":          s.onGroup(s.describeTargetHealth),
		"RegisterTargets":               s.onTargets(s.registerTargets),
		"DeregisterTargets":             s.onTargets(s.deregisterTargets),
	}
}

// onGroup is the handler of an action on the target group named by the required TargetGroupArn
// parameter.
func (s *Server) onGroup(act func(g *targetGroup, form url.Values) (any, error)) handler {
	return func(form url.Values) (any, error) {
		g, err := s.group(form)
		if err != nil {
			return nil, err
		}
		return act(g, form)
	}
}

// onTargets is the handler of an action on the targets listed in the required Targets
// parameter, in the target group named by TargetGroupArn.
func (s *Server) onTargets(act func(g *targetGroup, targets []xmlTarget) (any, error)) handler {
	return s.onGroup(func(g *targetGroup, form url.Values) (any, error) {
		targets, err := targetsParam(form, g)
		if err != nil {
			return nil, err
		}
		if len(targets) == 0 {
			return nil, validation("1 validation error detected: Value null at 'targets' failed to satisfy constraint: Member must not be null")
		}
		return act(g, targets)
	})
}

// members reads a Query-protocol list of scalars: Name.member.1, Name.member.2, …
func members(form url.Values, name string) []string {
	var out []string
	for i := 1; ; i++ {
		v, ok := form[fmt.Sprintf("%s.member.%d", name, i)]
		if !ok {
			return out
		}
		out = append(out, v[0])
	}
}

// intParam reads an optional integer parameter.
func intParam(form url.Values, name string) (int, bool, error) {
	v, ok := form[name]
	if !ok {
		return 0, false, nil
	}
	n, err := strconv.Atoi(v[0])
	if err != nil {
		return 0, true, validation("Value '%s' at '%s' failed to satisfy constraint: Member must be an integer", v[0], name)
	}
	return n, true, nil
}

func inRange(name string, n, lo, hi int) error {
	if n < lo || n > hi {
		return validation("1 validation error detected: Value '%d' at '%s' failed to satisfy constraint: "+
			"Member must have value between %d and %d", n, name, lo, hi)
	}
	return nil
}

// group returns the target group named by the required TargetGroupArn parameter; s.mu is held.
func (s *Server) group(form url.Values) (*targetGroup, error) {
	arn := form.Get("TargetGroupArn")
	if arn == "" {
		return nil, validation("1 validation error detected: Value null at 'targetGroupArn' failed to satisfy constraint: Member must not be null")
	}
	g, ok := s.groups[arn]
	if !ok {
		return nil, notFound(arn)
	}
	return g, nil
}

// elsewhere refuses a request naming a target group ARN of another region than the one it was
// signed for, as ELBv2 does: each region's endpoint knows only its own target groups.
func elsewhere(form url.Values, region string) error {
	for _, arn := range slices.Concat(form["TargetGroupArn"], members(form, "TargetGroupArns")) {
		if parts := strings.SplitN(arn, ":", 6); len(parts) == 6 && parts[3] != region {
			return notFound(arn)
		}
	}
	return nil
}

// describeTargetGroups answers for the target groups asked for by ARN or name, or for every
// one; by name or every one, only the groups of the request's signing region.
func (s *Server) describeTargetGroups(form url.Values, region string) (any, error) {
	arns, names := members(form, "TargetGroupArns"), members(form, "Names")
	var out targetGroupsResult
	if region != s.region && len(arns) == 0 { // every group is in s.region
		if len(names) > 0 {
			return nil, awsdouble.Errorf(http.StatusBadRequest, "TargetGroupNotFound",
				"One or more target groups not found: '%s'", names[0])
		}
		return out, nil
	}
	switch {
	case len(arns) > 0:
		for _, arn := range arns {
			g, ok := s.groups[arn]
			if !ok {
				return nil, notFound(arn)
			}
			out.TargetGroups = append(out.TargetGroups, g.xml())
		}
	case len(names) > 0:
		for _, name := range names {
			found := false
			for _, arn := range s.order {
				if g := s.groups[arn]; g.name == name {
					out.TargetGroups = append(out.TargetGroups, g.xml())
					found = true
				}
			}
			if !found {
				return nil, awsdouble.Errorf(http.StatusBadRequest, "TargetGroupNotFound",
					"One or more target groups not found: '%s'", name)
			}
		}
	default:
		for _, arn := range s.order {
			out.TargetGroups = append(out.TargetGroups, s.groups[arn].xml())
		}
	}
	return out, nil
}

func describeTargetGroupAttributes(g *targetGroup, _ url.Values) (any, error) {
	return attributesResult{Attributes: g.attributes()}, nil
}

func modifyTargetGroup(g *targetGroup, form url.Values) (any, error) {
	next := g.settings
	ints := []struct {
		name   string
		lo, hi int
		set    func(int)
	}{
		{"HealthCheckIntervalSeconds", 5, 300, func(n int) { next.Interval = time.Duration(n) * time.Second }},
		{"HealthCheckTimeoutSeconds", 2, 120, func(n int) { next.Timeout = time.Duration(n) * time.Second }},
		{"HealthyThresholdCount", 2, 10, func(n int) { next.HealthyThreshold = n }},
		{"UnhealthyThresholdCount", 2, 10, func(n int) { next.UnhealthyThreshold = n }},
	}
	for _, p := range ints {
		n, ok, err := intParam(form, p.name)
		if err != nil {
			return nil, err
		}
		if !ok {
			continue
		}
		if err := inRange(p.name, n, p.lo, p.hi); err != nil {
			return nil, err
		}
		p.set(n)
	}
	if v, ok := form["HealthCheckPath"]; ok {
		if p := v[0]; !strings.HasPrefix(p, "/") || len(p) > 1024 {
			return nil, validation("Health check path '%s' must start with '/' and be at most 1024 characters", p)
		}
		next.HealthCheckPath = v[0]
	}
	if v, ok := form["Matcher.HttpCode"]; ok {
		if _, err := parseMatcher(v[0]); err != nil {
			return nil, validation("Matcher HttpCode '%s' is not valid: %v", v[0], err)
		}
		next.Matcher = v[0]
	}
	if v, ok := form["HealthCheckPort"]; ok {
		if p, err := strconv.Atoi(v[0]); v[0] != trafficPort && (err != nil || p < 1 || p > 65535) {
			return nil, validation("Health check port '%s' must be 'traffic-port' or a port from 1 to 65535", v[0])
		}
		next.HealthCheckPort = v[0]
	}
	if v, ok := form["HealthCheckProtocol"]; ok {
		if p := v[0]; p != "HTTP" && p != "HTTPS" {
			return nil, awsdouble.Errorf(http.StatusBadRequest, "InvalidConfigurationRequest",
				"Health check protocol '%s' is not supported for target groups with the HTTP protocol", p)
		}
		next.HealthCheckProtocol = v[0]
	}
	if next.Timeout >= next.Interval {
		return nil, validation("Health check timeout '%d' must be smaller than the interval '%d'",
			int(next.Timeout/time.Second), int(next.Interval/time.Second))
	}
	g.settings = next
	return targetGroupsResult{TargetGroups: []xmlTargetGroup{g.xml()}}, nil
}

func modifyTargetGroupAttributes(g *targetGroup, form url.Values) (any, error) {
	if len(form["Attributes.member.1.Key"]) == 0 {
		return nil, validation("1 validation error detected: Value null at 'attributes' failed to satisfy constraint: Member must not be null")
	}
	next := g.settings
	extra := map[string]string{}
	for i := 1; ; i++ {
		prefix := fmt.Sprintf("Attributes.member.%d.", i)
		key, ok := form[prefix+"Key"]
		if !ok {
			break
		}
		value := form.Get(prefix + "Value")
		secs, numErr := strconv.Atoi(value)
		bad := func(rule string) error {
			return awsdouble.Errorf(http.StatusBadRequest, "InvalidConfigurationRequest",
				"The value of '%s' must be %s, got '%s'", key[0], rule, value)
		}
		switch key[0] {
		case "deregistration_delay.timeout_seconds":
			if numErr != nil || secs < 0 || secs > 3600 {
				return nil, bad("an integer between 0 and 3600")
			}
			next.DeregistrationDelay = time.Duration(secs) * time.Second
		case "slow_start.duration_seconds":
			if numErr != nil || secs != 0 && (secs < 30 || secs > 900) {
				return nil, bad("0 or an integer between 30 and 900")
			}
			next.SlowStart = time.Duration(secs) * time.Second
		default:
			if _, known := fixedAttributes[key[0]]; !known {
				return nil, validation("Target group attribute key '%s' is not recognized", key[0])
			}
			extra[key[0]] = value
		}
	}
	g.settings = next
	for k, v := range extra {
		g.extra[k] = v
	}
	return attributesResult{Attributes: g.attributes()}, nil
}

// targetsParam reads Targets.member.N.Id / .Port; a missing port is the group's traffic port.
func targetsParam(form url.Values, g *targetGroup) ([]xmlTarget, error) {
	var out []xmlTarget
	for i := 1; ; i++ {
		prefix := fmt.Sprintf("Targets.member.%d.", i)
		id, ok := form[prefix+"Id"]
		if !ok {
			return out, nil
		}
		port, set, err := intParam(form, prefix+"Port")
		if err != nil {
			return nil, err
		}
		if !set {
			port = g.port
		}
		if err := inRange(prefix+"Port", port, 1, 65535); err != nil {
			return nil, err
		}
		out = append(out, xmlTarget{Id: id[0], Port: port})
	}
}

func (s *Server) describeTargetHealth(g *targetGroup, form url.Values) (any, error) {
	asked, err := targetsParam(form, g)
	if err != nil {
		return nil, err
	}
	g.expire(s.clock.Now())
	var out describeTargetHealthResult
	if len(asked) == 0 {
		keys := make([]string, 0, len(g.targets))
		for k := range g.targets {
			keys = append(keys, k)
		}
		sort.Strings(keys)
		for _, k := range keys {
			out.TargetHealthDescriptions = append(out.TargetHealthDescriptions, g.targets[k].xml(g.settings))
		}
		return out, nil
	}
	for _, a := range asked {
		if t, ok := g.targets[targetKey(a.Id, a.Port)]; ok {
			out.TargetHealthDescriptions = append(out.TargetHealthDescriptions, t.xml(g.settings))
			continue
		}
		out.TargetHealthDescriptions = append(out.TargetHealthDescriptions, xmlTargetHealthDescription{
			Target: a, HealthCheckPort: strconv.Itoa(g.settings.checkPort(a.Port)),
			TargetHealth: xmlTargetHealth{State: stateUnused, Reason: "Target.NotRegistered",
				Description: "Target is not registered to the target group"},
		})
	}
	return out, nil
}

func (s *Server) registerTargets(g *targetGroup, targets []xmlTarget) (any, error) {
	for _, t := range targets {
		if g.targetType == "ip" && net.ParseIP(t.Id) == nil || g.targetType == "instance" && !strings.HasPrefix(t.Id, "i-") {
			return nil, awsdouble.Errorf(http.StatusBadRequest, "InvalidTarget",
				"The following targets are not valid for a target group of type %s: '%s'", g.targetType, t.Id)
		}
	}
	now := s.clock.Now()
	for _, t := range targets {
		g.register(t.Id, t.Port, now)
	}
	g.updateFailOpen()
	return struct{}{}, nil
}

func (s *Server) deregisterTargets(g *targetGroup, targets []xmlTarget) (any, error) {
	now := s.clock.Now()
	g.expire(now)
	for _, t := range targets {
		// ELBv2 answers 200 and changes nothing for an id:port the group does not hold (a
		// target registered on another port, or never): only registered ones start draining.
		if _, ok := g.targets[targetKey(t.Id, t.Port)]; ok {
			g.deregister(targetKey(t.Id, t.Port), now)
		}
	}
	g.updateFailOpen()
	return struct{}{}, nil
}
