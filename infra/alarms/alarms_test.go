package alarms_test

import (
	"context"
	"errors"
	"fmt"
	"net/http/httptest"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/aws/smithy-go"

	"github.com/zero502/zero502/infra/alarms"
	"github.com/zero502/zero502/infra/alarms/cloudwatchdouble"
	"github.com/zero502/zero502/infra/clock"
)

var t0 = time.Date(2026, 11, 30, 9, 0, 0, 0, time.UTC)

// testCredentials puts static test credentials where the SDK's default chain finds them first
// (the environment) and keeps it away from this machine's profiles and from IMDS. It uses
// t.Setenv: tests that call it are not parallel.
func testCredentials(t *testing.T) {
	t.Helper()
	none := filepath.Join(t.TempDir(), "none")
	for k, v := range map[string]string{
		"AWS_ACCESS_KEY_ID": "AKIDTEST", "AWS_SECRET_ACCESS_KEY": "test-secret", "AWS_SESSION_TOKEN": "",
		"AWS_PROFILE": "", "AWS_CONFIG_FILE": none, "AWS_SHARED_CREDENTIALS_FILE": none,
		"AWS_EC2_METADATA_DISABLED": "true", "AWS_REGION": "", "AWS_DEFAULT_REGION": "",
	} {
		t.Setenv(k, v)
	}
}

// start serves a CloudWatch double of region eu-west-1 on 127.0.0.1 and returns it, its fake
// clock and a Watcher built as the deployer builds it (NewWatcher: the SDK's default chain,
// the double's URL as the endpoint).
func start(t *testing.T, opts cloudwatchdouble.Options) (*cloudwatchdouble.Server, *clock.Fake, *alarms.Watcher) {
	t.Helper()
	testCredentials(t)
	clk := clock.NewFake(t0)
	opts.Clock = clk
	d := cloudwatchdouble.New(opts)
	srv := httptest.NewServer(d)
	t.Cleanup(srv.Close)
	w, err := alarms.NewWatcher(context.Background(), d.Region(), srv.URL)
	if err != nil {
		t.Fatal(err)
	}
	return d, clk, w
}

func names(as []alarms.Alarm) []string {
	var out []string
	for _, a := range as {
		out = append(out, a.Name)
	}
	return out
}

func TestFiringReturnsOnlyTheAlarmsInALARM(t *testing.T) {
	d, clk, w := start(t, cloudwatchdouble.Options{})
	d.Put(cloudwatchdouble.Alarm{Name: "web-p99", State: cloudwatchdouble.OK, Reason: "Threshold Crossed: no datapoints above"})
	clk.Advance(90 * time.Second)
	d.Put(cloudwatchdouble.Alarm{Name: "web-5xx", State: cloudwatchdouble.Alarming,
		Reason: "Threshold Crossed: 1 datapoint [7.0] was greater than or equal to the threshold (5.0)."})
	d.Put(cloudwatchdouble.Alarm{Name: "web-hosts", State: cloudwatchdouble.InsufficientData})
	d.Put(cloudwatchdouble.Alarm{Name: "db-cpu", State: cloudwatchdouble.Alarming}) // firing, but not asked about

	asked := []string{"web-p99", "web-5xx", "web-hosts"}
	firing, err := w.Firing(context.Background(), asked)
	if err != nil {
		t.Fatal(err)
	}
	if len(firing) != 1 {
		t.Fatalf("firing %q, want web-5xx alone", names(firing))
	}
	got := firing[0]
	if got.Name != "web-5xx" || got.Type != alarms.MetricAlarm || got.State != alarms.StateAlarm ||
		!strings.Contains(got.Reason, "[7.0]") || !got.Since.Equal(t0.Add(90*time.Second)) {
		t.Fatalf("firing alarm %+v, want web-5xx, a MetricAlarm in ALARM since %s with its reason", got, t0.Add(90*time.Second))
	}
	if s := got.String(); !strings.Contains(s, `alarm "web-5xx" (MetricAlarm) in ALARM since 2026-11-30T09:01:30Z: Threshold Crossed`) {
		t.Fatalf("String() = %q", s)
	}

	all, err := w.States(context.Background(), asked)
	if err != nil {
		t.Fatal(err)
	}
	var states []string
	for _, a := range all {
		states = append(states, a.Name+"="+a.State)
	}
	if want := []string{"web-p99=OK", "web-5xx=ALARM", "web-hosts=INSUFFICIENT_DATA"}; !slices.Equal(states, want) {
		t.Fatalf("States = %q, want %q (the order asked)", states, want)
	}
}

func TestCompositeAndLogAlarmsAreSeen(t *testing.T) {
	d, _, w := start(t, cloudwatchdouble.Options{})
	d.Put(cloudwatchdouble.Alarm{Name: "web-5xx", State: cloudwatchdouble.OK})
	d.Put(cloudwatchdouble.Alarm{Name: "web-health", Type: cloudwatchdouble.CompositeAlarm, State: cloudwatchdouble.Alarming,
		Rule: `ALARM("web-5xx") OR ALARM("web-p99")`, Reason: "arn:aws:cloudwatch:eu-west-1:123456789012:alarm:web-p99 transitioned to ALARM"})
	d.Put(cloudwatchdouble.Alarm{Name: "web-panics", Type: cloudwatchdouble.LogAlarm, State: cloudwatchdouble.Alarming})

	firing, err := w.Firing(context.Background(), []string{"web-5xx", "web-health", "web-panics"})
	if err != nil {
		t.Fatal(err) // a watcher asking for metric alarms only (CloudWatch's default) sees neither and calls them missing
	}
	var got []string
	for _, a := range firing {
		got = append(got, a.Name+"/"+a.Type)
	}
	if want := []string{"web-health/CompositeAlarm", "web-panics/LogAlarm"}; !slices.Equal(got, want) {
		t.Fatalf("firing %q, want %q", got, want)
	}
}

func TestManyNamesAreAskedInBatchesOfAHundredAcrossPages(t *testing.T) {
	// The double answers at most 30 alarms a page, so each batch takes several pages.
	d, _, w := start(t, cloudwatchdouble.Options{PageLimit: 30})
	var asked, want []string
	for i := range 250 {
		n := fmt.Sprintf("svc-%03d-5xx", i)
		state := cloudwatchdouble.OK
		if i%7 == 3 {
			state, want = cloudwatchdouble.Alarming, append(want, n)
		}
		d.Put(cloudwatchdouble.Alarm{Name: n, State: state})
		asked = append(asked, n)
	}
	slices.Reverse(asked) // not the double's name order: the answer follows the order asked
	slices.Reverse(want)

	firing, err := w.Firing(context.Background(), asked)
	if err != nil {
		t.Fatal(err) // one call with 250 names is refused (AlarmNames holds at most 100)
	}
	if got := names(firing); !slices.Equal(got, want) {
		t.Fatalf("firing %d alarms %q,\nwant %d %q", len(got), got, len(want), want)
	}
	// Batches of 100, 100 and 50 names, at 30 a page: 4 + 4 + 2 pages.
	if n := d.Invocations("DescribeAlarms"); n != 10 {
		t.Fatalf("%d DescribeAlarms calls (and %d retries), want 10 (3 batches of at most 100 names, each page followed)",
			n, d.Calls("DescribeAlarms")-n)
	}
}

func TestAMissingAlarmIsAnErrorNamingIt(t *testing.T) {
	d, _, w := start(t, cloudwatchdouble.Options{})
	d.Put(cloudwatchdouble.Alarm{Name: "web-5xx", State: cloudwatchdouble.Alarming})
	d.Put(cloudwatchdouble.Alarm{Name: "web-p99", State: cloudwatchdouble.OK})

	firing, err := w.Firing(context.Background(), []string{"web-5xx", "web-p99", "web-5xxx"})
	var missing *alarms.MissingError
	if !errors.As(err, &missing) {
		t.Fatalf("err = %v, want a *MissingError for web-5xxx", err)
	}
	if !slices.Equal(missing.Names, []string{"web-5xxx"}) || missing.Region != "eu-west-1" {
		t.Fatalf("MissingError %+v, want web-5xxx in eu-west-1", missing)
	}
	if msg := err.Error(); !strings.Contains(msg, `rollout.alarms: alarm "web-5xxx" does not exist in region eu-west-1`) ||
		!strings.Contains(msg, "fix the name in rollout.alarms") {
		t.Fatalf("error %q does not name the key, the alarm, the region and what to do", msg)
	}
	if got := names(firing); !slices.Equal(got, []string{"web-5xx"}) {
		t.Fatalf("firing %q with the error, want the existing web-5xx still reported", got)
	}

	// An alarm deleted while a rollout watches it is missing from the next call on.
	d.Delete("web-p99")
	_, err = w.Firing(context.Background(), []string{"web-5xx", "web-p99"})
	if !errors.As(err, &missing) || !slices.Equal(missing.Names, []string{"web-p99"}) {
		t.Fatalf("after DeleteAlarms: err = %v, want web-p99 missing", err)
	}
	d.Delete("web-5xx")
	_, err = w.Firing(context.Background(), []string{"web-5xx", "web-p99"})
	if err == nil || !strings.Contains(err.Error(), `alarms "web-5xx", "web-p99" do not exist in region eu-west-1`) {
		t.Fatalf("err = %v, want both named", err)
	}
}

func TestAStateFlipIsSeenOnTheNextCall(t *testing.T) {
	d, clk, w := start(t, cloudwatchdouble.Options{})
	d.Put(cloudwatchdouble.Alarm{Name: "web-5xx", State: cloudwatchdouble.OK})
	ctx := context.Background()
	firing, err := w.Firing(ctx, []string{"web-5xx"})
	if err != nil || len(firing) != 0 {
		t.Fatalf("before the flip: firing %q, err %v; want none", names(firing), err)
	}

	clk.Advance(time.Minute)
	d.SetState("web-5xx", cloudwatchdouble.Alarming, "Threshold Crossed: 3 out of the last 3 datapoints")
	firing, err = w.Firing(ctx, []string{"web-5xx"})
	if err != nil || len(firing) != 1 || !firing[0].Since.Equal(t0.Add(time.Minute)) {
		t.Fatalf("after OK→ALARM: firing %+v, err %v; want web-5xx since %s", firing, err, t0.Add(time.Minute))
	}

	// Evaluated again, still in ALARM: the state was updated, but it fires since the flip.
	clk.Advance(time.Minute)
	d.SetState("web-5xx", cloudwatchdouble.Alarming, "Threshold Crossed: 4 out of the last 4 datapoints")
	firing, err = w.Firing(ctx, []string{"web-5xx"})
	if err != nil || len(firing) != 1 || !firing[0].Since.Equal(t0.Add(time.Minute)) || !strings.Contains(firing[0].Reason, "4 out of") {
		t.Fatalf("after ALARM→ALARM: firing %+v, err %v; want web-5xx since the flip at %s, with the new reason", firing, err, t0.Add(time.Minute))
	}

	clk.Advance(time.Minute)
	d.SetState("web-5xx", cloudwatchdouble.OK, "recovered")
	if firing, err = w.Firing(ctx, []string{"web-5xx"}); err != nil || len(firing) != 0 {
		t.Fatalf("after ALARM→OK: firing %q, err %v; want none", names(firing), err)
	}
	if n := d.Calls("DescribeAlarms"); n != 4 {
		t.Fatalf("%d DescribeAlarms calls for 4 Firing calls: the state must be read afresh each time", n)
	}
}

func TestNoNamesAskNothing(t *testing.T) {
	d, _, w := start(t, cloudwatchdouble.Options{})
	firing, err := w.Firing(context.Background(), nil)
	if err != nil || firing != nil || d.TotalCalls() != 0 {
		t.Fatalf("Firing(nil) = %v, %v after %d calls; want nothing asked", firing, err, d.TotalCalls())
	}
}

func TestRequestsSignedForAnotherRegionAreRefused(t *testing.T) {
	testCredentials(t)
	d := cloudwatchdouble.New(cloudwatchdouble.Options{Region: "eu-west-1"})
	d.Put(cloudwatchdouble.Alarm{Name: "web-5xx", State: cloudwatchdouble.OK})
	srv := httptest.NewServer(d)
	t.Cleanup(srv.Close)
	w, err := alarms.NewWatcher(context.Background(), "us-east-1", srv.URL)
	if err != nil {
		t.Fatal(err)
	}
	firing, err := w.Firing(context.Background(), []string{"web-5xx"})
	var api smithy.APIError
	if !errors.As(err, &api) || api.ErrorCode() != "SignatureDoesNotMatch" || firing != nil {
		t.Fatalf("Firing signed for us-east-1 = %v, %v; want SignatureDoesNotMatch and no alarms", firing, err)
	}
	var missing *alarms.MissingError
	if errors.As(err, &missing) {
		t.Fatalf("a refused call reported as missing alarms: %v", err)
	}
	if msg := err.Error(); !strings.Contains(msg, "rollout.alarms: CloudWatch DescribeAlarms in region us-east-1") ||
		!strings.Contains(msg, "cloudwatch:DescribeAlarms") {
		t.Fatalf("error %q does not say what failed where and what the deployer needs", msg)
	}
}

func TestWithoutARegionNewWatcherSaysWhereToSetIt(t *testing.T) {
	testCredentials(t) // AWS_REGION and AWS_DEFAULT_REGION empty, no profile
	_, err := alarms.NewWatcher(context.Background(), "", "")
	if err == nil || !strings.Contains(err.Error(), "balancer.region") || !strings.Contains(err.Error(), "AWS_REGION") {
		t.Fatalf("NewWatcher without a region: %v; want an error naming balancer.region and AWS_REGION", err)
	}
}

// $ZERO502_CLOUDWATCH_ENDPOINT that is no http(s) URL (a host:port without its scheme) is
// refused when the Watcher is built, naming the variable, the value and the rule, not at the
// first call with a hint about IAM.
func TestAnEndpointThatIsNoURLIsRefusedNamingTheVariable(t *testing.T) {
	testCredentials(t)
	for _, ep := range []string{"127.0.0.1:4566", "ftp://cloudwatch.example", "http://"} {
		_, err := alarms.NewWatcher(context.Background(), "eu-west-1", ep)
		if err == nil || !strings.Contains(err.Error(), alarms.EnvEndpoint) || !strings.Contains(err.Error(), ep) ||
			!strings.Contains(err.Error(), "http:// or https://") {
			t.Errorf("NewWatcher with the endpoint %q: %v; want it refused naming $%s, the value and the rule", ep, err, alarms.EnvEndpoint)
		}
	}
}

// A CloudWatch the request never reached (nothing listens there) is said as such, with what to
// check, not as a missing IAM permission: AWS never answered.
func TestACloudWatchNotReachedSaysSoNotThatIAMIsMissing(t *testing.T) {
	testCredentials(t)
	srv := httptest.NewServer(nil)
	closed := srv.URL
	srv.Close() // nothing listens there: the calls fail to connect
	w, err := alarms.NewWatcher(context.Background(), "eu-west-1", closed)
	if err != nil {
		t.Fatal(err)
	}
	_, err = w.Firing(context.Background(), []string{"web-5xx"})
	if err == nil || strings.Contains(err.Error(), "IAM") || !strings.Contains(err.Error(), "reaches CloudWatch") ||
		!strings.Contains(err.Error(), alarms.EnvEndpoint) {
		t.Fatalf("Firing against an endpoint nothing listens on: %v; want it said that CloudWatch was not reached, and where to look", err)
	}
}
