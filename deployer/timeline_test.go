package deployer

import (
	"testing"
	"time"

	"github.com/zero502/zero502/deployer/report"
	"github.com/zero502/zero502/infra/config"
)

// The deploy-timeline assertions the fleet tests share: what a host's report must say once it
// rolled, and what its handshake timeline must show.

// requireDeployed asserts that host h of a report went from → to, was deployed and runs to.
func requireDeployed(t *testing.T, h report.HostReport, from, to string) {
	t.Helper()
	if h.From != from || h.Outcome != report.OutcomeDeployed || h.Running != to {
		t.Errorf("%s: %s → %s %s, runs %q; want %s → %s deployed", h.Host, h.From, h.To, h.Outcome, h.Running, from, to)
	}
}

// requireHandshakeInOrder asserts that host h's timeline has every mark of the drain handshake,
// in order (drain started, left rotation, stopped, new started, healthy directly, back in
// rotation), and that the balancer took the host out within cfg's drain window.
func requireHandshakeInOrder(t *testing.T, h report.HostReport, cfg *config.Config) {
	t.Helper()
	tl := h.Timeline
	marks := []time.Time{tl.DrainStarted, tl.LeftRotation, tl.Stopped, tl.NewStarted, tl.HealthyDirect, tl.BackInRotation}
	for i := 1; i < len(marks); i++ {
		if marks[i].IsZero() || marks[i].Before(marks[i-1]) {
			t.Errorf("%s: timeline out of order or incomplete: %s", h.Host, tl)
			break
		}
	}
	if left := tl.LeftRotation.Sub(tl.DrainStarted); left >= cfg.Drain.Window {
		t.Errorf("%s left rotation +%s after SIGTERM, not within drain.window %s", h.Host, left, cfg.Drain.Window)
	}
}
