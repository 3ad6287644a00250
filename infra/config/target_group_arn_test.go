package config

import (
	"strings"
	"testing"
)

const exampleARN = "arn:aws:elasticloadbalancing:eu-west-1:123456789012:targetgroup/web/6d0ecf831eec9f09"

func TestTargetGroupARNIsParsedAndItsRegionMustBeBalancerRegion(t *testing.T) {
	alb := func(arn, region string) string {
		y := "balancer:\n  kind: alb\n  target_group_arn: " + arn + "\n"
		if region != "" {
			y += "  region: " + region + "\n"
		}
		return y
	}
	for _, tc := range []struct {
		yaml string
		want string
	}{
		{alb(exampleARN, "us-east-1"), `balancer.region: "us-east-1": differs from the region of balancer.target_group_arn, eu-west-1`},
		{alb("web", ""), `balancer.target_group_arn: "web": must be a target group ARN`},
		{alb("arn:aws:elasticloadbalancing:eu-west-1:123456789012:loadbalancer/app/web/6d0ecf831eec9f09", ""),
			`balancer.target_group_arn: "arn:aws:elasticloadbalancing:eu-west-1:123456789012:loadbalancer/app/web/6d0ecf831eec9f09": resource "loadbalancer/app/web/6d0ecf831eec9f09" is not targetgroup/NAME/ID`},
		{alb("arn:aws:ec2:eu-west-1:123456789012:targetgroup/web/6d0ecf831eec9f09", ""), `service "ec2" is not elasticloadbalancing`},
		{alb("arn:aws:elasticloadbalancing:eu-west:123456789012:targetgroup/web/6d0ecf831eec9f09", ""), `region "eu-west" is not an AWS region`},
		{alb("arn:aws:elasticloadbalancing:eu-west-1::targetgroup/web/6d0ecf831eec9f09", ""), `account "" is not an account ID`},
		{alb("arn:gcp:elasticloadbalancing:eu-west-1:123456789012:targetgroup/web/6d0ecf831eec9f09", ""), `partition "gcp" is not an AWS partition`},
		{alb("arn:aws:elasticloadbalancing:eu-west-1:123456789012:targetgroup/web", ""), `resource "targetgroup/web" is not targetgroup/NAME/ID`},
	} {
		_, err := Load(writeConfig(t, tc.yaml))
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%q: %v, want %q", tc.yaml, err, tc.want)
		}
	}
	for _, y := range []string{alb(exampleARN, "eu-west-1"), alb(exampleARN, ""),
		alb("arn:aws-us-gov:elasticloadbalancing:us-gov-west-1:123456789012:targetgroup/web/6d0ecf831eec9f09", "us-gov-west-1")} {
		if _, err := Load(writeConfig(t, y)); err != nil {
			t.Errorf("%q: %v", y, err)
		}
	}
}

func TestParseTargetGroupARNGivesItsParts(t *testing.T) {
	got, err := ParseTargetGroupARN(exampleARN)
	want := TargetGroupARN{Partition: "aws", Region: "eu-west-1", Account: "123456789012", Name: "web", ID: "6d0ecf831eec9f09"}
	if err != nil || got != want {
		t.Fatalf("ParseTargetGroupARN(%s) = %+v, %v; want %+v", exampleARN, got, err, want)
	}
}
