// Package cloudwatchdouble is a local stand-in for the Amazon CloudWatch alarms API, for tests
// only: no AWS is reachable from where zero502 is built, so the real aws-sdk-go-v2 CloudWatch
// client is pointed (BaseEndpoint) at this double instead. It speaks the wire protocol that
// client (service/cloudwatch v1.75.x) really sends: Smithy RPC v2 CBOR, awsQuery-compatible.
// A call is POST /service/GraniteServiceVersion20100801/operation/{Operation} with the headers
// Smithy-Protocol: rpc-v2-cbor, Content-Type and Accept application/cbor and X-Amzn-Query-Mode:
// true, its input a CBOR map; the answer is a CBOR map (timestamps as tag 1, epoch seconds), and
// an error is a CBOR map with __type and message plus the X-Amzn-Query-Error header
// ("Code;Sender"), from which the SDK takes the error code a Query client would have seen.
// Requests must carry a SigV4 Authorization header scoped to service monitoring and to the
// double's region. CBOR is read and written with github.com/aws/smithy-go/encoding/cbor, the
// codec the SDK itself is built on.
//
// It implements DescribeAlarms, the one call zero502 makes (package infra/alarms): AlarmNames
// (at most 100), AlarmNamePrefix, AlarmTypes (MetricAlarm, CompositeAlarm, LogAlarm; without
// it only metric alarms are described, as CloudWatch does), StateValue, and pagination by
// MaxRecords (1..100, default 50) and an opaque NextToken, alarms in name order. Names that
// match no alarm are left out of the answer, not refused, as CloudWatch does. Tests create
// alarms and set their states (OK, ALARM, INSUFFICIENT_DATA) directly; every call is counted by
// operation. What it shares with the ELBv2 and Route 53 doubles (request IDs, the SigV4 scope
// check, call counts) is internal/testrig/awsdouble; this package keeps the CBOR protocol.
package cloudwatchdouble

import (
	"fmt"
	"net/http"
	"sort"
	"strings"
	"sync"
	"time"

	"github.com/zero502/zero502/infra/clock"
	"github.com/zero502/zero502/internal/testrig/awsdouble"
)

// Service is the Smithy service name in every operation's path.
const Service = "GraniteServiceVersion20100801"

// signingName is the SigV4 service name of CloudWatch.
const signingName = "monitoring"

// Alarm types, as AlarmTypes and the answer's lists name them.
const (
	MetricAlarm    = "MetricAlarm"
	CompositeAlarm = "CompositeAlarm"
	LogAlarm       = "LogAlarm"
)

// Alarm states (StateValue).
const (
	OK               = "OK"
	Alarming         = "ALARM"
	InsufficientData = "INSUFFICIENT_DATA"
)

// Options configure a Server.
type Options struct {
	// Region is the region the double serves: requests signed for another are refused, and it
	// goes into the alarms' ARNs. Default eu-west-1.
	Region string
	// Clock stamps state changes. Default clock.Real.
	Clock clock.Clock
	// PageLimit, when positive, caps the alarms in one answer below MaxRecords, so a test can
	// make a caller follow NextToken with few alarms. 0: MaxRecords alone decides.
	PageLimit int
}

// Alarm is one alarm as the double holds it.
type Alarm struct {
	Name string
	// Type is MetricAlarm (default), CompositeAlarm or LogAlarm.
	Type string
	// State is OK, ALARM or INSUFFICIENT_DATA (default, as a new alarm starts).
	State string
	// Reason is the state's explanation (StateReason).
	Reason string
	// Rule is a composite alarm's AlarmRule, e.g. ALARM("web-5xx") OR ALARM("web-p99").
	Rule string
	// Transitioned is when State last changed (StateTransitionedTimestamp) and Updated when
	// the state was last set, changed or not (StateUpdatedTimestamp).
	Transitioned, Updated time.Time
}

// Server is the CloudWatch API double; it is an http.Handler (use it with httptest.NewServer).
type Server struct {
	region    string
	clock     clock.Clock
	pageLimit int
	calls     awsdouble.Calls // by operation
	retries   awsdouble.Calls // the calls that were an SDK's retry of an earlier one, by operation

	mu     sync.Mutex
	alarms map[string]*Alarm // by name
}

// New returns a double without alarms; add them with Put.
func New(opts Options) *Server {
	if opts.Region == "" {
		opts.Region = "eu-west-1"
	}
	if opts.Clock == nil {
		opts.Clock = clock.Real{}
	}
	return &Server{region: opts.Region, clock: opts.Clock, pageLimit: opts.PageLimit, alarms: map[string]*Alarm{}}
}

// Region is the region the double serves.
func (s *Server) Region() string { return s.region }

// Put creates or replaces an alarm, as PutMetricAlarm or PutCompositeAlarm would; zero Type,
// State and times take the defaults (MetricAlarm, INSUFFICIENT_DATA, now).
func (s *Server) Put(a Alarm) {
	if a.Type == "" {
		a.Type = MetricAlarm
	}
	if a.State == "" {
		a.State = InsufficientData
	}
	now := s.clock.Now()
	if a.Transitioned.IsZero() {
		a.Transitioned = now
	}
	if a.Updated.IsZero() {
		a.Updated = a.Transitioned
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	s.alarms[a.Name] = &a
}

// SetState sets an alarm's state and reason, as SetAlarmState or an evaluation would: Updated
// is now, and Transitioned too when the state changes. It returns false when there is no such
// alarm.
func (s *Server) SetState(name, state, reason string) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	a, ok := s.alarms[name]
	if !ok {
		return false
	}
	now := s.clock.Now()
	if a.State != state {
		a.Transitioned = now
	}
	a.State, a.Reason, a.Updated = state, reason, now
	return true
}

// Delete removes an alarm, as DeleteAlarms would.
func (s *Server) Delete(name string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	delete(s.alarms, name)
}

// Calls is how many requests of operation (e.g. "DescribeAlarms") the double answered,
// successfully or not.
func (s *Server) Calls(operation string) int { return s.calls.Of(operation) }

// Invocations is Calls less the SDK's retries (an attempt after the first of one invocation):
// how many requests of operation the caller made. A retry happens when a connection fails under
// a loaded machine, and says nothing of the caller's paging.
func (s *Server) Invocations(operation string) int {
	return s.calls.Of(operation) - s.retries.Of(operation)
}

// retry says r is a retry: the SDK numbers each invocation's attempts in its amz-sdk-request
// header ("attempt=2; max=3").
func retry(r *http.Request) bool {
	for _, f := range strings.Split(r.Header.Get("amz-sdk-request"), ";") {
		if n, ok := strings.CutPrefix(strings.TrimSpace(f), "attempt="); ok && n != "1" {
			return true
		}
	}
	return false
}

// TotalCalls is how many API requests the double has received, of any operation.
func (s *Server) TotalCalls() int { return s.calls.Total() }

// arn is the alarm's ARN in the double's region and test account.
func (s *Server) arn(name string) string {
	return fmt.Sprintf("arn:aws:cloudwatch:%s:123456789012:alarm:%s", s.region, name)
}

// ServeHTTP answers one RPC v2 CBOR request.
func (s *Server) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	awsdouble.NewRequestID(w)
	if err := s.serve(w, r); err != nil {
		writeError(w, err)
	}
}

// serve answers r with its result, or returns the error to answer instead.
func (s *Server) serve(w http.ResponseWriter, r *http.Request) error {
	prefix := "/service/" + Service + "/operation/"
	op, ok := strings.CutPrefix(r.URL.Path, prefix)
	if !ok || op == "" || strings.Contains(op, "/") || r.Method != http.MethodPost {
		return awsdouble.Errorf(http.StatusNotFound, "UnknownOperationException",
			"no CloudWatch operation at %s %s (RPC v2 calls are POST %s{Operation})", r.Method, r.URL.Path, prefix)
	}
	s.calls.Add(op)
	if retry(r) {
		s.retries.Add(op)
	}
	if p := r.Header.Get("Smithy-Protocol"); p != "rpc-v2-cbor" {
		return awsdouble.Errorf(http.StatusBadRequest, "InvalidRequest",
			"Smithy-Protocol header is %q, want rpc-v2-cbor", p)
	}
	region, err := awsdouble.Authenticate(r, signingName, awsdouble.Errorf(http.StatusForbidden,
		"MissingAuthenticationToken", "Request is missing Authentication Token"))
	if err != nil {
		return err
	}
	if region != s.region {
		return awsdouble.Errorf(http.StatusForbidden, "SignatureDoesNotMatch",
			"Credential should be scoped to a valid region, not '%s'. This endpoint serves %s.", region, s.region)
	}
	in, err := readInput(r)
	if err != nil {
		return err
	}
	var out map[string]any
	switch op {
	case "DescribeAlarms":
		out, err = s.describeAlarms(in)
	default:
		return awsdouble.Errorf(http.StatusBadRequest, "UnknownOperationException",
			"the double implements DescribeAlarms only, not %s", op)
	}
	if err != nil {
		return err
	}
	return writeOutput(w, out)
}

// describeAlarms answers DescribeAlarms.
func (s *Server) describeAlarms(in input) (map[string]any, error) {
	for _, unsupported := range []string{"ActionPrefix", "ChildrenOfAlarmName", "ParentsOfAlarmName"} {
		if _, ok := in[unsupported]; ok {
			return nil, validation("the double does not implement DescribeAlarms' %s", unsupported)
		}
	}
	names, err := in.texts("AlarmNames")
	if err != nil {
		return nil, err
	}
	if len(names) > 100 {
		return nil, validation("1 validation error detected: Value at 'alarmNames' failed to satisfy constraint: "+
			"Member must have length less than or equal to 100 (it has %d)", len(names))
	}
	prefix, _, err := in.text("AlarmNamePrefix")
	if err != nil {
		return nil, err
	}
	if prefix != "" && len(names) > 0 {
		return nil, awsdouble.Errorf(http.StatusBadRequest, "InvalidParameterCombination",
			"AlarmNamePrefix and AlarmNames cannot be specified together")
	}
	types, err := in.texts("AlarmTypes")
	if err != nil {
		return nil, err
	}
	if len(types) == 0 {
		types = []string{MetricAlarm} // CloudWatch: without AlarmTypes, metric alarms only
	}
	wantType := map[string]bool{}
	for _, t := range types {
		if t != MetricAlarm && t != CompositeAlarm && t != LogAlarm {
			return nil, validation("AlarmTypes member %q must be one of MetricAlarm, CompositeAlarm, LogAlarm", t)
		}
		wantType[t] = true
	}
	state, _, err := in.text("StateValue")
	if err != nil {
		return nil, err
	}
	if state != "" && state != OK && state != Alarming && state != InsufficientData {
		return nil, validation("StateValue %q must be one of OK, ALARM, INSUFFICIENT_DATA", state)
	}
	maxRecords, set, err := in.integer("MaxRecords")
	if err != nil {
		return nil, err
	}
	if !set {
		maxRecords = 50
	}
	if maxRecords < 1 || maxRecords > 100 {
		return nil, validation("MaxRecords %d must be from 1 to 100", maxRecords)
	}
	if s.pageLimit > 0 && maxRecords > s.pageLimit {
		maxRecords = s.pageLimit
	}
	filter := fmt.Sprintf("%q|%q|%q|%q", names, prefix, types, state) // a token is for this query only

	s.mu.Lock()
	defer s.mu.Unlock()
	var match []Alarm
	wantName := map[string]bool{}
	for _, n := range names {
		wantName[n] = true
	}
	for _, a := range s.alarms {
		if (len(names) > 0 && !wantName[a.Name]) || !strings.HasPrefix(a.Name, prefix) ||
			!wantType[a.Type] || (state != "" && a.State != state) {
			continue
		}
		match = append(match, *a)
	}
	sort.Slice(match, func(i, j int) bool { return match[i].Name < match[j].Name })

	start := 0
	if token, set, err := in.text("NextToken"); err != nil {
		return nil, err
	} else if set {
		if start, err = parseToken(token, filter); err != nil {
			return nil, err
		}
	}
	start = min(start, len(match))
	end := min(start+maxRecords, len(match))
	out := map[string]any{}
	lists := map[string][]any{}
	for _, a := range match[start:end] {
		lists[a.Type] = append(lists[a.Type], s.describe(a))
	}
	for t, key := range map[string]string{MetricAlarm: "MetricAlarms", CompositeAlarm: "CompositeAlarms", LogAlarm: "LogAlarms"} {
		if wantType[t] {
			out[key] = lists[t] // an empty list when none matched, as CloudWatch answers
		}
	}
	if end < len(match) {
		out["NextToken"] = makeToken(end, filter)
	}
	return out, nil
}

// describe is a's MetricAlarm, CompositeAlarm or LogAlarm structure.
func (s *Server) describe(a Alarm) map[string]any {
	m := map[string]any{
		"AlarmName":                          a.Name,
		"AlarmArn":                           s.arn(a.Name),
		"StateValue":                         a.State,
		"StateReason":                        a.Reason,
		"StateUpdatedTimestamp":              a.Updated,
		"StateTransitionedTimestamp":         a.Transitioned,
		"ActionsEnabled":                     true,
		"AlarmConfigurationUpdatedTimestamp": a.Transitioned,
	}
	switch a.Type {
	case CompositeAlarm:
		m["AlarmRule"] = a.Rule
	case MetricAlarm:
		m["Namespace"], m["MetricName"], m["Statistic"] = "AWS/ApplicationELB", "HTTPCode_Target_5XX_Count", "Sum"
		m["Period"], m["EvaluationPeriods"], m["Threshold"] = 60, 1, 1.0
		m["ComparisonOperator"] = "GreaterThanOrEqualToThreshold"
	}
	return m
}

// validation is CloudWatch's ValidationError.
func validation(format string, args ...any) error {
	return awsdouble.Errorf(http.StatusBadRequest, "ValidationError", format, args...)
}
