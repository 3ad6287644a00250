package alb

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	elbv2 "github.com/aws/aws-sdk-go-v2/service/elasticloadbalancingv2"
	"github.com/aws/aws-sdk-go-v2/service/elasticloadbalancingv2/types"

	"github.com/zero502/zero502/infra/config"
)

// Attribute keys zero502 manages on a target group.
const (
	AttrDeregistrationDelay = "deregistration_delay.timeout_seconds"
	AttrSlowStart           = "slow_start.duration_seconds"
)

// Matcher is the health-check success code zero502 sets: only 200 is healthy, so a draining
// server's 503 takes it out of rotation.
const Matcher = "200"

// HealthCheckPort is the health-check port zero502 sets: each target's own port. A fixed port
// would check one port for every target, so a start-first instance registered on its second
// port would be judged by the old instance's health check.
const HealthCheckPort = "traffic-port"

// HealthCheckProtocol is the health-check protocol zero502 sets: the servers' health endpoint
// speaks plain HTTP.
const HealthCheckProtocol = string(types.ProtocolEnumHttp)

// Timing is what a target group runs, in the config's terms: the balancer's numbers a target
// group has (Numbers: its health check, deregistration delay and slow start; the others stay
// zero), its health-check matcher, port and protocol. Live reads it from AWS; Wanted derives
// it from the config.
type Timing struct {
	TargetGroupARN string
	config.BalancerNumbers
	Matcher string
	// HealthCheckPort is "traffic-port" or a fixed port number; HealthCheckProtocol HTTP or
	// HTTPS.
	HealthCheckPort     string
	HealthCheckProtocol string
}

// Numbers are the config keys of the numbers a target group has: its health check
// (health_path, interval, timeout, the two thresholds), deregistration_delay and slow_start.
// The idle timeout is its load balancer's, and connect_timeout, header_timeout and
// max_header_bytes are the in-house LB's only.
func Numbers() []string {
	return []string{"health_path", "interval", "timeout", "unhealthy_threshold", "healthy_threshold",
		"deregistration_delay", "slow_start"}
}

// MatcherKey names the matcher in provision's diff and in drift: it is no config key, zero502
// always sets Matcher.
const MatcherKey = "matcher (HttpCode, fixed)"

// HealthCheckPortKey and HealthCheckProtocolKey name the health check's port and protocol in
// provision's diff and in drift: no config keys, zero502 always sets HealthCheckPort and
// HealthCheckProtocol.
const (
	HealthCheckPortKey     = "health check port (HealthCheckPort, fixed)"
	HealthCheckProtocolKey = "health check protocol (HealthCheckProtocol, fixed)"
)

// Wanted is the timing the config asks for: its numbers a target group has, Matcher,
// HealthCheckPort and HealthCheckProtocol.
func Wanted(b config.Balancer) Timing {
	t := Timing{TargetGroupARN: b.TargetGroupARN, Matcher: Matcher,
		HealthCheckPort: HealthCheckPort, HealthCheckProtocol: HealthCheckProtocol}
	t.BalancerNumbers = t.Overlay(b.BalancerNumbers, Numbers())
	return t
}

// fixedSetting is one setting zero502 always sets, whatever the config: its key in the diff
// and in drift, and its value.
type fixedSetting struct{ key, value string }

// fixed are t's settings that have no config key: the matcher and the health check's port and
// protocol, in that order.
func (t Timing) fixed() []fixedSetting {
	return []fixedSetting{
		{MatcherKey, t.Matcher},
		{HealthCheckPortKey, t.HealthCheckPort},
		{HealthCheckProtocolKey, t.HealthCheckProtocol},
	}
}

// FixedDrift lists each fixed setting of the live target group t that differs from what
// zero502 sets (Matcher, HealthCheckPort, HealthCheckProtocol), under MatcherKey,
// HealthCheckPortKey and HealthCheckProtocolKey: a health check on a fixed port checks one
// port for every target, an HTTPS one fails against the servers' plain HTTP. The numbers'
// drift is config.BalancerNumbers.Drift.
func (t Timing) FixedDrift() []config.Drift {
	want := Timing{Matcher: Matcher, HealthCheckPort: HealthCheckPort, HealthCheckProtocol: HealthCheckProtocol}.fixed()
	var out []config.Drift
	for i, l := range t.fixed() {
		if l.value != want[i].value {
			out = append(out, config.Drift{Field: l.key, Config: want[i].value, Live: l.value})
		}
	}
	return out
}

// diff is every managed setting, in a fixed order (the numbers, then the matcher, the health
// check's port and protocol), with what t (the config) and live say and whether they differ:
// the numbers by infra's drift comparison.
func (t Timing) diff(live Timing) []Change {
	drifted := map[string]bool{}
	for _, d := range t.Drift(live.BalancerNumbers, Numbers()) {
		drifted[d.Field] = true
	}
	var out []Change
	for _, key := range Numbers() {
		c, _ := t.Value(key)
		l, _ := live.Value(key)
		out = append(out, Change{Key: "balancer." + key, Live: l, Config: c, Differs: drifted["balancer."+key]})
	}
	have := live.fixed()
	for i, w := range t.fixed() {
		out = append(out, Change{Key: w.key, Live: have[i].value, Config: w.value, Differs: have[i].value != w.value})
	}
	return out
}

// Live reads what the target group arn runs now (DescribeTargetGroups and
// DescribeTargetGroupAttributes): its numbers, matcher and health-check port and protocol.
func Live(ctx context.Context, api API, arn string) (Timing, error) {
	out, err := api.DescribeTargetGroups(ctx, &elbv2.DescribeTargetGroupsInput{TargetGroupArns: []string{arn}})
	if err != nil {
		return Timing{}, fmt.Errorf("reading target group %s (DescribeTargetGroups): %w%s", arn, err, hint(err))
	}
	if len(out.TargetGroups) != 1 {
		return Timing{}, fmt.Errorf("reading target group %s (DescribeTargetGroups): got %d target groups, want 1",
			arn, len(out.TargetGroups))
	}
	tg := out.TargetGroups[0]
	t := Timing{TargetGroupARN: arn, BalancerNumbers: config.BalancerNumbers{
		HealthPath:         aws.ToString(tg.HealthCheckPath),
		Interval:           time.Duration(aws.ToInt32(tg.HealthCheckIntervalSeconds)) * time.Second,
		Timeout:            time.Duration(aws.ToInt32(tg.HealthCheckTimeoutSeconds)) * time.Second,
		HealthyThreshold:   int(aws.ToInt32(tg.HealthyThresholdCount)),
		UnhealthyThreshold: int(aws.ToInt32(tg.UnhealthyThresholdCount)),
	}}
	if tg.Matcher != nil {
		t.Matcher = aws.ToString(tg.Matcher.HttpCode)
	}
	t.HealthCheckPort, t.HealthCheckProtocol = aws.ToString(tg.HealthCheckPort), string(tg.HealthCheckProtocol)
	attrs, err := api.DescribeTargetGroupAttributes(ctx, &elbv2.DescribeTargetGroupAttributesInput{TargetGroupArn: aws.String(arn)})
	if err != nil {
		return Timing{}, fmt.Errorf("reading target group %s (DescribeTargetGroupAttributes): %w%s", arn, err, hint(err))
	}
	for _, a := range attrs.Attributes {
		var dst *time.Duration
		switch aws.ToString(a.Key) {
		case AttrDeregistrationDelay:
			dst = &t.DeregistrationDelay
		case AttrSlowStart:
			dst = &t.SlowStart
		default:
			continue
		}
		n, err := strconv.Atoi(aws.ToString(a.Value))
		if err != nil {
			return Timing{}, fmt.Errorf("target group %s: attribute %s is %q, not a number of seconds",
				arn, aws.ToString(a.Key), aws.ToString(a.Value))
		}
		*dst = time.Duration(n) * time.Second
	}
	return t, nil
}

// hint turns the AWS errors a person can fix into what to do.
func hint(err error) string {
	var nf *types.TargetGroupNotFoundException
	if errors.As(err, &nf) {
		return " (check balancer.target_group_arn and balancer.region)"
	}
	var it *types.InvalidTargetException
	if errors.As(err, &it) {
		return " (the target must fit the target group's type: an IP address for type ip, an instance id " +
			"for type instance; set hosts[].target to it)"
	}
	return ""
}
