package edgepick

import (
	"fmt"
	"io"
	"net/http"
)

// WriteMetrics writes the latest round in the Prometheus text format.
func (s *Surveyor) WriteMetrics(w io.Writer) {
	r, rounds := s.Last()
	fmt.Fprintf(w, "# HELP zero502_edge_survey_rounds_total Survey rounds run.\n# TYPE zero502_edge_survey_rounds_total counter\n")
	fmt.Fprintf(w, "zero502_edge_survey_rounds_total{name=%q} %d\n", s.Name, rounds)
	if rounds == 0 {
		return
	}
	fmt.Fprintf(w, "# HELP zero502_edge_survey_timestamp_seconds When the latest round ran.\n# TYPE zero502_edge_survey_timestamp_seconds gauge\n")
	fmt.Fprintf(w, "zero502_edge_survey_timestamp_seconds{name=%q} %d\n", s.Name, r.At.Unix())
	gauges := []struct {
		name, help string
		value      func(SurveyEdge) float64
	}{
		{"zero502_edge_connect_seconds", "TCP connect time to the edge (the round trip to the edge itself).", func(e SurveyEdge) float64 { return e.Connect }},
		{"zero502_edge_handshake_seconds", "Full TLS handshake time through the edge to the origin.", func(e SurveyEdge) float64 { return e.Handshake }},
		{"zero502_edge_healthy", "1 when the full TLS handshake finished.", func(e SurveyEdge) float64 { return b2f(e.State == EdgeHealthy) }},
		{"zero502_edge_backend_dead", "1 when TCP connects but the handshake fails: forwarder up, backend dead.", func(e SurveyEdge) float64 { return b2f(e.State == EdgeBackendDead) }},
	}
	for _, g := range gauges {
		fmt.Fprintf(w, "# HELP %s %s\n# TYPE %s gauge\n", g.name, g.help, g.name)
		for _, e := range r.Edges {
			fmt.Fprintf(w, "%s{name=%q,edge=%q} %g\n", g.name, s.Name, e.Addr.String(), g.value(e))
		}
	}
}

// MetricsHandler serves WriteMetrics on GET /metrics.
func (s *Surveyor) MetricsHandler() http.Handler {
	mux := http.NewServeMux()
	mux.HandleFunc("GET /metrics", func(w http.ResponseWriter, _ *http.Request) {
		w.Header().Set("Content-Type", "text/plain; version=0.0.4")
		s.WriteMetrics(w)
	})
	return mux
}

func b2f(b bool) float64 {
	if b {
		return 1
	}
	return 0
}
