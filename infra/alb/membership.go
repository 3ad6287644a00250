package alb

import (
	"context"
	"fmt"

	"github.com/aws/aws-sdk-go-v2/aws"
	elbv2 "github.com/aws/aws-sdk-go-v2/service/elasticloadbalancingv2"
	"github.com/aws/aws-sdk-go-v2/service/elasticloadbalancingv2/types"
)

// ReasonNotRegistered is DescribeTargetHealth's reason for a target the group does not hold
// (never registered, or its deregistration delay is over): state unused.
const ReasonNotRegistered = string(types.TargetHealthReasonEnumNotRegistered)

// Register puts targetID ("id:port", or a bare id on the group's port) in the target group
// (RegisterTargets). The ALB reports it initial until it has passed healthy_threshold health
// checks; only then does it route to it. Registering a registered target changes nothing;
// registering a draining one registers it again.
func (b *Balancer) Register(ctx context.Context, targetID string) error {
	t, err := parseTarget(targetID)
	if err != nil {
		return err
	}
	if _, err := b.api.RegisterTargets(ctx, &elbv2.RegisterTargetsInput{
		TargetGroupArn: aws.String(b.arn), Targets: []types.TargetDescription{t},
	}); err != nil {
		return fmt.Errorf("registering target %s in %s (RegisterTargets): %w%s", targetID, b.arn, err, hint(err))
	}
	return nil
}

// Deregister takes targetID out of the target group (DeregisterTargets): the ALB sends it no
// new request and reports it draining for the group's deregistration delay (or less, once it
// has nothing in flight and no open connection), then not registered. A target that is not
// registered is left as it is, as ELBv2 itself does.
func (b *Balancer) Deregister(ctx context.Context, targetID string) error {
	t, err := parseTarget(targetID)
	if err != nil {
		return err
	}
	if _, err := b.api.DeregisterTargets(ctx, &elbv2.DeregisterTargetsInput{
		TargetGroupArn: aws.String(b.arn), Targets: []types.TargetDescription{t},
	}); err != nil {
		return fmt.Errorf("deregistering target %s from %s (DeregisterTargets): %w%s", targetID, b.arn, err, hint(err))
	}
	return nil
}
