package mesh

import (
	"io"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/zero502/zero502/infra/clock"
)

// A server's metrics that missed two rounds get the panel's "stale" badge: in the snapshot, in
// `mesh verdicts`' text and in /metrics; fresh ones do not.
func TestMetricsThatMissedTwoRoundsAreMarkedStale(t *testing.T) {
	clk := clock.NewFake(time.Date(2026, 12, 1, 12, 0, 0, 0, time.UTC))
	n := &Node{Name: "a", Listen: "127.0.0.1:0", Peers: map[string]string{"b": "127.0.0.1:1"},
		ProbeEvery: time.Second, ProbeTimeout: 250 * time.Millisecond, Clock: clk, Thresholds: DefaultThresholds()}
	if err := n.Open(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { n.ln.Close() })
	if err := n.eval.Report(Report{Server: "b", At: clk.Now(), Healthy: true,
		Metrics: &Metrics{Load1: 0.5, Connections: 3, ServiceLatency: 0.002}}); err != nil {
		t.Fatal(err)
	}
	scrape := func() string {
		rec := httptest.NewRecorder()
		n.metricsHandler().ServeHTTP(rec, httptest.NewRequest("GET", "/metrics", nil))
		body, _ := io.ReadAll(rec.Body)
		return string(body)
	}
	check := func(stale bool) {
		t.Helper()
		v := verdictOf(n.Snapshot(), "b")
		if v.Metrics == nil || v.MetricsStale != stale {
			t.Fatalf("b's metrics %+v stale %v (age %.1fs), want stale %v", v.Metrics, v.MetricsStale, v.MetricsAge, stale)
		}
		if got := strings.Contains(metricsText(v), "[stale]"); got != stale {
			t.Errorf("text %q: badge %v, want %v", metricsText(v), got, stale)
		}
		want := `zero502_mesh_metrics_stale{observer="a",server="b"} 0`
		if stale {
			want = `zero502_mesh_metrics_stale{observer="a",server="b"} 1`
		}
		if body := scrape(); !strings.Contains(body, want) {
			t.Errorf("/metrics lacks %s:\n%s", want, body)
		}
	}
	check(false)
	clk.Advance(n.staleMetrics() - time.Second) // within two rounds
	check(false)
	clk.Advance(2 * time.Second) // past them
	check(true)
}
