// Package alb owns zero502's side of an AWS Application Load Balancer target group: it
// provisions the target group's health-check numbers and attributes from the config (read
// first, diff, apply, idempotent, AWS's ranges refused before any call), reads back what AWS
// actually runs and reports drift field by field, and gives the deployer the ALB's own view
// of a target (DescribeTargetHealth) with the fail-open guard: never drain a target unless
// every other one is healthy, because an ALB whose targets are all unhealthy routes to all of
// them. It also changes the group's membership for the deployer's balancer-side drains and
// start-first rollouts: Register (RegisterTargets) and Deregister (DeregisterTargets, whose
// deregistration delay is the drain window). "These settings live in the script that provisions the infrastructure, not in a
// console someone clicked once."
//
// Everything goes through API, a small interface the aws-sdk-go-v2 ELBv2 client satisfies;
// NewClient builds that client from the SDK's default credential chain. The tests point the
// real SDK at package elbv2double; they never reached AWS (see infra/alb/README.md).
package alb

import (
	"context"
	"fmt"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	awsconfig "github.com/aws/aws-sdk-go-v2/config"
	elbv2 "github.com/aws/aws-sdk-go-v2/service/elasticloadbalancingv2"
	"github.com/aws/smithy-go/middleware"

	"github.com/zero502/zero502/infra/config"
)

// API is what this package needs of the ELBv2 service; *elasticloadbalancingv2.Client
// satisfies it. Each method needs the IAM action of the same name (infra/alb/README.md).
type API interface {
	DescribeTargetGroups(context.Context, *elbv2.DescribeTargetGroupsInput, ...func(*elbv2.Options)) (*elbv2.DescribeTargetGroupsOutput, error)
	DescribeTargetGroupAttributes(context.Context, *elbv2.DescribeTargetGroupAttributesInput, ...func(*elbv2.Options)) (*elbv2.DescribeTargetGroupAttributesOutput, error)
	DescribeTargetHealth(context.Context, *elbv2.DescribeTargetHealthInput, ...func(*elbv2.Options)) (*elbv2.DescribeTargetHealthOutput, error)
	ModifyTargetGroup(context.Context, *elbv2.ModifyTargetGroupInput, ...func(*elbv2.Options)) (*elbv2.ModifyTargetGroupOutput, error)
	ModifyTargetGroupAttributes(context.Context, *elbv2.ModifyTargetGroupAttributesInput, ...func(*elbv2.Options)) (*elbv2.ModifyTargetGroupAttributesOutput, error)
	RegisterTargets(context.Context, *elbv2.RegisterTargetsInput, ...func(*elbv2.Options)) (*elbv2.RegisterTargetsOutput, error)
	DeregisterTargets(context.Context, *elbv2.DeregisterTargetsInput, ...func(*elbv2.Options)) (*elbv2.DeregisterTargetsOutput, error)
}

var _ API = (*elbv2.Client)(nil)

// ClientOptions adjust how NewClient builds the SDK client.
type ClientOptions struct {
	// Endpoint, when set, replaces the regional ELBv2 endpoint (BaseEndpoint): the tests' local
	// double, or a VPC endpoint.
	Endpoint string
	// Credentials, when set, replace the SDK's default credential chain (tests use static ones).
	Credentials aws.CredentialsProvider
}

// NewClient builds the ELBv2 client for b: credentials from the SDK's default chain
// (environment, shared profile, web identity, IMDS) unless opts.Credentials is set, region
// from balancer.region when set, else from the chain (AWS_REGION, profile). It refuses a
// region other than that of balancer.target_group_arn, where ELBv2 would not find the group.
func NewClient(ctx context.Context, b config.Balancer, opts ClientOptions) (*elbv2.Client, error) {
	var load []func(*awsconfig.LoadOptions) error
	if b.Region != "" {
		load = append(load, awsconfig.WithRegion(b.Region))
	}
	if opts.Credentials != nil {
		load = append(load, awsconfig.WithCredentialsProvider(opts.Credentials))
	}
	awsCfg, err := awsconfig.LoadDefaultConfig(ctx, load...)
	if err != nil {
		return nil, fmt.Errorf("loading AWS configuration (credentials and region): %w", err)
	}
	if awsCfg.Region == "" {
		return nil, fmt.Errorf("no AWS region: set balancer.region in the config (the target group's " +
			"region, e.g. eu-west-1) or AWS_REGION in the environment")
	}
	if tg, err := config.ParseTargetGroupARN(b.TargetGroupARN); err == nil && tg.Region != awsCfg.Region {
		from := "balancer.region"
		if b.Region == "" {
			from = "from AWS_REGION or the profile, balancer.region being empty"
		}
		return nil, fmt.Errorf("AWS region %s (%s) differs from the region of balancer.target_group_arn, %s: ELBv2 "+
			"finds a target group only in its own region; set balancer.region to %s", awsCfg.Region, from, tg.Region, tg.Region)
	}
	return elbv2.NewFromConfig(awsCfg, func(o *elbv2.Options) {
		if opts.Endpoint != "" {
			o.BaseEndpoint = aws.String(opts.Endpoint)
		}
		o.APIOptions = append(o.APIOptions, boundEachCall)
	}), nil
}

// callTimeout bounds each ELBv2 call, the SDK's retries included: the client has no timeout of
// its own, and the deployer makes some calls outside any host step (preflight's drift check and
// fail-open guard, the re-verify between batches), on a context nothing else bounds, so an
// endpoint that accepts the connection and never answers would hold the deploy, and the fleet
// lock, forever. ELBv2 answers within a second; the SDK's standard retryer makes 3 attempts with
// at most 2s and 4s of backoff between them: 20s lets a slow endpoint finish all three and still
// turns a hung one into an error. A variable so the tests can shorten it.
var callTimeout = 20 * time.Second

// boundEachCall gives every operation of the client callTimeout, at the start of its middleware
// stack, so the deadline covers the retries, and says so when it is what ended the call. Every
// output of the calls this package makes is read whole inside the stack, none streams past it.
func boundEachCall(stack *middleware.Stack) error {
	return stack.Initialize.Add(middleware.InitializeMiddlewareFunc("zero502CallTimeout",
		func(ctx context.Context, in middleware.InitializeInput, next middleware.InitializeHandler) (middleware.InitializeOutput, middleware.Metadata, error) {
			call, cancel := context.WithTimeout(ctx, callTimeout)
			defer cancel()
			out, md, err := next.HandleInitialize(call, in)
			if err != nil && call.Err() != nil && ctx.Err() == nil {
				err = fmt.Errorf("ELBv2 did not answer within %s (%w): check that this machine reaches the ELBv2 endpoint of the "+
					"target group's region (network, proxy, VPC endpoint)", callTimeout, err)
			}
			return out, md, err
		}), middleware.Before)
}
