package invariants

import (
	"math"
	"strings"
	"testing"
	"time"

	"github.com/zero502/zero502/infra/config"
)

// steppedConfig is a config with round numbers, behind the in-house LB: one service's whole
// step is 1s drain + 4s stop grace + 5s healthy deadline + 0s bake + 2 × 1s to trust a target =
// 12s, with no hook set.
func steppedConfig() *config.Config {
	c := config.Defaults()
	c.Hosts = []config.Host{{Name: "host-a", Address: "10.0.0.1"}, {Name: "host-b", Address: "10.0.0.2"}}
	c.Services = []config.Service{{Name: "web", Image: "app:{version}"}}
	c.Drain.Window, c.Balancer.DeregistrationDelay, c.Drain.StopGrace, c.Rollout.HealthyDeadline = time.Second, 0, 4*time.Second, 5*time.Second
	c.Rollout.Bake, c.Balancer.HealthyThreshold, c.Balancer.Interval = 0, 2, time.Second
	return c
}

func TestI16ProgressDeadlineOutlastsAStep(t *testing.T) {
	hook := func(timeout time.Duration) config.Hook {
		return config.Hook{Command: []string{"/bin/true"}, Timeout: timeout}
	}
	for _, tc := range []struct {
		name     string
		deadline time.Duration
		edit     func(c *config.Config)
		want     Status
	}{
		{"the default deadline against a 12s step", 10 * time.Minute, nil, Holds},
		{"exactly the step: 1s + 4s + 5s + 0s + 2 × 1s", 12 * time.Second, nil, Violated},
		{"one millisecond past it", 12*time.Second + time.Millisecond, nil, Holds},
		{"a bake of 3s is part of the step", 14 * time.Second, func(c *config.Config) { c.Rollout.Bake = 3 * time.Second }, Violated},
		{"an ALB drains for its deregistration delay, 2s", 13 * time.Second, func(c *config.Config) {
			c.Balancer.Kind, c.Balancer.DeregistrationDelay = config.BalancerALB, 2*time.Second
		}, Violated},
		{"past it", 13*time.Second + time.Millisecond, func(c *config.Config) {
			c.Balancer.Kind, c.Balancer.DeregistrationDelay = config.BalancerALB, 2*time.Second
		}, Holds},
		{"the in-house LB has no deregistration delay", 12*time.Second + time.Millisecond, func(c *config.Config) {
			c.Balancer.DeregistrationDelay = time.Hour
		}, Holds},
		{"the DNS set drains for edge.drain, 3s", 14 * time.Second, func(c *config.Config) {
			c.Balancer.Kind, c.Edge.Drain = config.BalancerDNS, 3*time.Second
		}, Violated},
		{"a pre_traffic hook of 30s is too", 41 * time.Second, func(c *config.Config) { c.Hooks.PreTraffic = hook(30 * time.Second) }, Violated},
		{"a post_traffic hook of 30s is too", 41 * time.Second, func(c *config.Config) { c.Hooks.PostTraffic = hook(30 * time.Second) }, Violated},
		{"both hooks, past them", 72*time.Second + time.Millisecond, func(c *config.Config) {
			c.Hooks.PreTraffic, c.Hooks.PostTraffic = hook(30*time.Second), hook(30*time.Second)
		}, Holds},
		{"a timeout without a command is no hook", 13 * time.Second, func(c *config.Config) { c.Hooks.PreTraffic.Timeout = time.Hour }, Holds},
		{"the deploy-wide hooks run on the deployer's machine, not in a step", 13 * time.Second, func(c *config.Config) {
			c.Hooks.PreDeploy, c.Hooks.PostDeploy = hook(time.Hour), hook(time.Hour)
		}, Holds},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c := steppedConfig()
			if tc.edit != nil {
				tc.edit(c)
			}
			c.Rollout.ProgressDeadline = tc.deadline
			expect(t, c, "I16", tc.want)
		})
	}
	t.Run("a step that overflows is longer than any deadline", func(t *testing.T) {
		for name, set := range map[string]func(c *config.Config){
			"healthy_threshold × interval": func(c *config.Config) { c.Balancer.Interval = math.MaxInt64 / 2 },
			"the sum":                      func(c *config.Config) { c.Rollout.Bake = math.MaxInt64 - time.Second },
		} {
			c := steppedConfig()
			c.Rollout.ProgressDeadline = math.MaxInt64 - 1
			set(c)
			if v := verdictOf(t, c, "I16"); v.Status != Violated {
				t.Errorf("%s overflowing: %s (%s), want violated", name, v.Status, v.Arithmetic)
			}
		}
	})
	t.Run("the sentence names the keys, the numbers and the fix", func(t *testing.T) {
		c := steppedConfig()
		c.Rollout.ProgressDeadline = 10 * time.Second
		v := expect(t, c, "I16", Violated)
		for _, want := range []string{"rollout.progress_deadline 10s must outlast a service's whole step 12s",
			"raise rollout.progress_deadline to more than 12s"} {
			if !strings.Contains(v.Sentence, want) {
				t.Errorf("sentence %q lacks %q", v.Sentence, want)
			}
		}
		if want := "10s ≤ 1s + 4s + 5s + 0s + 2 × 1s + 0s + 0s = 12s"; v.Arithmetic != want {
			t.Errorf("arithmetic %q, want %q", v.Arithmetic, want)
		}
	})
	requireShippedHold(t, "I16")
}
