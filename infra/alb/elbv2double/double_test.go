package elbv2double_test

import (
	"encoding/xml"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"testing"

	"github.com/zero502/zero502/infra/alb/elbv2double"
	"github.com/zero502/zero502/internal/testrig/awsdouble"
)

const auth = "AWS4-HMAC-SHA256 Credential=AKIDTEST/20261130/eu-west-1/elasticloadbalancing/aws4_request, " +
	"SignedHeaders=content-type;host;x-amz-date, Signature=0000"

// post sends one raw Query-protocol request, as the SDK does: form-encoded POST to /.
func post(t *testing.T, srv *httptest.Server, form url.Values, signed bool) (int, string) {
	t.Helper()
	req, err := http.NewRequest(http.MethodPost, srv.URL+"/", strings.NewReader(form.Encode()))
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	if signed {
		req.Header.Set("Authorization", auth)
	}
	return awsdouble.Call(t, srv.Client(), req)
}

type errorDoc struct {
	XMLName xml.Name `xml:"ErrorResponse"`
	Type    string   `xml:"Error>Type"`
	Code    string   `xml:"Error>Code"`
	Message string   `xml:"Error>Message"`
	ReqID   string   `xml:"RequestId"`
}

func start(t *testing.T) (*elbv2double.Server, *httptest.Server, string) {
	t.Helper()
	d := elbv2double.New(elbv2double.Options{})
	t.Cleanup(d.Close)
	srv := httptest.NewServer(d)
	t.Cleanup(srv.Close)
	return d, srv, d.AddTargetGroup(elbv2double.TargetGroup{Name: "web"})
}

func TestResponsesUseTheQueryEnvelope(t *testing.T) {
	_, srv, arn := start(t)
	status, body := post(t, srv, url.Values{"Action": {"DescribeTargetGroups"}, "Version": {"2015-12-01"},
		"TargetGroupArns.member.1": {arn}}, true)
	if status != 200 {
		t.Fatalf("status %d: %s", status, body)
	}
	var doc struct {
		XMLName  xml.Name
		Arn      string `xml:"DescribeTargetGroupsResult>TargetGroups>member>TargetGroupArn"`
		Interval int    `xml:"DescribeTargetGroupsResult>TargetGroups>member>HealthCheckIntervalSeconds"`
		Matcher  string `xml:"DescribeTargetGroupsResult>TargetGroups>member>Matcher>HttpCode"`
		ReqID    string `xml:"ResponseMetadata>RequestId"`
	}
	if err := xml.Unmarshal([]byte(body), &doc); err != nil {
		t.Fatalf("%v: %s", err, body)
	}
	if doc.XMLName.Local != "DescribeTargetGroupsResponse" || doc.XMLName.Space != elbv2double.Namespace ||
		doc.Arn != arn || doc.Interval != 30 || doc.Matcher != "200" || len(doc.ReqID) != 36 {
		t.Fatalf("unexpected document %+v:\n%s", doc, body)
	}
}

func TestErrorsAreXMLErrorResponsesWithTheDocumentedCodes(t *testing.T) {
	d, srv, arn := start(t)
	v := func(kv ...string) url.Values {
		form := url.Values{"Version": {"2015-12-01"}}
		for i := 0; i < len(kv); i += 2 {
			form.Set(kv[i], kv[i+1])
		}
		return form
	}
	for _, tc := range []struct {
		name   string
		form   url.Values
		signed bool
		status int
		code   string
	}{
		{"unsigned", v("Action", "DescribeTargetGroups"), false, 403, "MissingAuthenticationToken"},
		{"unknown action", v("Action", "CreateLoadBalancerPlease"), true, 400, "InvalidAction"},
		{"unknown target group", v("Action", "DescribeTargetGroupAttributes", "TargetGroupArn", arn+"x"), true, 400, "TargetGroupNotFound"},
		{"missing arn", v("Action", "ModifyTargetGroup"), true, 400, "ValidationError"},
		{"interval below 5", v("Action", "ModifyTargetGroup", "TargetGroupArn", arn, "HealthCheckIntervalSeconds", "4"), true, 400, "ValidationError"},
		{"timeout not below interval", v("Action", "ModifyTargetGroup", "TargetGroupArn", arn,
			"HealthCheckIntervalSeconds", "5", "HealthCheckTimeoutSeconds", "5"), true, 400, "ValidationError"},
		{"threshold 11", v("Action", "ModifyTargetGroup", "TargetGroupArn", arn, "HealthyThresholdCount", "11"), true, 400, "ValidationError"},
		{"delay above 3600", v("Action", "ModifyTargetGroupAttributes", "TargetGroupArn", arn,
			"Attributes.member.1.Key", "deregistration_delay.timeout_seconds", "Attributes.member.1.Value", "3601"), true, 400, "InvalidConfigurationRequest"},
		{"unknown attribute", v("Action", "ModifyTargetGroupAttributes", "TargetGroupArn", arn,
			"Attributes.member.1.Key", "made.up", "Attributes.member.1.Value", "1"), true, 400, "ValidationError"},
		{"register a non-IP in an ip group", v("Action", "RegisterTargets", "TargetGroupArn", arn,
			"Targets.member.1.Id", "i-0123"), true, 400, "InvalidTarget"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			status, body := post(t, srv, tc.form, tc.signed)
			var e errorDoc
			if err := xml.Unmarshal([]byte(body), &e); err != nil {
				t.Fatalf("%v: %s", err, body)
			}
			if status != tc.status || e.Code != tc.code || e.Type != "Sender" || e.Message == "" || e.ReqID == "" {
				t.Fatalf("got %d %+v, want %d %s:\n%s", status, e, tc.status, tc.code, body)
			}
		})
	}
	if s, _ := d.Settings(arn); s.Interval.Seconds() != 30 || s.Timeout.Seconds() != 5 || s.HealthyThreshold != 5 {
		t.Fatalf("a refused request changed the target group: %+v", s)
	}
	if d.ModifyCalls() != 6 {
		t.Fatalf("ModifyCalls = %d, want the 6 refused Modify requests counted", d.ModifyCalls())
	}
}
