package edgepick

import (
	"net/http"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/promhttp"
)

// The survey's metrics: the latest round, per edge, through client_golang as every other
// /metrics of zero502.
var (
	surveyRoundsDesc = prometheus.NewDesc("zero502_edge_survey_rounds_total", "Survey rounds run.", []string{"name"}, nil)
	surveyAtDesc     = prometheus.NewDesc("zero502_edge_survey_timestamp_seconds", "When the latest round ran.", []string{"name"}, nil)
	edgeGauges       = []struct {
		desc  *prometheus.Desc
		value func(surveyEdge) float64
	}{
		{prometheus.NewDesc("zero502_edge_connect_seconds", "TCP connect time to the edge (the round trip to the edge itself).", []string{"name", "edge"}, nil),
			func(e surveyEdge) float64 { return e.Connect }},
		{prometheus.NewDesc("zero502_edge_handshake_seconds", "Full TLS handshake time through the edge to the origin.", []string{"name", "edge"}, nil),
			func(e surveyEdge) float64 { return e.Handshake }},
		{prometheus.NewDesc("zero502_edge_healthy", "1 when the full TLS handshake finished.", []string{"name", "edge"}, nil),
			func(e surveyEdge) float64 { return one(e.State == EdgeHealthy) }},
		{prometheus.NewDesc("zero502_edge_backend_dead", "1 when TCP connects but the handshake fails: forwarder up, backend dead.", []string{"name", "edge"}, nil),
			func(e surveyEdge) float64 { return one(e.State == EdgeBackendDead) }},
	}
)

// surveyCollector reads the Surveyor's latest round at each scrape.
type surveyCollector struct{ s *Surveyor }

func (c surveyCollector) Describe(ch chan<- *prometheus.Desc) {
	ch <- surveyRoundsDesc
	ch <- surveyAtDesc
	for _, g := range edgeGauges {
		ch <- g.desc
	}
}

func (c surveyCollector) Collect(ch chan<- prometheus.Metric) {
	r, rounds := c.s.Last()
	ch <- prometheus.MustNewConstMetric(surveyRoundsDesc, prometheus.CounterValue, float64(rounds), c.s.Name)
	if rounds == 0 {
		return
	}
	ch <- prometheus.MustNewConstMetric(surveyAtDesc, prometheus.GaugeValue, float64(r.At.Unix()), c.s.Name)
	for _, g := range edgeGauges {
		for _, e := range r.Edges {
			ch <- prometheus.MustNewConstMetric(g.desc, prometheus.GaugeValue, g.value(e), c.s.Name, e.Addr.String())
		}
	}
}

// MetricsHandler serves the latest round on GET /metrics.
func (s *Surveyor) MetricsHandler() http.Handler {
	reg := prometheus.NewRegistry()
	reg.MustRegister(surveyCollector{s})
	mux := http.NewServeMux()
	mux.Handle("GET /metrics", promhttp.HandlerFor(reg, promhttp.HandlerOpts{}))
	return mux
}

func one(b bool) float64 {
	if b {
		return 1
	}
	return 0
}
