package cloudwatchdouble_test

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/credentials"
	"github.com/aws/aws-sdk-go-v2/service/cloudwatch"
	"github.com/aws/aws-sdk-go-v2/service/cloudwatch/types"
	"github.com/aws/smithy-go"
	"github.com/aws/smithy-go/encoding/cbor"

	"github.com/zero502/zero502/infra/alarms/cloudwatchdouble"
)

const path = "/service/GraniteServiceVersion20100801/operation/"

func auth(region, service string) string {
	return "AWS4-HMAC-SHA256 Credential=AKIDTEST/20261130/" + region + "/" + service + "/aws4_request, " +
		"SignedHeaders=content-type;host;x-amz-date, Signature=0000"
}

// sdk is the real CloudWatch client of region, with static test credentials, on url.
func sdk(url, region string) *cloudwatch.Client {
	return cloudwatch.New(cloudwatch.Options{
		Region: region, BaseEndpoint: aws.String(url),
		Credentials: credentials.NewStaticCredentialsProvider("AKIDTEST", "test-secret", ""),
	})
}

func start(t *testing.T, opts cloudwatchdouble.Options) (*cloudwatchdouble.Server, *httptest.Server) {
	t.Helper()
	d := cloudwatchdouble.New(opts)
	srv := httptest.NewServer(d)
	t.Cleanup(srv.Close)
	return d, srv
}

// call sends one raw RPC v2 CBOR request as the SDK does and returns the answer's status, its
// X-Amzn-Query-Error header and its body decoded; the test fails unless the answer is CBOR.
func call(t *testing.T, srv *httptest.Server, op string, in cbor.Map, header http.Header) (int, string, cbor.Map) {
	t.Helper()
	req, err := http.NewRequest(http.MethodPost, srv.URL+path+op, bytes.NewReader(cbor.Encode(in)))
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Content-Type", "application/cbor")
	req.Header.Set("Accept", "application/cbor")
	req.Header.Set("Smithy-Protocol", "rpc-v2-cbor")
	req.Header.Set("X-Amzn-Query-Mode", "true")
	req.Header.Set("Authorization", auth("eu-west-1", "monitoring"))
	for k, v := range header {
		req.Header[k] = v
	}
	resp, err := srv.Client().Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(resp.Body)
	if ct := resp.Header.Get("Content-Type"); ct != "application/cbor" || resp.Header.Get("Smithy-Protocol") != "rpc-v2-cbor" {
		t.Fatalf("answer Content-Type %q Smithy-Protocol %q, want application/cbor and rpc-v2-cbor",
			ct, resp.Header.Get("Smithy-Protocol"))
	}
	if id := resp.Header.Get("x-amzn-RequestId"); len(id) != 36 {
		t.Fatalf("x-amzn-RequestId %q", id)
	}
	v, err := cbor.Decode(body)
	if err != nil {
		t.Fatalf("answer is not CBOR: %v", err)
	}
	m, ok := v.(cbor.Map)
	if !ok {
		t.Fatalf("answer is a CBOR %T, not a map", v)
	}
	return resp.StatusCode, resp.Header.Get("X-Amzn-Query-Error"), m
}

// TestTheSDKSendsRPCv2CBOR pins what the double was written for: if an SDK upgrade changes
// CloudWatch's protocol again (it was awsQuery before), this fails first.
func TestTheSDKSendsRPCv2CBOR(t *testing.T) {
	d := cloudwatchdouble.New(cloudwatchdouble.Options{})
	var mu sync.Mutex
	var seen *http.Request
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		seen = r.Clone(context.Background())
		mu.Unlock()
		d.ServeHTTP(w, r)
	}))
	t.Cleanup(srv.Close)
	if _, err := sdk(srv.URL, "eu-west-1").DescribeAlarms(context.Background(), &cloudwatch.DescribeAlarmsInput{
		AlarmNames: []string{"web-5xx"}}); err != nil {
		t.Fatal(err)
	}
	mu.Lock()
	defer mu.Unlock()
	h := seen.Header
	if seen.Method != http.MethodPost || seen.URL.Path != path+"DescribeAlarms" || h.Get("Smithy-Protocol") != "rpc-v2-cbor" ||
		h.Get("Content-Type") != "application/cbor" || h.Get("X-Amzn-Query-Mode") != "true" ||
		!strings.Contains(h.Get("Authorization"), "/eu-west-1/monitoring/aws4_request") {
		t.Fatalf("the SDK sent %s %s with %v", seen.Method, seen.URL.Path, h)
	}
}

func TestAnswersAreCBORMapsWithTaggedTimestamps(t *testing.T) {
	at := time.Date(2026, 11, 30, 9, 1, 30, 250e6, time.UTC)
	d, srv := start(t, cloudwatchdouble.Options{})
	d.Put(cloudwatchdouble.Alarm{Name: "web-5xx", State: cloudwatchdouble.Alarming, Reason: "Threshold Crossed", Transitioned: at})
	status, _, out := call(t, srv, "DescribeAlarms", cbor.Map{"AlarmNames": cbor.List{cbor.String("web-5xx")}}, nil)
	if status != 200 {
		t.Fatalf("status %d: %v", status, out)
	}
	list, ok := out["MetricAlarms"].(cbor.List)
	if !ok || len(list) != 1 {
		t.Fatalf("MetricAlarms %#v", out["MetricAlarms"])
	}
	a := list[0].(cbor.Map)
	ts, ok := a["StateTransitionedTimestamp"].(*cbor.Tag)
	if a["AlarmName"] != cbor.String("web-5xx") || a["StateValue"] != cbor.String("ALARM") || !ok || ts.ID != 1 ||
		ts.Value != cbor.Float64(float64(at.UnixMilli())/1000) {
		t.Fatalf("alarm %#v, want web-5xx in ALARM transitioned at tag 1 %v", a, float64(at.UnixMilli())/1000)
	}
	if _, ok := out["NextToken"]; ok {
		t.Fatalf("a single page with a NextToken: %v", out)
	}
}

func TestErrorsCarryTheirTypeMessageAndQueryCode(t *testing.T) {
	d, srv := start(t, cloudwatchdouble.Options{})
	d.Put(cloudwatchdouble.Alarm{Name: "web-5xx"})
	var many cbor.List
	for i := range 101 {
		many = append(many, cbor.String(fmt.Sprint("a-", i)))
	}
	for _, tc := range []struct {
		name   string
		op     string
		in     cbor.Map
		header http.Header
		status int
		code   string
	}{
		{"unsigned", "DescribeAlarms", cbor.Map{}, http.Header{"Authorization": {""}}, 403, "MissingAuthenticationToken"},
		{"signed for another service", "DescribeAlarms", cbor.Map{}, http.Header{"Authorization": {auth("eu-west-1", "elasticloadbalancing")}}, 403, "IncompleteSignature"},
		{"signed for another region", "DescribeAlarms", cbor.Map{}, http.Header{"Authorization": {auth("us-east-1", "monitoring")}}, 403, "SignatureDoesNotMatch"},
		{"no Smithy-Protocol", "DescribeAlarms", cbor.Map{}, http.Header{"Smithy-Protocol": {""}}, 400, "InvalidRequest"},
		{"not CBOR", "DescribeAlarms", cbor.Map{}, http.Header{"Content-Type": {"application/x-amz-json-1.0"}}, 415, "UnsupportedMediaType"},
		{"unknown operation", "PutMetricAlarm", cbor.Map{}, nil, 400, "UnknownOperationException"},
		{"101 names", "DescribeAlarms", cbor.Map{"AlarmNames": many}, nil, 400, "ValidationError"},
		{"MaxRecords 0", "DescribeAlarms", cbor.Map{"MaxRecords": cbor.Uint(0)}, nil, 400, "ValidationError"},
		{"unknown alarm type", "DescribeAlarms", cbor.Map{"AlarmTypes": cbor.List{cbor.String("Alarm")}}, nil, 400, "ValidationError"},
		{"names and a prefix", "DescribeAlarms", cbor.Map{"AlarmNames": cbor.List{cbor.String("a")}, "AlarmNamePrefix": cbor.String("a")}, nil, 400, "InvalidParameterCombination"},
		{"a made-up NextToken", "DescribeAlarms", cbor.Map{"NextToken": cbor.String("bogus")}, nil, 400, "InvalidNextToken"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			status, queryErr, out := call(t, srv, tc.op, tc.in, tc.header)
			typ, _ := out["__type"].(cbor.String)
			msg, _ := out["message"].(cbor.String)
			if status != tc.status || queryErr != tc.code+";Sender" || stem(string(typ)) != stem(tc.code) || msg == "" {
				t.Fatalf("got %d %q %v, want %d %s;Sender with __type and message", status, queryErr, out, tc.status, tc.code)
			}
		})
	}
	if n := d.Calls("DescribeAlarms"); n != 10 {
		t.Fatalf("Calls(DescribeAlarms) = %d, want the 10 refused ones counted", n)
	}
}

// stem is an error type or code without its shape namespace and its Exception or Error suffix:
// __type com.amazon.coral.validate#ValidationException is the Query code ValidationError.
func stem(s string) string {
	if _, name, ok := strings.Cut(s, "#"); ok {
		s = name
	}
	return strings.TrimSuffix(strings.TrimSuffix(s, "Exception"), "Error")
}

func TestTheSDKReadsTheDoublesErrorsAsCloudWatchsErrors(t *testing.T) {
	_, srv := start(t, cloudwatchdouble.Options{})
	client := sdk(srv.URL, "eu-west-1")
	_, err := client.DescribeAlarms(context.Background(), &cloudwatch.DescribeAlarmsInput{NextToken: aws.String("bogus")})
	var bad *types.InvalidNextToken
	if !errors.As(err, &bad) || bad.ErrorCode() != "InvalidNextToken" || bad.ErrorFault() != smithy.FaultClient {
		t.Fatalf("err = %v (%T), want the SDK's modelled *types.InvalidNextToken", err, err)
	}
	names := make([]string, 101)
	for i := range names {
		names[i] = fmt.Sprint("a-", i)
	}
	_, err = client.DescribeAlarms(context.Background(), &cloudwatch.DescribeAlarmsInput{AlarmNames: names})
	var api smithy.APIError
	if !errors.As(err, &api) || api.ErrorCode() != "ValidationError" || !strings.Contains(api.ErrorMessage(), "100") {
		t.Fatalf("101 names: err = %v, want ValidationError (the Query code, from X-Amzn-Query-Error)", err)
	}
}

func TestDescribeAlarmsPagesInNameOrderAndDefaultsToMetricAlarms(t *testing.T) {
	d, srv := start(t, cloudwatchdouble.Options{})
	for _, n := range []string{"e", "c", "a", "d", "b"} {
		d.Put(cloudwatchdouble.Alarm{Name: n, State: cloudwatchdouble.OK})
	}
	d.Put(cloudwatchdouble.Alarm{Name: "aa-composite", Type: cloudwatchdouble.CompositeAlarm})
	client := sdk(srv.URL, "eu-west-1")

	var got []string
	pages := cloudwatch.NewDescribeAlarmsPaginator(client, &cloudwatch.DescribeAlarmsInput{MaxRecords: aws.Int32(2)})
	for pages.HasMorePages() {
		page, err := pages.NextPage(context.Background())
		if err != nil {
			t.Fatal(err)
		}
		if len(page.MetricAlarms) > 2 || len(page.CompositeAlarms) != 0 {
			t.Fatalf("page of %d metric and %d composite alarms, want at most 2 metric ones", len(page.MetricAlarms), len(page.CompositeAlarms))
		}
		for _, a := range page.MetricAlarms {
			got = append(got, aws.ToString(a.AlarmName))
		}
	}
	if want := []string{"a", "b", "c", "d", "e"}; !slices.Equal(got, want) || d.Calls("DescribeAlarms") != 3 {
		t.Fatalf("paged %q in %d calls, want %q in 3 (without AlarmTypes, metric alarms only)", got, d.Calls("DescribeAlarms"), want)
	}

	out, err := client.DescribeAlarms(context.Background(), &cloudwatch.DescribeAlarmsInput{
		AlarmTypes: []types.AlarmType{types.AlarmTypeCompositeAlarm}, StateValue: types.StateValueInsufficientData})
	if err != nil || len(out.CompositeAlarms) != 1 || aws.ToString(out.CompositeAlarms[0].AlarmName) != "aa-composite" || len(out.MetricAlarms) != 0 {
		t.Fatalf("composite INSUFFICIENT_DATA alarms: %+v, %v", out, err)
	}
}
