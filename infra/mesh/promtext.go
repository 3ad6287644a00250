package mesh

import (
	"fmt"
	"io"
)

// WriteMetrics writes the node's view in the Prometheus text format: per server its state, its
// report's metrics and their age, and the stale badge.
func (n *Node) WriteMetrics(w io.Writer) {
	s := n.Snapshot()
	type gauge struct {
		name, help string
		value      func(Verdict) (float64, bool)
	}
	m := func(f func(*Metrics) float64) func(Verdict) (float64, bool) {
		return func(v Verdict) (float64, bool) {
			if v.Metrics == nil {
				return 0, false
			}
			return f(v.Metrics), true
		}
	}
	gauges := []gauge{
		{"zero502_mesh_in_rotation", "1 when the server is in rotation.", func(v Verdict) (float64, bool) { return b2f(v.InRotation), true }},
		{"zero502_mesh_up", "1 when the verdict is up.", func(v Verdict) (float64, bool) { return b2f(v.State == Up), true }},
		{"zero502_mesh_failing_witnesses", "Reliable witnesses failing to reach the server.", func(v Verdict) (float64, bool) { return float64(len(v.Failing)), true }},
		{"zero502_mesh_load1", "One-minute load average from the server's last report.", m(func(x *Metrics) float64 { return x.Load1 })},
		{"zero502_mesh_connections", "Established connections to the server's service port, from its last report.", m(func(x *Metrics) float64 { return float64(x.Connections) })},
		{"zero502_mesh_service_latency_seconds", "The server's self-check of its service, from its last report.", m(func(x *Metrics) float64 { return x.ServiceLatency })},
		{"zero502_mesh_metrics_age_seconds", "Age of the server's last report's metrics.", func(v Verdict) (float64, bool) { return v.MetricsAge, v.Metrics != nil }},
		{"zero502_mesh_metrics_stale", "1 when the metrics missed two rounds (the panel's stale badge).", func(v Verdict) (float64, bool) { return b2f(v.MetricsStale), v.Metrics != nil }},
	}
	for _, g := range gauges {
		fmt.Fprintf(w, "# HELP %s %s\n# TYPE %s gauge\n", g.name, g.help, g.name)
		for _, v := range s.Verdicts {
			if x, ok := g.value(v); ok {
				fmt.Fprintf(w, "%s{observer=%q,server=%q} %g\n", g.name, n.Name, v.Server, x)
			}
		}
	}
}

func b2f(b bool) float64 {
	if b {
		return 1
	}
	return 0
}
