package balancer_test

import (
	"reflect"
	"testing"
	"time"

	"github.com/zero502/zero502/deployer/balancer"
	"github.com/zero502/zero502/infra/adminapi"
	"github.com/zero502/zero502/infra/alb"
	"github.com/zero502/zero502/infra/config"
)

func TestDriftNamesEachDriftedSettingTheBalancerHas(t *testing.T) {
	t.Parallel()
	cfg := config.Defaults().Balancer
	inHouse := balancer.Settings{Listen: "127.0.0.1:9999", BalancerNumbers: cfg.BalancerNumbers, Reported: adminapi.InHouseNumbers()}
	inHouse.HealthPath, inHouse.Interval, inHouse.UnhealthyThreshold = "/healthz", 10*time.Second, 3
	inHouse.DeregistrationDelay, inHouse.SlowStart = 0, 0 // the LB has none: not drift
	targetGroup := balancer.Settings{BalancerNumbers: config.BalancerNumbers{HealthPath: cfg.HealthPath, Interval: cfg.Interval,
		Timeout: cfg.Timeout, UnhealthyThreshold: cfg.UnhealthyThreshold, HealthyThreshold: 5,
		DeregistrationDelay: 300 * time.Second, SlowStart: 0}, // no idle, connect, header timeouts: not drift
		Reported: alb.Numbers(), Matcher: "200-499", HealthCheckPort: "8000", HealthCheckProtocol: "HTTP"}
	for _, tc := range []struct {
		name string
		live balancer.Settings
		want []config.Drift
	}{
		{"in-house LB started with other flags", inHouse, []config.Drift{
			{Field: "balancer.listen", Config: "127.0.0.1:8080", Live: "127.0.0.1:9999"},
			{Field: "balancer.health_path", Config: "/health", Live: "/healthz"},
			{Field: "balancer.interval", Config: "5s", Live: "10s"},
			{Field: "balancer.unhealthy_threshold", Config: "2", Live: "3"},
		}},
		{"ALB changed in the console", targetGroup, []config.Drift{
			{Field: "balancer.healthy_threshold", Config: "2", Live: "5"},
			{Field: "balancer.deregistration_delay", Config: "30s", Live: "5m0s"},
			{Field: "matcher (HttpCode, fixed)", Config: "200", Live: "200-499"},
			{Field: alb.HealthCheckPortKey, Config: "traffic-port", Live: "8000"},
		}},
		{"equal durations written differently", balancer.Settings{BalancerNumbers: config.BalancerNumbers{Interval: 5000 * time.Millisecond},
			Reported: []string{"interval"}}, nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := tc.live.Drift(cfg); !reflect.DeepEqual(got, tc.want) {
				t.Errorf("drift\n got %v\nwant %v", got, tc.want)
			}
		})
	}
}
