package edge

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
	"github.com/prometheus/client_golang/prometheus/promhttp"

	"github.com/zero502/zero502/infra/standing"
)

// metricsEndpoint is the optional HTTP listener (--metrics) that serves GET /metrics in the
// Prometheus text format: a component's Counts and whether it drains, on a registry of its own
// (no global state), plus the Go runtime and process collectors. It keeps serving through the
// drain, so a scrape sees the drain happen, and closes when Serve returns; after a hand-off to
// an upgraded process it closes at once (the new process answers on the same socket).
type metricsEndpoint struct {
	ln  net.Listener
	srv *http.Server
}

// openMetrics listens on addr (the --metrics flag) with listen; an empty addr is no endpoint
// (nil). extra collectors add what only one component has (the forwarder's upstreams).
func openMetrics(listen listenFunc, addr, role string, counts func() Counts, draining func() bool, extra ...prometheus.Collector) (*metricsEndpoint, error) {
	if addr == "" {
		return nil, nil
	}
	ln, err := listen("tcp", addr)
	if err != nil {
		return nil, fmt.Errorf("edge: metrics listener on %s (--metrics): %w", addr, err)
	}
	reg := prometheus.NewRegistry()
	reg.MustRegister(&countsCollector{role: role, counts: counts, draining: draining},
		collectors.NewGoCollector(), collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}))
	reg.MustRegister(extra...)
	mux := http.NewServeMux()
	mux.Handle("GET /metrics", promhttp.HandlerFor(reg, promhttp.HandlerOpts{}))
	return &metricsEndpoint{ln: ln, srv: &http.Server{Handler: mux, ReadHeaderTimeout: 10 * time.Second}}, nil
}

// listenFunc opens a listener, as net.Listen does.
type listenFunc = func(network, addr string) (net.Listener, error)

// addr is where the endpoint listens; nil without one.
func (m *metricsEndpoint) addr() net.Addr {
	if m == nil {
		return nil
	}
	return m.ln.Addr()
}

// serve answers scrapes until close.
func (m *metricsEndpoint) serve() {
	if m == nil {
		return
	}
	go func() {
		if err := m.srv.Serve(m.ln); err != nil && !errors.Is(err, http.ErrServerClosed) {
			_ = m.ln.Close()
		}
	}()
}

// close stops the endpoint, letting a scrape in progress finish for a second.
func (m *metricsEndpoint) close() {
	if m == nil {
		return
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Second)
	defer cancel()
	_ = m.srv.Shutdown(ctx)
}

// countsCollector reads Counts at scrape time; role ("forward" or "origin") is a label on
// every series, so edges and origins can share dashboards.
type countsCollector struct {
	role     string
	counts   func() Counts
	draining func() bool
}

var (
	edgeConnsDesc = prometheus.NewDesc("zero502_edge_connections_total",
		"Connections by what became of them: accepted (all), empty (closed without a byte: health checks), "+
			"unreachable (the origin or backend could not be reached), proxy_header (PROXY header parsed and stripped), "+
			"passed_through (no header, relayed untouched), malformed (bad header body), untrusted (header from outside --trusted), over_cap (closed at once: --max-conns were open), "+
			"local_error (closed: the connect to an upstream failed for lack of the edge's own descriptors, memory, buffers or local ports; the upstream stays in rotation).",
		[]string{"role", "outcome"}, nil)
	edgeDrainingDesc = prometheus.NewDesc("zero502_edge_draining",
		"1 once the drain started (health refuses, still forwarding), else 0.", []string{"role"}, nil)
)

func (c *countsCollector) Describe(ch chan<- *prometheus.Desc) {
	ch <- edgeConnsDesc
	ch <- edgeDrainingDesc
}

func (c *countsCollector) Collect(ch chan<- prometheus.Metric) {
	n := c.counts()
	for _, o := range []struct {
		outcome string
		v       uint64
	}{
		{"accepted", n.Accepted}, {"empty", n.Empty}, {"unreachable", n.Unreachable},
		{"proxy_header", n.Headers}, {"passed_through", n.PassedThrough},
		{"malformed", n.Malformed}, {"untrusted", n.Untrusted}, {"over_cap", n.OverCap}, {"local_error", n.LocalError},
	} {
		ch <- prometheus.MustNewConstMetric(edgeConnsDesc, prometheus.CounterValue, float64(o.v), c.role, o.outcome)
	}
	ch <- prometheus.MustNewConstMetric(edgeDrainingDesc, prometheus.GaugeValue, one(c.draining()), c.role)
}

// upstreamsCollector reads the forwarder's upstreams at scrape time: each one's state (1 for the
// state it is in, 0 for the others), whether it is in rotation, and its open connections; and
// the connects abandoned for another upstream after an ejection.
type upstreamsCollector struct{ ups *upstreams }

var (
	edgeUpstreamStateDesc = prometheus.NewDesc("zero502_edge_upstream_state",
		"1 for the state the upstream is in (healthy, draining, unhealthy, joining), 0 for the others.",
		[]string{"upstream", "state"}, nil)
	edgeUpstreamInRotationDesc = prometheus.NewDesc("zero502_edge_upstream_in_rotation",
		"1 while the upstream takes new connections, else 0.", []string{"upstream"}, nil)
	edgeUpstreamConnsDesc = prometheus.NewDesc("zero502_edge_upstream_connections",
		"Connections open to the upstream now.", []string{"upstream"}, nil)
	edgeReconnectedDesc = prometheus.NewDesc("zero502_edge_reconnected_after_eject_total",
		"Connects in progress to an upstream that left rotation for failing (checks or passive ejection), abandoned at once for another healthy upstream.",
		nil, nil)
)

func (c upstreamsCollector) Describe(ch chan<- *prometheus.Desc) {
	ch <- edgeUpstreamStateDesc
	ch <- edgeUpstreamInRotationDesc
	ch <- edgeUpstreamConnsDesc
	ch <- edgeReconnectedDesc
}

func (c upstreamsCollector) Collect(ch chan<- prometheus.Metric) {
	for _, u := range c.ups.all() {
		st := u.State()
		for _, s := range []standing.State{standing.Healthy, standing.Draining, standing.Unhealthy, standing.Joining} {
			ch <- prometheus.MustNewConstMetric(edgeUpstreamStateDesc, prometheus.GaugeValue, one(st == s), u.addr, string(s))
		}
		ch <- prometheus.MustNewConstMetric(edgeUpstreamInRotationDesc, prometheus.GaugeValue, one(st == standing.Healthy), u.addr)
		ch <- prometheus.MustNewConstMetric(edgeUpstreamConnsDesc, prometheus.GaugeValue, float64(u.open.Load()), u.addr)
	}
	ch <- prometheus.MustNewConstMetric(edgeReconnectedDesc, prometheus.CounterValue, float64(c.ups.reconnects.Load()))
}

func one(b bool) float64 {
	if b {
		return 1
	}
	return 0
}
