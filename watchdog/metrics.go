package watchdog

import (
	"fmt"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/zero502/zero502/infra/spec"
)

// MetricsFile is the Prometheus textfile (node_exporter's textfile collector) in a host's state
// dir, rewritten atomically after every tick that was not skipped.
const MetricsFile = "zero502_watchdog.prom"

// writeMetrics renders the streaks in the Prometheus text format and replaces the textfile.
func writeMetrics(stateDir string, at time.Time, s streaks) error {
	names := make([]string, 0, len(s.Services))
	for n := range s.Services {
		names = append(names, n)
	}
	sort.Strings(names)
	var b strings.Builder
	b.WriteString("# HELP zero502_watchdog_heals_total Services the watchdog recreated from the published spec.\n")
	b.WriteString("# TYPE zero502_watchdog_heals_total counter\n")
	for _, n := range names {
		fmt.Fprintf(&b, "zero502_watchdog_heals_total{service=%s} %d\n", quote(n), s.Services[n].Heals)
	}
	b.WriteString("# HELP zero502_watchdog_consecutive_failures Consecutive failed checks of a service (heals at watchdog.heal_after).\n")
	b.WriteString("# TYPE zero502_watchdog_consecutive_failures gauge\n")
	for _, n := range names {
		fmt.Fprintf(&b, "zero502_watchdog_consecutive_failures{service=%s} %d\n", quote(n), s.Services[n].Failures)
	}
	b.WriteString("# HELP zero502_watchdog_last_tick_timestamp_seconds When the watchdog last checked this host (Unix time).\n")
	b.WriteString("# TYPE zero502_watchdog_last_tick_timestamp_seconds gauge\n")
	fmt.Fprintf(&b, "zero502_watchdog_last_tick_timestamp_seconds %s\n",
		strconv.FormatFloat(float64(at.UnixMilli())/1000, 'f', 3, 64))
	return spec.WriteAtomic(filepath.Join(stateDir, MetricsFile), []byte(b.String()))
}

// quote escapes a label value as the text format requires.
func quote(v string) string {
	r := strings.NewReplacer(`\`, `\\`, "\n", `\n`, `"`, `\"`)
	return `"` + r.Replace(v) + `"`
}
