// Package elbv2double is a local stand-in for the AWS Elastic Load Balancing v2 API, for tests
// only: no AWS is reachable from where zero502 is built, so the real aws-sdk-go-v2 client is
// pointed (BaseEndpoint) at this double instead. It speaks the real wire protocol, the AWS Query
// protocol of API version 2015-12-01 (form-encoded POST Action=…&Version=…, XML responses in an
// <Action>Response/<Action>Result envelope with ResponseMetadata/RequestId, XML ErrorResponse
// with Error/Type/Code/Message and the documented HTTP status), for the target-group actions
// zero502 uses: DescribeTargetGroups, DescribeTargetGroupAttributes, ModifyTargetGroup,
// ModifyTargetGroupAttributes, DescribeTargetHealth, RegisterTargets, DeregisterTargets.
//
// Target health is simulated the way an ALB does it, over time: every target has a real health
// endpoint (http://id:port/path on loopback; the group's HealthCheckProtocol and, unless it is
// traffic-port, its HealthCheckPort replace the scheme and port) that the double actually
// requests once per configured interval (on an injectable clock); a target goes initial → healthy after
// healthy_threshold good checks, healthy → unhealthy after unhealthy_threshold failed ones,
// draining for deregistration_delay after DeregisterTargets, and when no registered target is
// healthy the target group fails open (routes to all of them), which the double reports.
// It counts every call by action, so tests can prove that a second provision changed nothing.
// What it shares with the Route 53 double of the AWS wire (request IDs, the SigV4 check, the
// ErrorResponse document, the call counts) is package internal/testrig/awsdouble; this package
// keeps the Query protocol and the target groups.
package elbv2double

import (
	"context"
	"crypto/tls"
	"encoding/xml"
	"fmt"
	"math/rand/v2"
	"net/http"
	"sort"
	"sync"
	"time"

	"github.com/zero502/zero502/infra/clock"
	"github.com/zero502/zero502/internal/testrig/awsdouble"
)

// apiVersion is the only Version the double accepts, as ELBv2 does.
const apiVersion = "2015-12-01"

// Namespace is the XML namespace of every ELBv2 response.
const Namespace = "http://elasticloadbalancing.amazonaws.com/doc/2015-12-01/"

// Options configure a Server.
type Options struct {
	// Clock schedules health-check rounds and deregistration delays. Default clock.Real.
	Clock clock.Clock
	// Region goes into the ARNs the double makes. Default eu-west-1.
	Region string
	// HTTPClient makes the health checks. Default: a client that never reuses connections,
	// like an ALB health checker (one request per connection), that does not verify a
	// target's certificate on an HTTPS check and does not follow a redirect (a 3xx is the
	// answer the matcher judges), as an ALB does not.
	HTTPClient *http.Client
}

// Server is the ELBv2 API double; it is an http.Handler (use it with httptest.NewServer).
type Server struct {
	clock  clock.Clock
	region string
	hc     *http.Client

	ctx    context.Context
	cancel context.CancelFunc
	wg     sync.WaitGroup

	calls awsdouble.Calls // by Action

	mu        sync.Mutex
	groups    map[string]*targetGroup // by ARN
	order     []string                // ARNs in creation order
	instances map[string]string       // instance id → IP the health check goes to
	regions   map[string]int          // signing region of each signed request
}

// New returns a double with no target groups; add them with AddTargetGroup. Close stops its
// health checkers.
func New(opts Options) *Server {
	if opts.Clock == nil {
		opts.Clock = clock.Real{}
	}
	if opts.Region == "" {
		opts.Region = "eu-west-1"
	}
	if opts.HTTPClient == nil {
		opts.HTTPClient = &http.Client{Transport: &http.Transport{DisableKeepAlives: true,
			TLSClientConfig: &tls.Config{InsecureSkipVerify: true}},
			CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
	}
	ctx, cancel := context.WithCancel(context.Background())
	return &Server{
		clock: opts.Clock, region: opts.Region, hc: opts.HTTPClient,
		ctx: ctx, cancel: cancel,
		groups: map[string]*targetGroup{}, instances: map[string]string{},
		regions: map[string]int{},
	}
}

// Close stops every health checker and waits for them.
func (s *Server) Close() {
	s.cancel()
	s.wg.Wait()
}

// Settings are a target group's health-check settings and attributes, as the console shows
// them. Zero values in AddTargetGroup take AWS's defaults for a new HTTP target group.
type Settings struct {
	HealthCheckPath     string        // default "/"
	Interval            time.Duration // HealthCheckIntervalSeconds, default 30s
	Timeout             time.Duration // HealthCheckTimeoutSeconds, default 5s
	HealthyThreshold    int           // HealthyThresholdCount, default 5
	UnhealthyThreshold  int           // UnhealthyThresholdCount, default 2
	Matcher             string        // Matcher.HttpCode, default "200"
	HealthCheckPort     string        // "traffic-port" (each target's port, the default) or a fixed port
	HealthCheckProtocol string        // HTTP (the default) or HTTPS
	DeregistrationDelay time.Duration // deregistration_delay.timeout_seconds, default 300s
	SlowStart           time.Duration // slow_start.duration_seconds, default 0 (off)
}

// TargetGroup describes a target group to create in the double.
type TargetGroup struct {
	Name       string // default "tg"
	Port       int    // traffic port, default 80
	TargetType string // "ip" (health checks go to id:port) or "instance" (see SetInstanceAddress); default ip
	// Settings start the group; zero fields take AWS's defaults (SlowStart 0 stays off).
	Settings Settings
}

func (s Settings) withDefaults() Settings {
	if s.HealthCheckPath == "" {
		s.HealthCheckPath = "/"
	}
	if s.Interval == 0 {
		s.Interval = 30 * time.Second
	}
	if s.Timeout == 0 {
		s.Timeout = 5 * time.Second
	}
	if s.HealthyThreshold == 0 {
		s.HealthyThreshold = 5
	}
	if s.UnhealthyThreshold == 0 {
		s.UnhealthyThreshold = 2
	}
	if s.Matcher == "" {
		s.Matcher = "200"
	}
	if s.HealthCheckPort == "" {
		s.HealthCheckPort = trafficPort
	}
	if s.HealthCheckProtocol == "" {
		s.HealthCheckProtocol = "HTTP"
	}
	if s.DeregistrationDelay == 0 {
		s.DeregistrationDelay = 300 * time.Second
	}
	return s
}

// AddTargetGroup creates a target group, starts its health checker and returns its ARN.
func (s *Server) AddTargetGroup(tg TargetGroup) string {
	if tg.Name == "" {
		tg.Name = "tg"
	}
	if tg.Port == 0 {
		tg.Port = 80
	}
	if tg.TargetType == "" {
		tg.TargetType = "ip"
	}
	arn := fmt.Sprintf("arn:aws:elasticloadbalancing:%s:123456789012:targetgroup/%s/%016x",
		s.region, tg.Name, rand.Uint64())
	g := &targetGroup{
		arn: arn, name: tg.Name, port: tg.Port, targetType: tg.TargetType,
		settings: tg.Settings.withDefaults(), targets: map[string]*target{},
		extra: map[string]string{},
	}
	for k, v := range fixedAttributes {
		g.extra[k] = v
	}
	s.mu.Lock()
	s.groups[arn] = g
	s.order = append(s.order, arn)
	s.mu.Unlock()
	s.wg.Add(1)
	go s.checkLoop(g)
	return arn
}

// SetInstanceAddress says where the health checks of instance target id go (targets of type
// instance have no address of their own in the API).
func (s *Server) SetInstanceAddress(id, ip string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.instances[id] = ip
}

// Console changes a target group's settings directly, as someone clicking in the AWS console
// would: no API call is counted. It returns false when arn is unknown.
func (s *Server) Console(arn string, change func(*Settings)) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	g, ok := s.groups[arn]
	if !ok {
		return false
	}
	change(&g.settings)
	return true
}

// Settings returns a target group's current settings.
func (s *Server) Settings(arn string) (Settings, bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	g, ok := s.groups[arn]
	if !ok {
		return Settings{}, false
	}
	return g.settings, true
}

// Calls is how many requests of action the double has answered (successfully or not).
func (s *Server) Calls(action string) int { return s.calls.Of(action) }

// TotalCalls is how many API requests the double has received, of any action.
func (s *Server) TotalCalls() int { return s.calls.Total() }

// ModifyCalls is how many ModifyTargetGroup and ModifyTargetGroupAttributes requests arrived.
func (s *Server) ModifyCalls() int {
	return s.calls.Of("ModifyTargetGroup", "ModifyTargetGroupAttributes")
}

// SigningRegions are the regions of the SigV4 credential scopes the double has seen, sorted.
func (s *Server) SigningRegions() []string {
	s.mu.Lock()
	defer s.mu.Unlock()
	var out []string
	for r := range s.regions {
		out = append(out, r)
	}
	sort.Strings(out)
	return out
}

// ServeHTTP answers one Query-protocol request.
func (s *Server) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	reqID := awsdouble.NewRequestID(w)
	if err := s.serve(w, r, reqID); err != nil {
		awsdouble.WriteError(w, Namespace, reqID, err)
	}
}

// serve answers r with its result, or returns the error to answer instead.
func (s *Server) serve(w http.ResponseWriter, r *http.Request, reqID string) error {
	if r.Method != http.MethodPost && r.Method != http.MethodGet {
		return awsdouble.Errorf(http.StatusMethodNotAllowed, "InvalidAction", "Query API requests are POST or GET")
	}
	if err := r.ParseForm(); err != nil {
		return validation("request body is not form-encoded: %v", err)
	}
	action := r.Form.Get("Action")
	s.calls.Add(action)
	region, err := awsdouble.Authenticate(r, "elasticloadbalancing", awsdouble.Errorf(http.StatusForbidden,
		"MissingAuthenticationToken", "Request is missing Authentication Token"))
	if err != nil {
		return err
	}
	s.mu.Lock()
	s.regions[region]++
	s.mu.Unlock()
	if v := r.Form.Get("Version"); v != apiVersion {
		return awsdouble.Errorf(http.StatusBadRequest, "InvalidAction", "Could not find operation %s for version %s", action, v)
	}
	handler, ok := s.handlers(region)[action]
	if !ok {
		return awsdouble.Errorf(http.StatusBadRequest, "InvalidAction", "Could not find operation %s for version %s", action, apiVersion)
	}
	if err := elsewhere(r.Form, region); err != nil {
		return err
	}
	s.mu.Lock()
	result, err := handler(r.Form)
	s.mu.Unlock()
	if err != nil {
		return err
	}
	return awsdouble.WriteXML(w, http.StatusOK, envelope{
		XMLName: xml.Name{Local: action + "Response"}, Xmlns: Namespace,
		Result: actionResult{action: action, body: result}, RequestID: reqID,
	})
}
