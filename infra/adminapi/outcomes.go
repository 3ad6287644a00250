package adminapi

import (
	"errors"
	"fmt"
	"math"
	"slices"
	"time"
)

// Outcomes are a target's cumulative evidence of what the requests sent to it through the LB
// got, counted since the LB started (or the target was added): the numbers only grow, so a
// client snapshots them twice and diffs the two with Window.
type Outcomes struct {
	// Answered is how many responses (a final response head, any status) the target gave.
	Answered uint64 `json:"answered"`
	// ServerErrors are its 5xx answers, but a 503 to the LB's health path (HealthUnavailable).
	ServerErrors uint64 `json:"server_errors"`
	// HealthUnavailable are its 503 answers to a request for the health path: the drain at
	// work (a draining backend's health answers 503 while it serves real requests), not an
	// error.
	HealthUnavailable uint64 `json:"health_unavailable"`
	// Failures are the attempts at the target that got no response, by how they failed.
	Failures Failures `json:"failures"`
	// LBAnswers are the answers the LB made itself because an attempt at this target failed
	// (the target the answer names).
	LBAnswers LBAnswers `json:"lb_answers"`
	// Latency is the time from the request sent to the target to its response head, of every
	// answer counted in Answered.
	Latency Histogram `json:"latency"`
	// CountingSince is when these counters started at zero: the target's addition to this LB,
	// or the LB's start. Two snapshots that differ in it are of two runs (the LB restarted, or
	// the target was removed and added again) even where every counter went up between them.
	// Zero from an LB that predates it.
	CountingSince time.Time `json:"counting_since,omitzero"`
}

// Failures count the attempts at a target that got no response, charged to the target.
type Failures struct {
	// Connect: no connection (refused, or none within connect_timeout); nothing was sent.
	Connect uint64 `json:"connect"`
	// Reset: the request went (maybe partly), not one byte came back: reset or closed.
	Reset uint64 `json:"reset"`
	// Timeout: no response head within header_timeout, or the target took no byte of the
	// request for body_timeout.
	Timeout uint64 `json:"timeout"`
	// BadResponse: a broken or partial response head.
	BadResponse uint64 `json:"bad_response"`
}

// Total is every failed attempt.
func (f Failures) Total() uint64 { return f.Connect + f.Reset + f.Timeout + f.BadResponse }

// LBAnswers count the LB's own answers to clients caused by a target's failed attempts (a GET
// that went on to the next target is not among them: its client got that target's answer).
type LBAnswers struct {
	BadGateway         uint64 `json:"502"`
	ServiceUnavailable uint64 `json:"503"`
	GatewayTimeout     uint64 `json:"504"`
}

// Total is every answer the LB made for the target.
func (a LBAnswers) Total() uint64 { return a.BadGateway + a.ServiceUnavailable + a.GatewayTimeout }

// Histogram is a cumulative latency histogram in fixed buckets: Counts[i] is how many
// observations were at most Bounds[i] seconds (and above Bounds[i-1]); the last entry of Counts,
// one more than Bounds, is how many were above the last bound. Counts are per bucket, not
// cumulative over the bounds as Prometheus' le buckets are.
type Histogram struct {
	Bounds     []float64 `json:"bounds_seconds"`
	Counts     []uint64  `json:"counts"`
	SumSeconds float64   `json:"sum_seconds"`
}

// Count is how many observations the histogram holds.
func (h Histogram) Count() uint64 {
	var n uint64
	for _, c := range h.Counts {
		n += c
	}
	return n
}

// Beyond reports whether the q-quantile of the observations lies above the histogram's last
// bound, where Quantile can only say "at least the last bound": a rule comparing quantiles must
// not take that for the value.
func (h Histogram) Beyond(q float64) bool {
	total := h.Count()
	if total == 0 || len(h.Counts) != len(h.Bounds)+1 {
		return false
	}
	return float64(total-h.Counts[len(h.Bounds)]) < q*float64(total)
}

// Quantile estimates the q-quantile (0 < q ≤ 1) of the observations, interpolating linearly
// within the bucket it falls in, as Prometheus' histogram_quantile does. One that falls above
// the last bound is reported as the last bound: the truth is at least that. 0 with no
// observations.
func (h Histogram) Quantile(q float64) time.Duration {
	total := h.Count()
	if total == 0 || len(h.Counts) != len(h.Bounds)+1 {
		return 0
	}
	rank := q * float64(total)
	var below uint64
	for i, c := range h.Counts {
		if c == 0 || float64(below+c) < rank {
			below += c
			continue
		}
		if i == len(h.Bounds) {
			break
		}
		lo := 0.0
		if i > 0 {
			lo = h.Bounds[i-1]
		}
		s := lo + (h.Bounds[i]-lo)*(rank-float64(below))/float64(c)
		return time.Duration(math.Round(s * float64(time.Second)))
	}
	return time.Duration(math.Round(h.Bounds[len(h.Bounds)-1] * float64(time.Second)))
}

// ErrNotOneWindow says two snapshots cannot be diffed: they are of different targets, their
// histograms have different buckets, or their counters started again between them (the target
// was removed and added again, or the LB restarted: CountingSince differs, or a counter went
// back).
var ErrNotOneWindow = errors.New("snapshots are not of one target's one run")

// WindowOutcome is what the requests sent to one target between two snapshots got.
type WindowOutcome struct {
	Address string
	// Requests are the attempts at the target: its answers plus its failures.
	Requests uint64
	// Errors are its 5xx answers (a 503 to the health path excluded) plus its failures.
	Errors uint64
	// ErrorRate is Errors / Requests; 0 with no requests.
	ErrorRate float64
	// ServerErrors, HealthUnavailable, Failures and LBAnswers are the window's share of the
	// Outcomes of the same names.
	ServerErrors      uint64
	HealthUnavailable uint64
	Failures          Failures
	LBAnswers         LBAnswers
	// Latency is the window's histogram; P50 and P99 are estimated from it (Histogram.Quantile).
	Latency  Histogram
	P50, P99 time.Duration
}

// Window diffs two snapshots of one target (before taken first, e.g. two reads of GET
// /admin/backends/{addr}) into what the requests between them got: requests, errors, error
// rate, and latency quantiles from the bucket diff. It fails with ErrNotOneWindow when the
// snapshots cannot be diffed.
func Window(before, after BackendStatus) (WindowOutcome, error) {
	b, a := before.Outcomes, after.Outcomes
	if before.Address != after.Address {
		return WindowOutcome{}, fmt.Errorf("window of %s against %s: %w", before.Address, after.Address, ErrNotOneWindow)
	}
	if !b.CountingSince.IsZero() && !a.CountingSince.IsZero() && !b.CountingSince.Equal(a.CountingSince) {
		return WindowOutcome{}, fmt.Errorf("window of %s: its counters started again at %s (the LB restarted, or the target was added again): %w",
			after.Address, a.CountingSince.Format(time.RFC3339Nano), ErrNotOneWindow)
	}
	if !slices.Equal(b.Latency.Bounds, a.Latency.Bounds) || len(b.Latency.Counts) != len(a.Latency.Counts) {
		return WindowOutcome{}, fmt.Errorf("window of %s: latency buckets changed: %w", after.Address, ErrNotOneWindow)
	}
	back := false
	sub := func(x, y uint64) uint64 {
		if y < x {
			back = true
			return 0
		}
		return y - x
	}
	w := WindowOutcome{
		Address:           after.Address,
		ServerErrors:      sub(b.ServerErrors, a.ServerErrors),
		HealthUnavailable: sub(b.HealthUnavailable, a.HealthUnavailable),
		Failures: Failures{
			Connect:     sub(b.Failures.Connect, a.Failures.Connect),
			Reset:       sub(b.Failures.Reset, a.Failures.Reset),
			Timeout:     sub(b.Failures.Timeout, a.Failures.Timeout),
			BadResponse: sub(b.Failures.BadResponse, a.Failures.BadResponse),
		},
		LBAnswers: LBAnswers{
			BadGateway:         sub(b.LBAnswers.BadGateway, a.LBAnswers.BadGateway),
			ServiceUnavailable: sub(b.LBAnswers.ServiceUnavailable, a.LBAnswers.ServiceUnavailable),
			GatewayTimeout:     sub(b.LBAnswers.GatewayTimeout, a.LBAnswers.GatewayTimeout),
		},
		Latency: Histogram{
			Bounds:     a.Latency.Bounds,
			Counts:     make([]uint64, len(a.Latency.Counts)),
			SumSeconds: a.Latency.SumSeconds - b.Latency.SumSeconds,
		},
	}
	answered := sub(b.Answered, a.Answered)
	for i := range w.Latency.Counts {
		w.Latency.Counts[i] = sub(b.Latency.Counts[i], a.Latency.Counts[i])
	}
	if back {
		return WindowOutcome{}, fmt.Errorf("window of %s: a counter went back: %w", after.Address, ErrNotOneWindow)
	}
	w.Requests = answered + w.Failures.Total()
	w.Errors = w.ServerErrors + w.Failures.Total()
	if w.Requests > 0 {
		w.ErrorRate = float64(w.Errors) / float64(w.Requests)
	}
	w.P50, w.P99 = w.Latency.Quantile(0.5), w.Latency.Quantile(0.99)
	return w, nil
}
