package invariants

import (
	"strings"
	"testing"
	"time"

	"github.com/zero502/zero502/infra/config"
)

func TestI9BalancerDrainOutlastsResponse(t *testing.T) {
	for _, tc := range []struct {
		name                  string
		kind, drain           string
		window, delay, header time.Duration
		want                  Status
	}{
		{"inhouse: 15s window against 3s", config.BalancerInHouse, config.DrainBalancer, 15 * time.Second, 0, 3 * time.Second, Holds},
		{"inhouse: window exactly the header timeout", config.BalancerInHouse, config.DrainBalancer, 3 * time.Second, 0, 3 * time.Second, Violated},
		{"inhouse: one millisecond past it", config.BalancerInHouse, config.DrainBalancer, 3*time.Second + time.Millisecond, 0, 3 * time.Second, Holds},
		{"inhouse: the deregistration delay does not count", config.BalancerInHouse, config.DrainBalancer, 2 * time.Second, time.Hour, 3 * time.Second, Violated},
		{"alb: 30s delay against 3s", config.BalancerALB, config.DrainBalancer, 0, 30 * time.Second, 3 * time.Second, Holds},
		{"alb: delay exactly the header timeout", config.BalancerALB, config.DrainBalancer, time.Hour, 3 * time.Second, 3 * time.Second, Violated},
		{"alb: one millisecond past it", config.BalancerALB, config.DrainBalancer, 0, 3*time.Second + time.Millisecond, 3 * time.Second, Holds},
		{"alb: delay 0 ends the drain at once", config.BalancerALB, config.DrainBalancer, 15 * time.Second, 0, 3 * time.Second, Violated},
		{"no balancer", config.BalancerNone, config.DrainBalancer, 0, 0, 3 * time.Second, Skipped},
		{"every service drains by handshake", config.BalancerInHouse, config.DrainHandshake, 0, 0, 3 * time.Second, Skipped},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c := config.Defaults()
			c.Services = []config.Service{{Name: "web", Port: 8000, Drain: tc.drain}}
			c.Balancer.Kind, c.Balancer.HeaderTimeout, c.Balancer.DeregistrationDelay = tc.kind, tc.header, tc.delay
			if tc.window > 0 {
				c.Drain.Window = tc.window
			}
			expect(t, c, "I9", tc.want)
		})
	}
	t.Run("no service at all", func(t *testing.T) {
		expect(t, config.Defaults(), "I9", Skipped)
	})
	t.Run("the sentence names the keys, the services, the numbers and the fix", func(t *testing.T) {
		c := config.Defaults()
		c.Services = []config.Service{{Name: "web", Port: 8000, Drain: config.DrainBalancer}, {Name: "worker"}}
		c.Drain.Window = 2 * time.Second
		v := expect(t, c, "I9", Violated)
		for _, want := range []string{"drain.window 2s must exceed balancer.header_timeout 3s", "stops web (drain: balancer)",
			"raise drain.window to at least 3.001s"} {
			if !strings.Contains(v.Sentence, want) {
				t.Errorf("inhouse sentence %q lacks %q", v.Sentence, want)
			}
		}
		c.Balancer.Kind, c.Balancer.DeregistrationDelay, c.Balancer.HeaderTimeout = config.BalancerALB, 2*time.Second, 2500*time.Millisecond
		v = expect(t, c, "I9", Violated)
		for _, want := range []string{"balancer.deregistration_delay 2s must exceed balancer.header_timeout 2.5s",
			"raise balancer.deregistration_delay to at least 3s"} {
			if !strings.Contains(v.Sentence, want) {
				t.Errorf("alb sentence %q lacks %q", v.Sentence, want)
			}
		}
		if v.Arithmetic != "2s ≤ 2.5s" {
			t.Errorf("arithmetic %q, want 2s ≤ 2.5s", v.Arithmetic)
		}
	})
	requireShippedHold(t, "I9")
}
