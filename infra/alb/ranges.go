package alb

import (
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/zero502/zero502/infra/config"
)

// ErrOutOfRange is wrapped by Check's error: the config asks for numbers an ALB target group
// cannot have. Nothing was sent to AWS.
var ErrOutOfRange = errors.New("outside the ranges an AWS ALB target group accepts")

// rangeError lists every balancer value an ALB target group would refuse.
type rangeError struct {
	Fields []*config.FieldError
}

func (e *rangeError) Error() string {
	var b strings.Builder
	b.WriteString("balancer config cannot be provisioned on an AWS ALB target group (outside its ranges); nothing was sent to AWS:")
	for _, f := range e.Fields {
		b.WriteString("\n  ")
		b.WriteString(f.Error())
	}
	return b.String()
}

// Is makes errors.Is(err, ErrOutOfRange) true.
func (e *rangeError) Is(target error) bool { return target == ErrOutOfRange }

// Check refuses, before any call to AWS, a balancer config that is not an ALB target group's
// (kind alb, a target group ARN of balancer.region when that is set) or whose numbers AWS
// would refuse: interval 5–300 s, timeout 2–120 s and below the interval,
// healthy and unhealthy thresholds 2–10, deregistration delay 0–3600 s, slow start 0 (off) or
// 30–900 s, every duration in whole seconds, a health path starting with /. Each refusal names
// the config key, the value and the range.
func Check(b config.Balancer) error {
	var fields []*config.FieldError
	bad := func(key string, value any, rule string) {
		fields = append(fields, &config.FieldError{Key: key, Value: value, Rule: rule})
	}
	if b.Kind != config.BalancerALB {
		bad("balancer.kind", fmt.Sprintf("%q", b.Kind), `must be "alb" to provision an AWS target group`)
	}
	if tg, err := config.ParseTargetGroupARN(b.TargetGroupARN); err != nil {
		bad("balancer.target_group_arn", fmt.Sprintf("%q", b.TargetGroupARN), err.Error())
	} else if b.Region != "" && b.Region != tg.Region {
		bad("balancer.region", fmt.Sprintf("%q", b.Region), fmt.Sprintf("differs from the region of balancer.target_group_arn, %s: "+
			"ELBv2 finds a target group only in its own region; set balancer.region to %s", tg.Region, tg.Region))
	}
	seconds := func(key string, d time.Duration, lo, hi int, orZero bool) bool {
		rng := fmt.Sprintf("must be whole seconds from %ds to %ds", lo, hi)
		if orZero {
			rng = fmt.Sprintf("must be 0s (off) or whole seconds from %ds to %ds", lo, hi)
		}
		switch {
		case d%time.Second != 0:
			bad(key, d, rng+" (ALB takes whole seconds)")
		case orZero && d == 0:
		case d < time.Duration(lo)*time.Second || d > time.Duration(hi)*time.Second:
			bad(key, d, rng)
		default:
			return true
		}
		return false
	}
	intervalOK := seconds("balancer.interval", b.Interval, 5, 300, false)
	timeoutOK := seconds("balancer.timeout", b.Timeout, 2, 120, false)
	if intervalOK && timeoutOK && b.Timeout >= b.Interval {
		bad("balancer.timeout", b.Timeout, fmt.Sprintf("must be below balancer.interval (%s)", b.Interval))
	}
	for _, t := range []struct {
		key string
		n   int
	}{{"balancer.healthy_threshold", b.HealthyThreshold}, {"balancer.unhealthy_threshold", b.UnhealthyThreshold}} {
		if t.n < 2 || t.n > 10 {
			bad(t.key, t.n, "must be from 2 to 10")
		}
	}
	seconds("balancer.deregistration_delay", b.DeregistrationDelay, 0, 3600, false)
	seconds("balancer.slow_start", b.SlowStart, 30, 900, true)
	if !strings.HasPrefix(b.HealthPath, "/") || len(b.HealthPath) > 1024 {
		bad("balancer.health_path", fmt.Sprintf("%q", b.HealthPath), "must start with / and be at most 1024 characters")
	}
	if len(fields) > 0 {
		return &rangeError{Fields: fields}
	}
	return nil
}
