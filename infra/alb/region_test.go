package alb_test

import (
	"context"
	"errors"
	"strings"
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/credentials"
	elbv2 "github.com/aws/aws-sdk-go-v2/service/elasticloadbalancingv2"
	"github.com/aws/aws-sdk-go-v2/service/elasticloadbalancingv2/types"

	"github.com/zero502/zero502/infra/alb"
	"github.com/zero502/zero502/internal/testrig/albtest"
)

func TestCheckRefusesATargetGroupOfAnotherRegionOrAMalformedARN(t *testing.T) {
	f := newFixture(t, sourceNumbers)
	b := f.cfg
	b.Region = "us-east-1"
	err := alb.Check(b)
	want := `balancer.region: "us-east-1": differs from the region of balancer.target_group_arn, ` + albtest.Region
	if !errors.Is(err, alb.ErrOutOfRange) || err == nil || !strings.Contains(err.Error(), want) {
		t.Fatalf("Check with balancer.region us-east-1 and a target group in %s: %v, want %q", albtest.Region, err, want)
	}
	b = f.cfg
	b.TargetGroupARN = "arn:aws:elasticloadbalancing:eu-west-1:123456789012:targetgroup/web"
	if err := alb.Check(b); err == nil || !strings.Contains(err.Error(), `resource "targetgroup/web" is not targetgroup/NAME/ID`) {
		t.Fatalf("Check with an ARN without its ID: %v", err)
	}
	if err := alb.Check(f.cfg); err != nil {
		t.Fatalf("Check of the fixture's own balancer: %v", err)
	}
}

func TestNewClientRefusesARegionOtherThanTheTargetGroups(t *testing.T) {
	f := newFixture(t, sourceNumbers) // sets the SDK's environment to nothing of the machine's
	t.Setenv("AWS_REGION", "us-east-1")
	opts := alb.ClientOptions{Endpoint: f.rig.URL, Credentials: credentials.NewStaticCredentialsProvider("AKID", "x", "")}
	for _, region := range []string{"", "us-east-1"} {
		b := f.cfg
		b.Region = region
		_, err := alb.NewClient(context.Background(), b, opts)
		if err == nil || !strings.Contains(err.Error(), "AWS region us-east-1") ||
			!strings.Contains(err.Error(), "set balancer.region to "+albtest.Region) {
			t.Errorf("NewClient with balancer.region %q, AWS_REGION us-east-1, target group in %s: %v; want the two regions named",
				region, albtest.Region, err)
		}
	}
	b := f.cfg
	b.Region = ""
	t.Setenv("AWS_REGION", albtest.Region)
	if _, err := alb.NewClient(context.Background(), b, opts); err != nil {
		t.Fatalf("NewClient with AWS_REGION %s, the target group's: %v", albtest.Region, err)
	}
}

// ELBv2 is regional: a request signed for another region than the target group's does not find
// it. The double answers as ELBv2 does, for a client that skipped NewClient's check.
func TestDoubleFindsNoTargetGroupOfAnotherRegion(t *testing.T) {
	f := newFixture(t, sourceNumbers)
	api := elbv2.New(elbv2.Options{Region: "us-east-1", BaseEndpoint: aws.String(f.rig.URL),
		Credentials: credentials.NewStaticCredentialsProvider("AKID", "x", "")})
	var nf *types.TargetGroupNotFoundException
	if _, err := alb.Live(context.Background(), api, f.arn); !errors.As(err, &nf) {
		t.Fatalf("Live of a %s target group signed for us-east-1: %v, want TargetGroupNotFound", albtest.Region, err)
	}
	if _, err := api.DescribeTargetHealth(context.Background(), &elbv2.DescribeTargetHealthInput{
		TargetGroupArn: aws.String(f.arn)}); !errors.As(err, &nf) {
		t.Fatalf("DescribeTargetHealth signed for us-east-1: %v, want TargetGroupNotFound", err)
	}
	out, err := api.DescribeTargetGroups(context.Background(), &elbv2.DescribeTargetGroupsInput{})
	if err != nil || len(out.TargetGroups) != 0 {
		t.Fatalf("DescribeTargetGroups signed for us-east-1: %v, %d groups; want none", err, len(out.TargetGroups))
	}
	if _, err := alb.Live(context.Background(), f.api, f.arn); err != nil {
		t.Fatalf("Live signed for the group's own region: %v", err)
	}
}
