package lb

import (
	"strconv"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
)

// metrics are the LB's Prometheus metrics, on its own registry (no global state). Request
// counters and the response-head latency histograms are read at scrape time from the
// backends' own atomics (the ones the admin API reports), so the hot path pays for no label
// lookups; the connect histograms are resolved per backend once.
type metrics struct {
	reg         *prometheus.Registry
	transitions *prometheus.CounterVec
	ownAnswers  *prometheus.CounterVec
	refused     *prometheus.CounterVec
	admins      *prometheus.CounterVec
	connect     *prometheus.HistogramVec
	// tlsHandshakeFailures counts TLS handshakes that failed or timed out (tls.go).
	tlsHandshakeFailures prometheus.Counter
}

func newMetrics(s *Server) *metrics {
	m := &metrics{reg: prometheus.NewRegistry()}
	m.transitions = prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "zero502_lb_health_transitions_total",
		Help: "Backend state changes, by backend, from and to state.",
	}, []string{"backend", "from", "to"})
	m.ownAnswers = prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "zero502_lb_own_responses_total",
		Help: "Responses the LB made itself (502 unreachable, 503 no healthy backend, 504 header timeout).",
	}, []string{"code"})
	m.refused = prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "zero502_lb_refused_requests_total",
		Help: "Client requests refused: by the parser (400, 431, 501, 505), a stalled head or body (408), a client IP's slow-body cap (429).",
	}, []string{"code"})
	m.admins = prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "zero502_lb_admin_changes_total",
		Help: "Changes of the backend set made through the admin API, by action (add, undrain, drain, remove, weight), and of the maintenance switch (maintenance_on, maintenance_off).",
	}, []string{"action"})
	for _, a := range []string{actionAdd, actionUndrain, actionDrain, actionRemove, actionWeight, actionMaintenanceOn, actionMaintenanceOff} {
		m.admins.WithLabelValues(a)
	}
	m.connect = prometheus.NewHistogramVec(prometheus.HistogramOpts{
		Name:    "zero502_lb_upstream_connect_seconds",
		Help:    "Time to open a connection to a backend.",
		Buckets: []float64{.0001, .00025, .0005, .001, .0025, .005, .01, .025, .05, .1, .25, .5, 1},
	}, []string{"backend"})
	for _, b := range s.members.all() {
		m.attach(b)
	}
	m.tlsHandshakeFailures = prometheus.NewCounter(prometheus.CounterOpts{
		Name: "zero502_lb_tls_handshake_failures_total",
		Help: "TLS handshakes on balancer.tls.listen that failed or did not finish within balancer.tls.handshake_timeout.",
	})
	m.reg.MustRegister(m.transitions, m.ownAnswers, m.refused, m.admins, m.connect, m.tlsHandshakeFailures, &counters{s: s},
		collectors.NewGoCollector(), collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}))
	return m
}

// attach gives b its connect histogram and transition series.
func (m *metrics) attach(b *Backend) {
	b.connectSeconds = m.connect.WithLabelValues(b.Address)
	m.transitions.WithLabelValues(b.Address, string(Healthy), string(Unhealthy))
}

// detach drops the series of a removed backend (its histogram keeps working for the requests
// still in flight, unexported).
func (m *metrics) detach(b *Backend) {
	labels := prometheus.Labels{"backend": b.Address}
	m.connect.DeletePartialMatch(labels)
	m.transitions.DeletePartialMatch(labels)
}

// admin counts one change made through the admin API.
func (m *metrics) admin(action string) { m.admins.WithLabelValues(action).Inc() }

func (m *metrics) transition(b *Backend, t Transition) {
	m.transitions.WithLabelValues(b.Address, string(t.From), string(t.To)).Inc()
}

// counters exports the atomics the forwarding path keeps.
type counters struct{ s *Server }

var (
	requestsDesc = prometheus.NewDesc("zero502_lb_requests_total",
		"Answers of a backend by status class (1xx: upgrades), and attempts at it that got no response (errors).",
		[]string{"backend", "class"}, nil)
	inFlightDesc = prometheus.NewDesc("zero502_lb_in_flight_requests",
		"Requests in progress at a backend, and upgraded (WebSocket) connections open to it.", []string{"backend"}, nil)
	inRotationDesc = prometheus.NewDesc("zero502_lb_backend_in_rotation",
		"1 when the backend is healthy and in rotation.", []string{"backend"}, nil)
	failOpenDesc = prometheus.NewDesc("zero502_lb_failing_open",
		"1 while no backend is healthy and requests go to the ones that left rotation by failed checks.", nil, nil)
	weightDesc = prometheus.NewDesc("zero502_lb_backend_weight",
		"The backend's weight (1 to 1000, default 100): its share of new requests is its weight over the sum of the weights in rotation.",
		[]string{"backend"}, nil)
	idleDesc = prometheus.NewDesc("zero502_lb_upstream_idle_connections",
		"Idle keep-alive connections pooled to the backend.", []string{"backend"}, nil)
	retriesDesc = prometheus.NewDesc("zero502_lb_retries_total",
		"Requests without a body sent again to another backend after one was unreachable.", nil, nil)
	resentDesc = prometheus.NewDesc("zero502_lb_resent_after_eject_total",
		"GET and HEAD requests without a body, no response byte yet, given up on a backend that left rotation for failing (checks or passive ejection) and sent at once to another healthy one.",
		nil, nil)
	overBudgetDesc = prometheus.NewDesc("zero502_lb_resends_over_budget_total",
		"Resends after an ejection the resend budget refused (over 10s: 20% of the requests sent plus 10 a second): they waited on their backend.",
		nil, nil)
	localShortageDesc = prometheus.NewDesc("zero502_lb_local_connect_failures_total",
		"Connects to a backend that failed for lack of the LB's own descriptors, memory or local ports: answered 503, the backend not blamed.",
		nil, nil)
	ejectionsDesc = prometheus.NewDesc("zero502_lb_passive_ejections_total",
		"Backends taken out of rotation at once because a connection to them was refused or broke.", nil, nil)
	clientsDesc = prometheus.NewDesc("zero502_lb_client_connections",
		"Open client connections.", nil, nil)
	maxConnsDesc = prometheus.NewDesc("zero502_lb_max_client_connections",
		"max_conns: client connections beyond it are accepted and closed at once.", nil, nil)
	connsRefusedDesc = prometheus.NewDesc("zero502_lb_client_connections_refused_total",
		"Client connections closed at accept because max_conns were open.", nil, nil)
	slowBodiesDesc = prometheus.NewDesc("zero502_lb_slow_request_bodies",
		"Request bodies still arriving a second after their request began, all client IPs.", nil, nil)
	proxyRefusedDesc = prometheus.NewDesc("zero502_lb_proxy_headers_refused_total",
		"Client connections closed because a peer outside accept_proxy_from sent a PROXY header.", nil, nil)
	upgradedDesc = prometheus.NewDesc("zero502_lb_upgraded_connections",
		"Upgraded connections (101 Switching Protocols: WebSockets) open now.", nil, nil)
	upgradesDesc = prometheus.NewDesc("zero502_lb_upgrades_total",
		"Connections upgraded (101 Switching Protocols relayed) since the start.", nil, nil)
	headerDesc = prometheus.NewDesc("zero502_lb_upstream_header_seconds",
		"Time from the request sent to the backend's response head.", []string{"backend"}, nil)
	backendErrorsDesc = prometheus.NewDesc("zero502_lb_backend_errors_total",
		"What counts against a backend: its 5xx answers (kind 5xx; a 503 to the health path excluded) and its failed attempts "+
			"(connect: refused or not connected in time; reset: nothing came back; timeout: no response head in time; bad_response).",
		[]string{"backend", "kind"}, nil)
	backendOwnDesc = prometheus.NewDesc("zero502_lb_backend_own_responses_total",
		"The LB's own answers (502, 503, 504) caused by a failed attempt at the backend.", []string{"backend", "code"}, nil)
	healthUnavailableDesc = prometheus.NewDesc("zero502_lb_backend_health_unavailable_total",
		"503 answers of a backend to requests for the health path: the drain at work, not errors.", []string{"backend"}, nil)
	maintenanceDesc = prometheus.NewDesc("zero502_lb_maintenance",
		"1 while maintenance is on: every request but the LB's own health gets 503 and the maintenance page.", nil, nil)
	maintenanceAnswersDesc = prometheus.NewDesc("zero502_lb_maintenance_responses_total",
		"Requests answered with the maintenance page (503, Retry-After).", nil, nil)
	slowRefusedDesc = prometheus.NewDesc("zero502_lb_slow_body_refusals_total",
		"Requests answered 429 because their client IP had max_slow_bodies_per_ip slow bodies already.", nil, nil)
)

func (c *counters) Describe(ch chan<- *prometheus.Desc) {
	for _, d := range []*prometheus.Desc{requestsDesc, inFlightDesc, inRotationDesc, weightDesc, failOpenDesc, idleDesc, retriesDesc, resentDesc, overBudgetDesc, localShortageDesc, ejectionsDesc, clientsDesc,
		maxConnsDesc, connsRefusedDesc, slowBodiesDesc, slowRefusedDesc, upgradedDesc, upgradesDesc, proxyRefusedDesc,
		headerDesc, backendErrorsDesc, backendOwnDesc, healthUnavailableDesc, maintenanceDesc, maintenanceAnswersDesc} {
		ch <- d
	}
}

func (c *counters) Collect(ch chan<- prometheus.Metric) {
	for _, b := range c.s.members.all() {
		for i, n := range classNames {
			ch <- prometheus.MustNewConstMetric(requestsDesc, prometheus.CounterValue, float64(b.counts[i].Load()), b.Address, n)
		}
		ch <- prometheus.MustNewConstMetric(inFlightDesc, prometheus.GaugeValue, float64(b.inFlight.Load()), b.Address)
		rot := 0.0
		if b.InRotation() {
			rot = 1
		}
		ch <- prometheus.MustNewConstMetric(inRotationDesc, prometheus.GaugeValue, rot, b.Address)
		ch <- prometheus.MustNewConstMetric(weightDesc, prometheus.GaugeValue, float64(b.Weight()), b.Address)
		ch <- prometheus.MustNewConstMetric(idleDesc, prometheus.GaugeValue, float64(b.idleConns()), b.Address)
		collectOutcomes(ch, b)
	}
	failing := 0.0
	if c.s.rot.failingOpen() {
		failing = 1
	}
	ch <- prometheus.MustNewConstMetric(failOpenDesc, prometheus.GaugeValue, failing)
	ch <- prometheus.MustNewConstMetric(retriesDesc, prometheus.CounterValue, float64(c.s.retries.Load()))
	ch <- prometheus.MustNewConstMetric(resentDesc, prometheus.CounterValue, float64(c.s.resent.Load()))
	ch <- prometheus.MustNewConstMetric(overBudgetDesc, prometheus.CounterValue, float64(c.s.overBudget.Load()))
	ch <- prometheus.MustNewConstMetric(localShortageDesc, prometheus.CounterValue, float64(c.s.localShortage.Load()))
	ch <- prometheus.MustNewConstMetric(ejectionsDesc, prometheus.CounterValue, float64(c.s.ejections.Load()))
	c.s.mu.Lock()
	n := len(c.s.conns)
	c.s.mu.Unlock()
	if c.s.loops != nil {
		n += int(c.s.loops.clients.Load())
	}
	ch <- prometheus.MustNewConstMetric(clientsDesc, prometheus.GaugeValue, float64(n))
	ch <- prometheus.MustNewConstMetric(maxConnsDesc, prometheus.GaugeValue, float64(c.s.set.MaxConns))
	ch <- prometheus.MustNewConstMetric(connsRefusedDesc, prometheus.CounterValue, float64(c.s.connsRefused.Load()))
	ch <- prometheus.MustNewConstMetric(slowBodiesDesc, prometheus.GaugeValue, float64(c.s.slow.active.Load()))
	ch <- prometheus.MustNewConstMetric(slowRefusedDesc, prometheus.CounterValue, float64(c.s.slow.refused.Load()))
	ch <- prometheus.MustNewConstMetric(upgradedDesc, prometheus.GaugeValue, float64(c.s.tunnels.count()))
	ch <- prometheus.MustNewConstMetric(proxyRefusedDesc, prometheus.CounterValue, float64(c.s.proxyRefused.Load()))
	ch <- prometheus.MustNewConstMetric(upgradesDesc, prometheus.CounterValue, float64(c.s.tunnels.total.Load()))
	on := 0.0
	if c.s.maint.page.Load() != nil {
		on = 1
	}
	ch <- prometheus.MustNewConstMetric(maintenanceDesc, prometheus.GaugeValue, on)
	ch <- prometheus.MustNewConstMetric(maintenanceAnswersDesc, prometheus.CounterValue, float64(c.s.maint.answered.Load()))
}

// collectOutcomes exports b's outcome counters and its response-head histogram.
func collectOutcomes(ch chan<- prometheus.Metric, b *Backend) {
	o := b.outcomes()
	ch <- prometheus.MustNewConstMetric(backendErrorsDesc, prometheus.CounterValue, float64(o.ServerErrors), b.Address, "5xx")
	for i, n := range failureNames {
		ch <- prometheus.MustNewConstMetric(backendErrorsDesc, prometheus.CounterValue, float64(b.failures[i].Load()), b.Address, n)
	}
	for i, code := range lbAnswerCodes {
		ch <- prometheus.MustNewConstMetric(backendOwnDesc, prometheus.CounterValue, float64(b.lbAnswers[i].Load()), b.Address, strconv.Itoa(code))
	}
	ch <- prometheus.MustNewConstMetric(healthUnavailableDesc, prometheus.CounterValue, float64(o.HealthUnavailable), b.Address)
	le := make(map[float64]uint64, len(metricsBounds))
	var n uint64
	next := 0
	for i, bound := range latencyBounds {
		n += o.Latency.Counts[i]
		if next < len(metricsBounds) && bound == metricsBounds[next] {
			le[bound] = n
			next++
		}
	}
	n += o.Latency.Counts[len(latencyBounds)]
	ch <- prometheus.MustNewConstHistogram(headerDesc, n, o.Latency.SumSeconds, le, b.Address)
}
