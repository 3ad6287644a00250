package invariants

import (
	"testing"
	"time"

	"github.com/zero502/zero502/infra"
)

func TestI2DrainEndsBeforeStopGrace(t *testing.T) {
	for _, tc := range []struct {
		name                   string
		drain, shutdown, grace time.Duration
		want                   Status
	}{
		{"source numbers: 15s + 10s within 30s", 15 * time.Second, 10 * time.Second, 30 * time.Second, Holds},
		{"exactly at the stop grace", 15 * time.Second, 10 * time.Second, 25 * time.Second, Violated},
		{"one millisecond before the stop grace", 15 * time.Second, 10 * time.Second, 25*time.Second + time.Millisecond, Holds},
		{"docker's default 10s grace against a 15s drain", 15 * time.Second, 10 * time.Second, 10 * time.Second, Violated},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c := infra.Defaults()
			c.Drain.Window, c.Drain.Shutdown, c.Drain.StopGrace = tc.drain, tc.shutdown, tc.grace
			expect(t, c, "I2", tc.want)
		})
	}
	requireShippedHold(t, "I2")
}
