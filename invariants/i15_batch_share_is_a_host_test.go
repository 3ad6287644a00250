package invariants

import (
	"fmt"
	"strings"
	"testing"

	"github.com/zero502/zero502/infra/config"
)

// fleetOf is a config of n hosts whose rollout.batch is share % of them, as the loader resolves it.
func fleetOf(t *testing.T, n, share int) *config.Config {
	t.Helper()
	var y strings.Builder
	y.WriteString("hosts:\n")
	for i := range n {
		fmt.Fprintf(&y, "  - {name: host-%02d, address: 127.0.0.1, port_offset: %d}\n", i, i*10)
	}
	fmt.Fprintf(&y, "rollout:\n  batch: %d%%\n", share)
	c, err := config.LoadBytes([]byte(y.String()), "fleet.yaml")
	if err != nil {
		t.Fatalf("load %d hosts at batch %d%%: %v", n, share, err)
	}
	return c
}

func TestI15BatchShareComesToAHost(t *testing.T) {
	for _, tc := range []struct {
		name         string
		hosts, share int
		want         Status
		batch        int
	}{
		{"20% of 10 hosts is 2", 10, 20, Holds, 2},
		{"exactly one host: 10% of 10", 10, 10, Holds, 1},
		{"just under one host: 9% of 10 is taken as 1", 10, 9, Warned, 1},
		{"33% of 3 hosts rounds to 0", 3, 33, Warned, 1},
		{"34% of 3 hosts is 1", 3, 34, Holds, 1},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c := fleetOf(t, tc.hosts, tc.share)
			if c.Rollout.Batch != tc.batch || c.Rollout.BatchShare != tc.share {
				t.Fatalf("loaded batch %d (share %d%%), want %d host(s) from %d%%", c.Rollout.Batch, c.Rollout.BatchShare, tc.batch, tc.share)
			}
			expect(t, c, "I15", tc.want)
		})
	}
	t.Run("a number of hosts is not a share", func(t *testing.T) {
		c := fleetOf(t, 4, 50)
		c.Rollout.Batch, c.Rollout.BatchShare = 1, 0
		expect(t, c, "I15", Skipped)
	})
	t.Run("the sentence names the share, the hosts and the fix", func(t *testing.T) {
		v := expect(t, fleetOf(t, 10, 5), "I15", Warned)
		for _, want := range []string{"rollout.batch 5% of 10 hosts comes to less than one host and is taken as 1 (10% of the fleet",
			"a share of at least 10%"} {
			if !strings.Contains(v.Sentence, want) {
				t.Errorf("sentence %q lacks %q", v.Sentence, want)
			}
		}
		if want := "5% × 10 = 50% < 100%"; v.Arithmetic != want {
			t.Errorf("arithmetic %q, want %q", v.Arithmetic, want)
		}
	})
	requireShippedHold(t, "I15")
}
