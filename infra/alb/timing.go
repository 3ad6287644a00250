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

	"github.com/zero502/zero502/infra"
)

// Attribute keys zero502 manages on a target group.
const (
	AttrDeregistrationDelay = "deregistration_delay.timeout_seconds"
	AttrSlowStart           = "slow_start.duration_seconds"
)

// Matcher is the health-check success code zero502 sets: only 200 is healthy, so a draining
// server's 503 takes it out of rotation.
const Matcher = "200"

// Timing is what a target group runs, in the config's terms: its health-check numbers and
// the attributes zero502 manages. Live reads it from AWS; Wanted derives it from the config.
type Timing struct {
	TargetGroupARN      string
	HealthPath          string
	Interval            time.Duration
	Timeout             time.Duration
	HealthyThreshold    int
	UnhealthyThreshold  int
	Matcher             string
	DeregistrationDelay time.Duration
	SlowStart           time.Duration
}

// Wanted is the timing the config asks for.
func Wanted(b infra.Balancer) Timing {
	return Timing{
		TargetGroupARN: b.TargetGroupARN, HealthPath: b.HealthPath,
		Interval: b.Interval, Timeout: b.Timeout,
		HealthyThreshold: b.HealthyThreshold, UnhealthyThreshold: b.UnhealthyThreshold,
		Matcher: Matcher, DeregistrationDelay: b.DeregistrationDelay, SlowStart: b.SlowStart,
	}
}

// Apply returns b with the live numbers in place of the configured ones: the balancer a
// deploy really runs through, for the invariants (zero502 invariants --live).
func (t Timing) Apply(b infra.Balancer) infra.Balancer {
	b.HealthPath, b.Interval, b.Timeout = t.HealthPath, t.Interval, t.Timeout
	b.HealthyThreshold, b.UnhealthyThreshold = t.HealthyThreshold, t.UnhealthyThreshold
	b.DeregistrationDelay, b.SlowStart = t.DeregistrationDelay, t.SlowStart
	return b
}

// field is one managed setting: its config key and its value as a person writes it.
type field struct {
	key   string
	value string
}

func (t Timing) fields() []field {
	return []field{
		{"balancer.health_path", t.HealthPath},
		{"balancer.interval", t.Interval.String()},
		{"balancer.timeout", t.Timeout.String()},
		{"balancer.healthy_threshold", strconv.Itoa(t.HealthyThreshold)},
		{"balancer.unhealthy_threshold", strconv.Itoa(t.UnhealthyThreshold)},
		{"matcher (HttpCode, fixed)", t.Matcher},
		{"balancer.deregistration_delay", t.DeregistrationDelay.String()},
		{"balancer.slow_start", t.SlowStart.String()},
	}
}

// FieldDrift is one setting whose live value differs from the config.
type FieldDrift struct {
	Key    string `json:"key"`
	Config string `json:"config"`
	Live   string `json:"live"`
}

func (d FieldDrift) String() string {
	return fmt.Sprintf("%s: config %s, live target group %s", d.Key, d.Config, d.Live)
}

// Drift lists, in a fixed order, every managed setting where what AWS runs differs from what
// the config says (someone changed the interval in the console).
func Drift(cfg infra.Balancer, live Timing) []FieldDrift {
	want, have := Wanted(cfg).fields(), live.fields()
	var out []FieldDrift
	for i := range want {
		if want[i].value != have[i].value {
			out = append(out, FieldDrift{Key: want[i].key, Config: want[i].value, Live: have[i].value})
		}
	}
	return out
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
	t := Timing{
		TargetGroupARN:     arn,
		HealthPath:         aws.ToString(tg.HealthCheckPath),
		Interval:           time.Duration(aws.ToInt32(tg.HealthCheckIntervalSeconds)) * time.Second,
		Timeout:            time.Duration(aws.ToInt32(tg.HealthCheckTimeoutSeconds)) * time.Second,
		HealthyThreshold:   int(aws.ToInt32(tg.HealthyThresholdCount)),
		UnhealthyThreshold: int(aws.ToInt32(tg.UnhealthyThresholdCount)),
	}
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
