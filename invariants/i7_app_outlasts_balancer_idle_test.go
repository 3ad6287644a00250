package invariants

import (
	"testing"
	"time"

	"github.com/zero502/zero502/infra/config"
)

func TestI7AppOutlastsBalancerIdle(t *testing.T) {
	for _, tc := range []struct {
		name          string
		app, balancer time.Duration
		want          Status
	}{
		{"source numbers: app 75s, ALB 60s", 75 * time.Second, 60 * time.Second, Holds},
		{"exactly the balancer's idle timeout", 60 * time.Second, 60 * time.Second, Violated},
		{"one millisecond longer", 60*time.Second + time.Millisecond, 60 * time.Second, Holds},
		{"Node's 5s keep-alive behind an ALB's 60s", 5 * time.Second, 60 * time.Second, Violated},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c := config.Defaults()
			c.App.KeepAliveIdleTimeout, c.Balancer.IdleTimeout = tc.app, tc.balancer
			expect(t, c, "I7", tc.want)
		})
	}
	requireShippedHold(t, "I7")
}
