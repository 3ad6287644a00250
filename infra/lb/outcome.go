package lb

import (
	"bytes"
	"math"
	"slices"
	"sync/atomic"
	"time"

	"github.com/zero502/zero502/infra/adminapi"
	"github.com/zero502/zero502/infra/http1"
)

// outcome is how one attempt at a backend ended, as an engine concludes it: the backend's
// answer (status, and how long its head took), or how the attempt failed and what the client
// got instead. Both engines conclude attempts through Server.answered and Server.attemptFailed,
// which fill one and hand it to Backend.record: the only place a backend's outcome counters
// change.
type outcome struct {
	status int           // the backend's response status; 0: it gave none
	head   time.Duration // from the request sent to the response head (status != 0)
	health bool          // the request was for the health path: its 503 is the drain, not an error

	failure attemptError // why there was no response (status 0): connect, no answer, timeout, bad head
	own     int          // the LB's own answer the failure caused (502, 503, 504); 0: the request went on
}

// Kinds of failed attempts (adminapi.Failures), the index of Backend.failures.
const (
	failConnect = iota
	failReset
	failTimeout
	failBadResponse
	failureKinds
)

var failureNames = [failureKinds]string{"connect", "reset", "timeout", "bad_response"}

// failureKind is the kind of a failed attempt (one of the backend's, never the client's fault).
func failureKind(aerr attemptError) int {
	switch aerr {
	case attemptConnect:
		return failConnect
	case attemptNoAnswer, attemptEjected: // nothing came back
		return failReset
	case attemptTimeout:
		return failTimeout
	}
	return failBadResponse
}

// The LB's own answers charged to a backend, the index of Backend.lbAnswers.
var lbAnswerCodes = [...]int{502, 503, 504}

// latencyBounds are the upper bounds, in seconds, of the response-head latency buckets of the
// admin API's histogram, from 100µs to 5s: 22 per decade, each at most 15 % above the one before
// it, so that the deployer's analysis tells a p99 20 % slower from the baseline's
// (rollout.analysis.max_p99_increase), which buckets 2.5× apart cannot.
var latencyBounds = func() []float64 {
	mantissas := []float64{1, 1.1, 1.2, 1.3, 1.4, 1.5, 1.6, 1.8, 2, 2.2, 2.5, 2.8, 3.2, 3.6, 4, 4.5, 5, 5.6, 6.3, 7.1, 8, 9}
	var b []float64
	for decade := 1e-4; decade < 10; decade *= 10 {
		for _, m := range mantissas {
			if v := roundBound(m * decade); v <= 5 {
				b = append(b, v)
			}
		}
	}
	return b
}()

// roundBound drops the float noise of m × 10^k (1.1 × 0.001 is 0.0011000000000000001).
func roundBound(v float64) float64 { return math.Round(v*1e7) / 1e7 }

// metricsBounds are the le buckets of /metrics' zero502_lb_upstream_header_seconds: Prometheus'
// usual coarse ones, every one also a bound of latencyBounds, so each is a sum of fine buckets.
var metricsBounds = []float64{.0001, .00025, .0005, .001, .0025, .005, .01, .025, .05, .1, .25, .5, 1, 2.5, 5}

// latencyBoundsD are latencyBounds as durations, for bucketing without float arithmetic.
var latencyBoundsD = func() []time.Duration {
	d := make([]time.Duration, len(latencyBounds))
	for i, s := range latencyBounds {
		d[i] = time.Duration(math.Round(s * float64(time.Second)))
	}
	return d
}()

// latencyBuckets is how many buckets a latency histogram has: one per bound and one above.
const latencyBuckets = 105 + 1

// latency is a cumulative histogram of response-head times in latencyBounds' buckets, atomics
// only: observe neither locks nor allocates.
type latency struct {
	counts [latencyBuckets]atomic.Uint64 // the last: above the last bound
	nanos  atomic.Uint64
}

func (h *latency) observe(d time.Duration) {
	d = max(d, 0)
	i, _ := slices.BinarySearch(latencyBoundsD, d) // the first bound at or above d
	h.counts[i].Add(1)
	h.nanos.Add(uint64(d))
}

// snapshot is h in the admin API's form.
func (h *latency) snapshot() adminapi.Histogram {
	out := adminapi.Histogram{Bounds: latencyBounds, Counts: make([]uint64, len(h.counts))}
	for i := range h.counts {
		out.Counts[i] = h.counts[i].Load()
	}
	out.SumSeconds = time.Duration(h.nanos.Load()).Seconds()
	return out
}

// record counts one concluded attempt at b. A backend's answer is counted by status class, a
// 5xx as a server error (a 503 to the health path as the drain instead), its head time in the
// latency histogram; a failed attempt by kind, and the LB's answer it caused.
func (b *Backend) record(o outcome) {
	if o.status != 0 {
		b.count(o.status)
		if o.status >= 500 {
			if o.status == 503 && o.health {
				b.healthUnavailable.Add(1)
			} else {
				b.serverErrors.Add(1)
			}
		}
		b.latency.observe(o.head)
		return
	}
	b.count(0)
	b.failures[failureKind(o.failure)].Add(1)
	for i, code := range lbAnswerCodes {
		if o.own == code {
			b.lbAnswers[i].Add(1)
		}
	}
}

// outcomes is b's outcome counters in the admin API's form.
func (b *Backend) outcomes() adminapi.Outcomes {
	var o adminapi.Outcomes
	for c := class1xx; c <= class5xx; c++ {
		o.Answered += b.counts[c].Load()
	}
	o.ServerErrors = b.serverErrors.Load()
	o.HealthUnavailable = b.healthUnavailable.Load()
	o.Failures = adminapi.Failures{
		Connect: b.failures[failConnect].Load(), Reset: b.failures[failReset].Load(),
		Timeout: b.failures[failTimeout].Load(), BadResponse: b.failures[failBadResponse].Load(),
	}
	o.LBAnswers = adminapi.LBAnswers{
		BadGateway: b.lbAnswers[0].Load(), ServiceUnavailable: b.lbAnswers[1].Load(), GatewayTimeout: b.lbAnswers[2].Load(),
	}
	o.Latency = b.latency.snapshot()
	o.CountingSince = b.countingSince
	return o
}

// answered concludes an attempt at b that got a final response head with status, head after
// the request went. Both engines call it once per response, where its head is parsed.
func (s *Server) answered(b *Backend, req *http1.Request, status int, head time.Duration) {
	b.record(outcome{status: status, head: head, health: status == 503 && s.forHealthPath(req)})
}

// attemptFailed concludes an attempt at b that got no usable response, neither a stale pooled
// connection replaced by a fresh one nor the client's fault, for both engines: the request
// leaves b's in-flight count, the failure policy (failure) decides, b is ejected when it says
// so, and the failure (with the LB's answer it causes) is recorded against b. next: the
// request goes to the next backend; otherwise the client gets status. reused says the attempt
// was on a pooled connection.
func (s *Server) attemptFailed(req *http1.Request, b *Backend, aerr attemptError, reused bool) (next bool, status int) {
	b.inFlight.Add(-1)
	eject, next, status := failure(req, aerr, reused, b.InRotation())
	if aerr == attemptLocal { // not b's: neither ejected nor recorded against it (its outcomes judge a version)
		s.localShortage.Add(1)
		s.log.Warn("lb: cannot connect for lack of this host's own resources (descriptors, memory, ports); backend kept in rotation, "+
			"the client answered 503: raise the descriptor limit (LimitNOFILE, ulimit -n), or lower max_conns", "backend", b.Address)
		return next, status
	}
	if eject {
		s.eject(b, aerr)
	}
	o := outcome{failure: aerr}
	if !next {
		o.own = status
	}
	b.record(o)
	return next, status
}

// forHealthPath says req asks for the configured health path (balancer.health_path), whatever
// its query.
func (s *Server) forHealthPath(req *http1.Request) bool {
	t := req.Target()
	if i := bytes.IndexByte(t, '?'); i >= 0 {
		t = t[:i]
	}
	return string(t) == s.set.HealthPath
}
