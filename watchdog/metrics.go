package watchdog

import (
	"fmt"
	"os"
	"path/filepath"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/zero502/zero502/infra/spec"
	"github.com/zero502/zero502/infra/trust"
)

// MetricsFile is the Prometheus textfile (node_exporter's textfile collector) in a host's state
// dir, rewritten atomically after every tick that was not skipped. It is readable by every user
// (0644), so a node_exporter running as its own user reads it.
const MetricsFile = "zero502_watchdog.prom"

// writeMetrics puts the streaks in a registry of their own and replaces the textfile with it
// through client_golang's WriteToTextfile (a temp file, chmod 0644, rename).
func writeMetrics(stateDir string, at time.Time, s streaks) error {
	reg := prometheus.NewRegistry()
	heals := prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "zero502_watchdog_heals_total",
		Help: "Services the watchdog recreated from the published spec.",
	}, []string{"service"})
	failures := prometheus.NewGaugeVec(prometheus.GaugeOpts{
		Name: "zero502_watchdog_consecutive_failures",
		Help: "Consecutive failed checks of a service (heals at watchdog.heal_after).",
	}, []string{"service"})
	lastTick := prometheus.NewGauge(prometheus.GaugeOpts{
		Name: "zero502_watchdog_last_tick_timestamp_seconds",
		Help: "When the watchdog last checked this host (Unix time).",
	})
	reg.MustRegister(heals, failures, lastTick)
	for name, st := range s.Services {
		heals.WithLabelValues(name).Add(float64(st.Heals))
		failures.WithLabelValues(name).Set(float64(st.Failures))
	}
	lastTick.Set(float64(at.UnixMilli()) / 1000)

	if err := trust.MkdirAll(stateDir, spec.DirMode, os.Getuid()); err != nil {
		return fmt.Errorf("create state dir %s: %w", stateDir, err)
	}
	path := filepath.Join(stateDir, MetricsFile)
	if err := prometheus.WriteToTextfile(path, reg); err != nil {
		return fmt.Errorf("write metrics textfile %s: %w (check the state dir is writable)", path, err)
	}
	return nil
}
