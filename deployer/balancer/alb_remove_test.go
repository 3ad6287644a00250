package balancer_test

import (
	"context"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	elbv2 "github.com/aws/aws-sdk-go-v2/service/elasticloadbalancingv2"
	"github.com/aws/aws-sdk-go-v2/service/elasticloadbalancingv2/types"

	"github.com/zero502/zero502/deployer/balancer"
	"github.com/zero502/zero502/infra/alb"
	"github.com/zero502/zero502/infra/alb/elbv2double"
	"github.com/zero502/zero502/infra/config"
	"github.com/zero502/zero502/internal/testrig/albtest"
)

// laggingELB is the real SDK client to the ELBv2 double, with ELBv2's eventual consistency,
// which the double does not model: right after RegisterTargets, one DescribeTargetHealth of
// that target still reads "not registered".
type laggingELB struct {
	*elbv2.Client
	mu     sync.Mutex
	recent map[string]bool
}

func (l *laggingELB) RegisterTargets(ctx context.Context, in *elbv2.RegisterTargetsInput, o ...func(*elbv2.Options)) (*elbv2.RegisterTargetsOutput, error) {
	out, err := l.Client.RegisterTargets(ctx, in, o...)
	if err == nil {
		l.mu.Lock()
		for _, t := range in.Targets {
			l.recent[fmt.Sprintf("%s:%d", aws.ToString(t.Id), aws.ToInt32(t.Port))] = true
		}
		l.mu.Unlock()
	}
	return out, err
}

func (l *laggingELB) DescribeTargetHealth(ctx context.Context, in *elbv2.DescribeTargetHealthInput, o ...func(*elbv2.Options)) (*elbv2.DescribeTargetHealthOutput, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if len(in.Targets) == 1 {
		t := in.Targets[0]
		if key := fmt.Sprintf("%s:%d", aws.ToString(t.Id), aws.ToInt32(t.Port)); l.recent[key] {
			delete(l.recent, key)
			return &elbv2.DescribeTargetHealthOutput{TargetHealthDescriptions: []types.TargetHealthDescription{{
				Target: &t, TargetHealth: &types.TargetHealth{State: types.TargetHealthStateEnumUnused,
					Reason: types.TargetHealthReasonEnumNotRegistered, Description: aws.String("Target is not registered to the target group")}}}}, nil
		}
	}
	return l.Client.DescribeTargetHealth(ctx, in, o...)
}

// A target removed right after it was added (a start-first instance that died at once, rolled
// back) leaves the target group although ELBv2's read of it still lags: Remove deregisters
// without believing a look first, so no dead target stays registered (and unhealthy for good).
func TestARemoveRightAfterAnAddDeregistersThoughTheReadLags(t *testing.T) {
	d := albtest.Start(t, nil, elbv2double.TargetGroup{Name: "web", Port: 8000, Settings: elbv2double.Settings{
		HealthCheckPath: "/health", Interval: 5 * time.Second, Timeout: 2 * time.Second, HealthyThreshold: 2,
		UnhealthyThreshold: 2, DeregistrationDelay: 30 * time.Second}})
	api := &laggingELB{Client: d.API, recent: map[string]bool{}}
	b := balancer.NewALB(api, &config.Config{Balancer: d.Balancer}, nil)
	ctx := context.Background()
	const target = "127.0.0.1:18081"
	if err := b.Add(ctx, target); err != nil {
		t.Fatal(err)
	}
	if err := b.Remove(ctx, target); err != nil {
		t.Fatal(err)
	}
	state, reason, err := alb.NewBalancer(d.API, d.ARN).TargetHealth(ctx, target)
	if err != nil {
		t.Fatal(err)
	}
	if state != alb.StateDraining && reason != alb.ReasonNotRegistered {
		t.Fatalf("after Add then Remove, %s is %s (%s) in the target group: Remove never deregistered it", target, state, reason)
	}
	// Removing what is draining, or no longer there, changes nothing and is no error.
	if err := b.Remove(ctx, target); err != nil {
		t.Errorf("a second Remove of a draining target: %v", err)
	}
	if err := b.Remove(ctx, "127.0.0.1:18099"); err != nil {
		t.Errorf("Remove of a target never registered: %v", err)
	}
}
