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
)

// metricsEndpoint is the optional HTTP listener (--metrics) that serves GET /metrics in the
// Prometheus text format: a component's Counts and whether it drains, on a registry of its own
// (no global state), plus the Go runtime and process collectors. It keeps serving through the
// drain, so a scrape sees the drain happen, and closes when Serve returns.
type metricsEndpoint struct {
	ln  net.Listener
	srv *http.Server
}

// openMetrics listens on addr (the --metrics flag) with listen; an empty addr is no endpoint (nil).
func openMetrics(listen listenFunc, addr, role string, counts func() Counts, draining func() bool) (*metricsEndpoint, error) {
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
			"passed_through (no header, relayed untouched), malformed (bad header body), untrusted (header from outside --trusted).",
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
		{"malformed", n.Malformed}, {"untrusted", n.Untrusted},
	} {
		ch <- prometheus.MustNewConstMetric(edgeConnsDesc, prometheus.CounterValue, float64(o.v), c.role, o.outcome)
	}
	d := 0.0
	if c.draining() {
		d = 1
	}
	ch <- prometheus.MustNewConstMetric(edgeDrainingDesc, prometheus.GaugeValue, d, c.role)
}
