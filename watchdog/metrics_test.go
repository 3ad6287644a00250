package watchdog_test

import (
	"os"
	"sort"
	"strings"
	"testing"

	dto "github.com/prometheus/client_model/go"
	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"
)

// samples parses a Prometheus textfile into series → value, a series written as
// name{label="value",…} with its labels sorted (name alone without labels). A file the text
// format rejects fails the test.
func samples(t *testing.T, path string) map[string]float64 {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	p := expfmt.NewTextParser(model.UTF8Validation)
	families, err := p.TextToMetricFamilies(f)
	if err != nil {
		t.Fatalf("%s is not in the Prometheus text format: %v", path, err)
	}
	out := map[string]float64{}
	for name, fam := range families {
		for _, m := range fam.GetMetric() {
			out[series(name, m.GetLabel())] = value(m)
		}
	}
	return out
}

func series(name string, labels []*dto.LabelPair) string {
	if len(labels) == 0 {
		return name
	}
	parts := make([]string, 0, len(labels))
	for _, l := range labels {
		parts = append(parts, l.GetName()+`="`+l.GetValue()+`"`)
	}
	sort.Strings(parts)
	return name + "{" + strings.Join(parts, ",") + "}"
}

func value(m *dto.Metric) float64 {
	switch {
	case m.GetCounter() != nil:
		return m.GetCounter().GetValue()
	case m.GetGauge() != nil:
		return m.GetGauge().GetValue()
	default:
		return m.GetUntyped().GetValue()
	}
}

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
