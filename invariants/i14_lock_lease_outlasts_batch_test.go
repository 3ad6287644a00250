package invariants

import (
	"math"
	"strings"
	"testing"
	"time"

	"github.com/zero502/zero502/infra/config"
)

// lockedOverSSH is a config whose fleet lock is on host-a over ssh, with services services and
// round numbers: a service's worst case is 1s drain + 0s deregistration + 4s stop grace + 5s
// healthy deadline = 10s, twice (a rollback); bake 0s, 2 × 1s to trust a target, analysis 2s,
// canary 3s, renewal 5s.
func lockedOverSSH(services int) *config.Config {
	c := config.Defaults()
	c.Hosts = []config.Host{{Name: "host-a", Address: "10.0.0.1", SSH: "deploy@10.0.0.1"}, {Name: "host-b", Address: "10.0.0.2", SSH: "deploy@10.0.0.2"}}
	for i := range services {
		c.Services = append(c.Services, config.Service{Name: string(rune('a' + i)), Image: "app:{version}"})
	}
	c.Drain.Window, c.Balancer.DeregistrationDelay, c.Drain.StopGrace, c.Rollout.HealthyDeadline = time.Second, 0, 4*time.Second, 5*time.Second
	c.Rollout.Bake, c.Balancer.HealthyThreshold, c.Balancer.Interval = 0, 2, time.Second
	c.Rollout.Analysis.Window, c.Rollout.Canary.Duration = 2*time.Second, 3*time.Second
	return c
}

func TestI14LockLeaseOutlastsABatch(t *testing.T) {
	for _, tc := range []struct {
		name     string
		services int
		lease    time.Duration
		local    bool
		want     Status
	}{
		{"the default lease against one service's 32s", 1, 30 * time.Minute, false, Holds},
		{"exactly a batch's worst case: 2 × 10s + 2s + 2s + 3s + 5s", 1, 32 * time.Second, false, Warned},
		{"one millisecond past it", 1, 32*time.Second + time.Millisecond, false, Holds},
		{"a second service adds 20s", 2, 40 * time.Second, false, Warned},
		{"a local lock host has no lease", 1, time.Second, true, Skipped},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c := lockedOverSSH(tc.services)
			c.Rollout.LockLease = tc.lease
			if tc.local {
				c.Hosts[0].SSH = ""
			}
			expect(t, c, "I14", tc.want)
		})
	}
	t.Run("a worst case that overflows is longer than any lease", func(t *testing.T) {
		for name, set := range map[string]func(c *config.Config){
			"healthy_threshold × interval": func(c *config.Config) { c.Balancer.Interval = math.MaxInt64 / 2 },
			"2 × services × (…)":           func(c *config.Config) { c.Rollout.HealthyDeadline = math.MaxInt64 / 2 },
			"the sum":                      func(c *config.Config) { c.Rollout.Bake = math.MaxInt64 - time.Second },
		} {
			c := lockedOverSSH(1)
			set(c)
			if v := verdictOf(t, c, "I14"); v.Status != Warned {
				t.Errorf("%s overflowing: %s (%s), want warned", name, v.Status, v.Arithmetic)
			}
		}
	})
	t.Run("the sentence names the keys, the numbers and the fix", func(t *testing.T) {
		c := lockedOverSSH(1)
		c.Rollout.LockLease = 30 * time.Second
		v := expect(t, c, "I14", Warned)
		for _, want := range []string{"rollout.lock_lease 30s does not outlast a batch's worst case 32s", "lock host host-a",
			"raise rollout.lock_lease to more than 32s"} {
			if !strings.Contains(v.Sentence, want) {
				t.Errorf("sentence %q lacks %q", v.Sentence, want)
			}
		}
		if want := "30s ≤ 2 × 1 × (1s + 0s + 4s + 5s) + 0s + 2 × 1s + 2s + 3s + 5s = 32s"; v.Arithmetic != want {
			t.Errorf("arithmetic %q, want %q", v.Arithmetic, want)
		}
	})
	requireShippedHold(t, "I14")
}
