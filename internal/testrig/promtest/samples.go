// Package promtest reads Prometheus text-format output in tests, as a scraper would: a textfile
// for node_exporter's collector (the watchdog's, the deployer's) parsed into series and values.
package promtest

import (
	"os"
	"sort"
	"strings"
	"testing"

	dto "github.com/prometheus/client_model/go"
	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"
)

// Samples parses the textfile at path into series → value, a series written as
// name{label="value",…} with its labels sorted (the name alone without labels). A file the text
// format rejects fails the test.
func Samples(t testing.TB, path string) map[string]float64 {
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

// Require fails for each series of want whose value in the textfile at path is not want's.
func Require(t testing.TB, path string, want map[string]float64) {
	t.Helper()
	got := Samples(t, path)
	for s, v := range want {
		if g, ok := got[s]; !ok || g != v {
			data, _ := os.ReadFile(path)
			t.Errorf("%s = %v (present: %v), want %v\n%s", s, g, ok, v, data)
		}
	}
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
