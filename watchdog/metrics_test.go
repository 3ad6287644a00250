package watchdog_test

import (
	"os"
	"testing"

	"github.com/zero502/zero502/internal/testrig/promtest"
)

// samples parses a Prometheus textfile into series → value (promtest.Samples).
func samples(t *testing.T, path string) map[string]float64 { return promtest.Samples(t, path) }

// The textfile is readable by a node_exporter running as another user, and parses.
func TestMetricsTextfileIsWorldReadable(t *testing.T) {
	f := processFixture(t)
	f.tick()
	st, err := os.Stat(metricsPath(f))
	if err != nil {
		t.Fatal(err)
	}
	if mode := st.Mode().Perm(); mode != 0o644 {
		t.Errorf("%s has mode %o, want 644 (node_exporter runs as another user)", metricsPath(f), mode)
	}
	if _, ok := samples(t, metricsPath(f))["zero502_watchdog_last_tick_timestamp_seconds"]; !ok {
		t.Errorf("no last tick timestamp in %s", metricsPath(f))
	}
}
