// Package alarms owns zero502's CloudWatch alarm gate (rollout.alarms): given the alarm names
// of the config, it tells which of them are in state ALARM now, through aws-sdk-go-v2's
// CloudWatch client (DescribeAlarms, metric, composite and log alarms alike). It is the
// verdict's evidence where the balancer publishes no per-target outcomes, an ALB: the deployer
// asks before the deploy, through the window of the canary and of each batch once its hosts are
// baked, and before each next batch (docs/aws.md says exactly when), and an alarm in ALARM fails
// the verdict, as CodeDeploy's and ECS's alarm rollbacks do. A name that matches no alarm is an error, never a
// pass: a typo in rollout.alarms would otherwise switch the gate off without a word.
//
// The package only reads alarms (IAM: cloudwatch:DescribeAlarms); when to ask and what a
// firing alarm does to the rollout is the deployer's. NewWatcher builds the client from the
// SDK's default credential chain; the tests point the real SDK at package cloudwatchdouble,
// which speaks the protocol this SDK version uses (Smithy RPC v2 CBOR); they never reached AWS.
package alarms

import (
	"context"
	"errors"
	"fmt"
	"net/url"
	"slices"
	"strings"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	awsconfig "github.com/aws/aws-sdk-go-v2/config"
	"github.com/aws/aws-sdk-go-v2/service/cloudwatch"
	"github.com/aws/aws-sdk-go-v2/service/cloudwatch/types"
	smithyhttp "github.com/aws/smithy-go/transport/http"
)

// EnvEndpoint names the environment variable that, when set, replaces the regional CloudWatch
// endpoint: a VPC endpoint, or the local double in tests (e.g.
// ZERO502_CLOUDWATCH_ENDPOINT=http://127.0.0.1:4566). The config loader accepts it
// (config.EnvNotConfig).
const EnvEndpoint = "ZERO502_CLOUDWATCH_ENDPOINT"

// callTimeout bounds each DescribeAlarms call, the SDK's retries included: the client has no
// timeout of its own, and the deployer asks on the deploy's context, which nothing else bounds
// while a batch is judged, so a CloudWatch endpoint that accepts the connection and never answers
// would hold the deploy, and the fleet lock, forever. CloudWatch answers within a second; the
// SDK's standard retryer makes 3 attempts with at most 2s and 4s of backoff between them: 20s
// lets a slow endpoint finish all three and still turns a hung one into an error the deployer
// can act on. A variable so the tests can shorten it.
var callTimeout = 20 * time.Second

// batchSize is the most alarm names one DescribeAlarms call may carry (its AlarmNames limit);
// longer lists are asked in batches of this size.
const batchSize = 100

// cloudWatchAPI is what this package needs of CloudWatch; *cloudwatch.Client satisfies it.
type cloudWatchAPI interface {
	DescribeAlarms(context.Context, *cloudwatch.DescribeAlarmsInput, ...func(*cloudwatch.Options)) (*cloudwatch.DescribeAlarmsOutput, error)
}

var _ cloudWatchAPI = (*cloudwatch.Client)(nil)

// Alarm types (Alarm.Type), as CloudWatch names them.
const (
	MetricAlarm    = string(types.AlarmTypeMetricAlarm)
	CompositeAlarm = string(types.AlarmTypeCompositeAlarm)
	LogAlarm       = string(types.AlarmTypeLogAlarm)
)

// Alarm states (Alarm.State), as CloudWatch names them.
const (
	stateOK               = string(types.StateValueOk)
	StateAlarm            = string(types.StateValueAlarm)
	stateInsufficientData = string(types.StateValueInsufficientData)
)

// Alarm is one CloudWatch alarm's state as DescribeAlarms reported it.
type Alarm struct {
	// Name is the alarm's name, as rollout.alarms lists it.
	Name string
	// Type is MetricAlarm, CompositeAlarm or LogAlarm.
	Type string
	// State is OK, ALARM or INSUFFICIENT_DATA.
	State string
	// Reason is CloudWatch's explanation of the state (StateReason), e.g. "Threshold Crossed:
	// 1 datapoint [7.0] was greater than or equal to the threshold (5.0)".
	Reason string
	// Since is when the alarm entered State (StateTransitionedTimestamp; the last state update
	// when CloudWatch gives no transition time). Zero when CloudWatch gave neither.
	Since time.Time
}

// Firing says whether the alarm is in state ALARM.
func (a Alarm) Firing() bool { return a.State == StateAlarm }

// String is the alarm as a deploy report names it: name, type, state, since when, and why.
func (a Alarm) String() string {
	s := fmt.Sprintf("alarm %q (%s) in %s", a.Name, a.Type, a.State)
	if !a.Since.IsZero() {
		s += " since " + a.Since.UTC().Format(time.RFC3339)
	}
	if a.Reason != "" {
		s += ": " + a.Reason
	}
	return s
}

// MissingError is the error of alarm names that match no alarm in the region.
type MissingError struct {
	// Names are the names without an alarm, in the order they were asked.
	Names []string
	// Region is the region they were looked up in.
	Region string
}

func (e *MissingError) Error() string {
	quoted := make([]string, len(e.Names))
	for i, n := range e.Names {
		quoted[i] = fmt.Sprintf("%q", n)
	}
	what := "alarm " + quoted[0] + " does not exist"
	if len(quoted) > 1 {
		what = "alarms " + strings.Join(quoted, ", ") + " do not exist"
	}
	return fmt.Sprintf("rollout.alarms: %s in region %s: fix the name in rollout.alarms, create the alarm "+
		"in %s, or set balancer.region to the alarms' region (a missing alarm never passes the gate)",
		what, e.Region, e.Region)
}

// Watcher reads the states of CloudWatch alarms in one region. It is safe for concurrent use.
type Watcher struct {
	api    cloudWatchAPI
	region string
}

// New returns a Watcher asking api, a CloudWatch client of region (which errors name).
func New(api cloudWatchAPI, region string) *Watcher {
	return &Watcher{api: api, region: region}
}

// NewWatcher builds a Watcher on the SDK's CloudWatch client: credentials from the SDK's default
// chain (environment, shared profile, web identity, IMDS), region from region when set (the
// deployer passes balancer.region), else from the chain (AWS_REGION, profile), and endpoint,
// when set, in place of the regional endpoint (BaseEndpoint: a VPC endpoint, or the tests'
// double; the deployer passes $ZERO502_CLOUDWATCH_ENDPOINT).
func NewWatcher(ctx context.Context, region, endpoint string) (*Watcher, error) {
	var load []func(*awsconfig.LoadOptions) error
	if region = strings.TrimSpace(region); region != "" {
		load = append(load, awsconfig.WithRegion(region))
	}
	awsCfg, err := awsconfig.LoadDefaultConfig(ctx, load...)
	if err != nil {
		return nil, fmt.Errorf("rollout.alarms: loading AWS configuration (credentials and region): %w", err)
	}
	if awsCfg.Region == "" {
		return nil, errors.New("rollout.alarms: no AWS region for CloudWatch: set balancer.region in the config " +
			"(the alarms' region, e.g. eu-west-1) or AWS_REGION in the environment")
	}
	endpoint = strings.TrimSpace(endpoint)
	if endpoint != "" {
		// Checked here, not at the first call, whose error would not name where it came from.
		if u, err := url.Parse(endpoint); err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
			return nil, fmt.Errorf("rollout.alarms: the CloudWatch endpoint %q ($%s): must be an http:// or https:// URL with a host, "+
				"e.g. https://monitoring.eu-west-1.amazonaws.com; unset it to use the region's endpoint", endpoint, EnvEndpoint)
		}
	}
	client := cloudwatch.NewFromConfig(awsCfg, func(o *cloudwatch.Options) {
		if endpoint != "" {
			o.BaseEndpoint = aws.String(endpoint)
		}
	})
	return New(client, awsCfg.Region), nil
}

// Region is the region the Watcher reads alarms in.
func (w *Watcher) Region() string { return w.region }

// Firing returns the alarms among names that are in state ALARM, in the order of names. A
// name that matches no alarm is a *MissingError naming every such name; the alarms returned
// with it are the firing ones among the names that exist, so a report can show both. Any
// other error (credentials, permissions, throttling after the SDK's retries, an endpoint that
// did not answer within callTimeout) comes with no alarms: the gate could not look, which is not
// a pass either.
func (w *Watcher) Firing(ctx context.Context, names []string) ([]Alarm, error) {
	all, err := w.States(ctx, names)
	var missing *MissingError
	if err != nil && !errors.As(err, &missing) {
		return nil, err
	}
	var firing []Alarm
	for _, a := range all {
		if a.Firing() {
			firing = append(firing, a)
		}
	}
	return firing, err
}

// States returns the state of every alarm among names, whatever it is, in the order of names
// (each name once). Names that match no alarm are a *MissingError, returned with the states of
// the others. It asks DescribeAlarms for every alarm type, batchSize names at a time, following
// NextToken through every page.
func (w *Watcher) States(ctx context.Context, names []string) ([]Alarm, error) {
	var unique []string
	seen := map[string]bool{}
	for _, n := range names {
		if !seen[n] {
			seen[n] = true
			unique = append(unique, n)
		}
	}
	found := map[string]Alarm{}
	for batch := range slices.Chunk(unique, batchSize) {
		if err := w.describe(ctx, batch, found); err != nil {
			return nil, err
		}
	}
	var out []Alarm
	var missing []string
	for _, n := range unique {
		if a, ok := found[n]; ok {
			out = append(out, a)
		} else {
			missing = append(missing, n)
		}
	}
	if len(missing) > 0 {
		return out, &MissingError{Names: missing, Region: w.region}
	}
	return out, nil
}

// describe adds the alarms of batch (at most batchSize names) that exist to found.
func (w *Watcher) describe(ctx context.Context, batch []string, found map[string]Alarm) error {
	asked := map[string]bool{}
	for _, n := range batch {
		asked[n] = true
	}
	add := func(a Alarm, transitioned, updated *time.Time) {
		if !asked[a.Name] {
			return // not ours: CloudWatch describes only the names asked, but never trust a page blindly
		}
		switch {
		case transitioned != nil:
			a.Since = *transitioned
		case updated != nil:
			a.Since = *updated
		}
		found[a.Name] = a
	}
	pages := cloudwatch.NewDescribeAlarmsPaginator(w.api, &cloudwatch.DescribeAlarmsInput{
		AlarmNames: batch,
		AlarmTypes: []types.AlarmType{types.AlarmTypeMetricAlarm, types.AlarmTypeCompositeAlarm, types.AlarmTypeLogAlarm},
		MaxRecords: aws.Int32(batchSize),
	}, func(o *cloudwatch.DescribeAlarmsPaginatorOptions) { o.StopOnDuplicateToken = true })
	for pages.HasMorePages() {
		call, cancel := context.WithTimeout(ctx, callTimeout)
		page, err := pages.NextPage(call)
		hung := call.Err() != nil && ctx.Err() == nil
		cancel()
		if err != nil && hung {
			return fmt.Errorf("rollout.alarms: CloudWatch DescribeAlarms in region %s did not answer within %s (%w): "+
				"check that this machine reaches CloudWatch there (network, proxy, VPC endpoint, $%s)", w.region, callTimeout, err, EnvEndpoint)
		}
		var unsent *smithyhttp.RequestSendError
		if err != nil && errors.As(err, &unsent) { // no answer came: not a matter of permissions
			return fmt.Errorf("rollout.alarms: CloudWatch DescribeAlarms in region %s: %w: "+
				"check that this machine reaches CloudWatch there (network, proxy, VPC endpoint, $%s)", w.region, err, EnvEndpoint)
		}
		if err != nil {
			return fmt.Errorf("rollout.alarms: CloudWatch DescribeAlarms in region %s: %w "+
				"(the deployer needs the IAM action cloudwatch:DescribeAlarms there)", w.region, err)
		}
		for _, m := range page.MetricAlarms {
			add(Alarm{Name: aws.ToString(m.AlarmName), Type: MetricAlarm, State: string(m.StateValue),
				Reason: aws.ToString(m.StateReason)}, m.StateTransitionedTimestamp, m.StateUpdatedTimestamp)
		}
		for _, c := range page.CompositeAlarms {
			add(Alarm{Name: aws.ToString(c.AlarmName), Type: CompositeAlarm, State: string(c.StateValue),
				Reason: aws.ToString(c.StateReason)}, c.StateTransitionedTimestamp, c.StateUpdatedTimestamp)
		}
		for _, l := range page.LogAlarms {
			add(Alarm{Name: aws.ToString(l.AlarmName), Type: LogAlarm, State: string(l.StateValue),
				Reason: aws.ToString(l.StateReason)}, l.StateTransitionedTimestamp, l.StateUpdatedTimestamp)
		}
	}
	return nil
}
