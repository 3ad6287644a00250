package invariants

import (
	"testing"

	"github.com/zero502/zero502/infra"
)

func TestI8BatchLeavesHealthyHost(t *testing.T) {
	for _, tc := range []struct {
		name         string
		batch, hosts int
		want         Status
	}{
		{"source numbers: one host at a time of three", 1, 3, Holds},
		{"exactly every host at once", 3, 3, Violated},
		{"one host fewer than the fleet", 2, 3, Holds},
		{"a single-host fleet", 1, 1, Violated},
		{"no hosts", 1, 0, Skipped},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c := withHosts(infra.Defaults(), tc.hosts)
			c.Rollout.Batch = tc.batch
			expect(t, c, "I8", tc.want)
		})
	}
	requireShippedHold(t, "I8")
}
