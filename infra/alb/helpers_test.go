package alb_test

import (
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	elbv2 "github.com/aws/aws-sdk-go-v2/service/elasticloadbalancingv2"

	"github.com/zero502/zero502/infra/alb/elbv2double"
	"github.com/zero502/zero502/infra/clock"
	"github.com/zero502/zero502/infra/config"
	"github.com/zero502/zero502/internal/testrig/albtest"
	"github.com/zero502/zero502/internal/testrig/poll"
)

// fixture is the real aws-sdk-go-v2 ELBv2 client talking over loopback to the ELBv2 double,
// with static credentials and no AWS configuration from the machine.
type fixture struct {
	rig    *albtest.Double
	double *elbv2double.Server
	api    *elbv2.Client
	arn    string
	cfg    config.Balancer // the source's numbers, kind alb, pointing at arn
	clock  *clock.Fake
}

// newFixture starts a double holding one target group created with settings (zero fields:
// AWS's defaults for a new target group, as someone clicking in the console would get).
func newFixture(t *testing.T, settings elbv2double.Settings) *fixture {
	t.Helper()
	return newFixtureOf(t, elbv2double.TargetGroup{Name: "mythex-api", Port: 8000, Settings: settings})
}

// newFixtureOf is newFixture with the whole target group given (an instance-type one, say).
func newFixtureOf(t *testing.T, tg elbv2double.TargetGroup) *fixture {
	t.Helper()
	clk := clock.NewFake(time.Date(2026, 11, 30, 15, 0, 0, 0, time.UTC))
	d := albtest.Start(t, clk, tg)
	return &fixture{rig: d, double: d.Server, api: d.API, arn: d.ARN, cfg: d.Balancer, clock: clk}
}

// step lets exactly one health-check round happen: it waits until the double's checker is
// waiting on the fake clock, advances it by the interval and waits for the round to finish.
func (f *fixture) step(t *testing.T) {
	t.Helper()
	s, _ := f.double.Settings(f.arn)
	n := f.double.Rounds(f.arn)
	poll.Until(t, 20*time.Second, "health checker waiting on the clock", func() bool { return f.clock.Waiters() > 0 })
	f.clock.Advance(s.Interval)
	poll.Until(t, 20*time.Second, "health-check round done", func() bool { return f.double.Rounds(f.arn) > n })
}

// register puts targets (ip:port) into the target group through the SDK.
func (f *fixture) register(t *testing.T, addrs ...string) { f.rig.Register(t, addrs...) }

// backend is a real HTTP server whose /health answers with a status the test sets.
type backend struct {
	srv    *httptest.Server
	status atomic.Int32
	checks atomic.Int32 // health checks received from the ELB health checker
}

func newBackend(t *testing.T) *backend {
	t.Helper()
	b := &backend{}
	b.status.Store(http.StatusOK)
	b.srv = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path != "/health" {
			http.NotFound(w, r)
			return
		}
		if strings.HasPrefix(r.UserAgent(), "ELB-HealthChecker/") {
			b.checks.Add(1)
		}
		w.WriteHeader(int(b.status.Load()))
	}))
	t.Cleanup(b.srv.Close)
	return b
}

func (b *backend) addr() string { return strings.TrimPrefix(b.srv.URL, "http://") }

// balancerCfg is the config section the tests change.
type balancerCfg = config.Balancer
