package mesh

import (
	"net/http"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
	"github.com/prometheus/client_golang/prometheus/promhttp"
)

// metricsHandler serves GET /metrics: the node's view (what GET /mesh/verdicts says) in the
// Prometheus text format, read at scrape time, on a registry of the node's own (no global
// state), plus the Go runtime and process collectors.
func (n *Node) metricsHandler() http.Handler {
	reg := prometheus.NewRegistry()
	reg.MustRegister(viewCollector{n},
		collectors.NewGoCollector(), collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}))
	return promhttp.HandlerFor(reg, promhttp.HandlerOpts{})
}

// viewCollector exports a node's Snapshot.
type viewCollector struct{ n *Node }

var (
	meshStateDesc = prometheus.NewDesc("zero502_mesh_server_state",
		"1 for the state this node's verdict gives the server (up, down, unknown), 0 for the others.",
		[]string{"server", "state"}, nil)
	meshRotationDesc = prometheus.NewDesc("zero502_mesh_server_in_rotation",
		"1 when the verdict keeps the server in rotation.", []string{"server"}, nil)
	meshFailingDesc = prometheus.NewDesc("zero502_mesh_server_failing_witnesses",
		"Reliable witnesses whose streak says they cannot reach the server.", []string{"server"}, nil)
	meshFallbackDesc = prometheus.NewDesc("zero502_mesh_route_fallback",
		"1 when every server of the route was out of rotation and the route keeps the best of them.", nil, nil)
	meshReachableDesc = prometheus.NewDesc("zero502_mesh_self_reachable",
		"1 while this node answers its peers' probes (0 during a reachability drill).", nil, nil)

	// The metrics each server's self-report carries, with their age: the write-up's panel,
	// which shows old ones with a "stale" badge.
	meshLoadDesc = prometheus.NewDesc("zero502_mesh_load1",
		"One-minute load average from the server's last report.", []string{"observer", "server"}, nil)
	meshConnsDesc = prometheus.NewDesc("zero502_mesh_connections",
		"Established connections to the server's service port, from its last report.", []string{"observer", "server"}, nil)
	meshLatencyDesc = prometheus.NewDesc("zero502_mesh_service_latency_seconds",
		"The server's self-check of its service, from its last report.", []string{"observer", "server"}, nil)
	meshAgeDesc = prometheus.NewDesc("zero502_mesh_metrics_age_seconds",
		"Age of the server's last report's metrics.", []string{"observer", "server"}, nil)
	meshStaleDesc = prometheus.NewDesc("zero502_mesh_metrics_stale",
		"1 when the metrics missed two rounds (the panel's stale badge).", []string{"observer", "server"}, nil)
	meshInRotationDesc = prometheus.NewDesc("zero502_mesh_in_rotation",
		"1 when the server is in rotation, as this observer sees it.", []string{"observer", "server"}, nil)
)

func (c viewCollector) Describe(ch chan<- *prometheus.Desc) {
	for _, d := range []*prometheus.Desc{meshStateDesc, meshRotationDesc, meshFailingDesc, meshFallbackDesc, meshReachableDesc,
		meshLoadDesc, meshConnsDesc, meshLatencyDesc, meshAgeDesc, meshStaleDesc, meshInRotationDesc} {
		ch <- d
	}
}

func (c viewCollector) Collect(ch chan<- prometheus.Metric) {
	s := c.n.Snapshot()
	for _, v := range s.Verdicts {
		for _, st := range []State{Up, Down, Unknown} {
			ch <- prometheus.MustNewConstMetric(meshStateDesc, prometheus.GaugeValue, one(v.State == st), v.Server, string(st))
		}
		ch <- prometheus.MustNewConstMetric(meshRotationDesc, prometheus.GaugeValue, one(v.InRotation), v.Server)
		ch <- prometheus.MustNewConstMetric(meshFailingDesc, prometheus.GaugeValue, float64(len(v.Failing)), v.Server)
		ch <- prometheus.MustNewConstMetric(meshInRotationDesc, prometheus.GaugeValue, one(v.InRotation), c.n.Name, v.Server)
		if m := v.Metrics; m != nil {
			for _, g := range []struct {
				desc  *prometheus.Desc
				value float64
			}{
				{meshLoadDesc, m.Load1}, {meshConnsDesc, float64(m.Connections)}, {meshLatencyDesc, m.ServiceLatency},
				{meshAgeDesc, v.MetricsAge}, {meshStaleDesc, one(v.MetricsStale)},
			} {
				ch <- prometheus.MustNewConstMetric(g.desc, prometheus.GaugeValue, g.value, c.n.Name, v.Server)
			}
		}
	}
	ch <- prometheus.MustNewConstMetric(meshFallbackDesc, prometheus.GaugeValue, one(s.Route.Fallback))
	ch <- prometheus.MustNewConstMetric(meshReachableDesc, prometheus.GaugeValue, one(c.n.reachable.Load()))
}

func one(b bool) float64 {
	if b {
		return 1
	}
	return 0
}
