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

// Timing is what a target group runs, in the config's terms: the balancer's numbers a target
// group has (Numbers: its health check, deregistration delay and slow start; the others stay
// zero) and its health-check matcher. Live reads it from AWS; Wanted derives it from the config.
type Timing struct {
	TargetGroupARN string
	config.BalancerNumbers
	Matcher string
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

// Wanted is the timing the config asks for: its numbers a target group has, and Matcher.
func Wanted(b config.Balancer) Timing {
	t := Timing{TargetGroupARN: b.TargetGroupARN, Matcher: Matcher}
	t.BalancerNumbers = t.Overlay(b.BalancerNumbers, Numbers())
	return t
}

// diff is every managed setting, in a fixed order (the numbers, then the matcher), with what t
// (the config) and live say and whether they differ: the numbers by infra's drift comparison.
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
	return append(out, Change{Key: MatcherKey, Live: live.Matcher, Config: t.Matcher, Differs: live.Matcher != t.Matcher})
}

// Live reads what the target group arn runs now (DescribeTargetGroups and
// DescribeTargetGroupAttributes).
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
