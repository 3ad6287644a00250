package invariants

import (
	"math"
	"strings"
	"testing"
	"time"

	"github.com/zero502/zero502/infra/config"
)

func TestI2DrainEndsBeforeStopGrace(t *testing.T) {
	for _, tc := range []struct {
		name                    string
		drain                   string // the one service's services[].drain; "" for no service
		window, shutdown, grace time.Duration
		want                    Status
	}{
		{"source numbers: 15s + 10s within 30s", "", 15 * time.Second, 10 * time.Second, 30 * time.Second, Holds},
		{"exactly at the stop grace", "", 15 * time.Second, 10 * time.Second, 25 * time.Second, Violated},
		{"one millisecond before the stop grace", "", 15 * time.Second, 10 * time.Second, 25*time.Second + time.Millisecond, Holds},
		{"docker's default 10s grace against a 15s drain", "", 15 * time.Second, 10 * time.Second, 10 * time.Second, Violated},
		{"handshake service: the window follows the signal", config.DrainHandshake, 15 * time.Second, 10 * time.Second, 25 * time.Second, Violated},
		{"balancer drain: only the shutdown follows the signal", config.DrainBalancer, 15 * time.Second, 10 * time.Second, 25 * time.Second, Holds},
		{"balancer drain: shutdown exactly at the stop grace", config.DrainBalancer, 15 * time.Second, 10 * time.Second, 10 * time.Second, Violated},
		{"balancer drain: one millisecond before the stop grace", config.DrainBalancer, 15 * time.Second, 10 * time.Second, 10*time.Second + time.Millisecond, Holds},
		{"a window and shutdown whose sum overflows", "", math.MaxInt64, 10 * time.Second, 30 * time.Second, Violated},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c := config.Defaults()
			if tc.drain != "" {
				c.Services = []config.Service{{Name: "web", Port: 8000, Drain: tc.drain}}
			}
			c.Drain.Window, c.Drain.Shutdown, c.Drain.StopGrace = tc.window, tc.shutdown, tc.grace
			expect(t, c, "I2", tc.want)
		})
	}
	t.Run("one handshake service among balancer ones needs the window too", func(t *testing.T) {
		c := config.Defaults()
		c.Services = []config.Service{{Name: "web", Port: 8000, Drain: config.DrainBalancer}, {Name: "worker", Drain: config.DrainHandshake}}
		c.Drain.StopGrace = 25 * time.Second
		expect(t, c, "I2", Violated)
	})
	t.Run("the balancer-mode sentence names the services, the numbers and the fix", func(t *testing.T) {
		c := config.Defaults()
		c.Services = []config.Service{{Name: "web", Port: 8000, Drain: config.DrainBalancer}}
		c.Drain.StopGrace = 10 * time.Second
		v := expect(t, c, "I2", Violated)
		for _, want := range []string{"drain.shutdown 10s must be below drain.stop_grace 10s", "(web)",
			"raise drain.stop_grace to at least 10.001s"} {
			if !strings.Contains(v.Sentence, want) {
				t.Errorf("sentence %q lacks %q", v.Sentence, want)
			}
		}
	})
	requireShippedHold(t, "I2")
}
