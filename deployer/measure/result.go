package measure

import (
	"encoding/json"
	"fmt"
	"io"
	"math"
	"sort"
	"strings"
	"time"
)

// Result is what a load saw.
type Result struct {
	Target string
	Rate   int
	// Elapsed is how long requests were being issued.
	Elapsed time.Duration
	// Sent is how many requests were sent; every one of them is in Counts.
	Sent int
	// Counts are requests by class; Failures is the sum over failure classes.
	Counts   map[Class]int
	Failures int
	// Kinds are requests by kind of the mix (GET /, POST /orders, GET health).
	Kinds map[string]int
	// NewConn is how many were sent on a new connection; Retried how many the HTTP client
	// transparently resent on another connection (a keep-alive race the user did not see).
	NewConn, Retried int
	// Latency percentiles of every answered request.
	P50, P99, Max time.Duration
	// Bucket is the series' resolution; Series has one entry per bucket, by send time.
	Bucket time.Duration
	Series []Point
	// Errors are a few transport error messages by class, for diagnosis.
	Errors map[Class][]string
	// Sessions are the long-lived WebSocket sessions' outcome (Options.Sessions); nil without.
	Sessions *SessionStats
}

// Point is one bucket of the time series.
type Point struct {
	At       time.Duration
	Counts   map[Class]int
	Versions map[string]int
}

// Failed reports whether any request went nowhere.
func (r *Result) Failed() bool { return r.Failures > 0 || r.Sessions != nil && r.Sessions.Lost > 0 }

// FailureCounts returns the non-zero failure classes.
func (r *Result) FailureCounts() map[Class]int {
	out := map[Class]int{}
	for c, n := range r.Counts {
		if c.Failure() && n > 0 {
			out[c] = n
		}
	}
	return out
}

// VersionSwitches lists, in order, each version seen and the first bucket it was seen in.
func (r *Result) VersionSwitches() []versionSeen {
	var out []versionSeen
	seen := map[string]bool{}
	for _, p := range r.Series {
		vs := make([]string, 0, len(p.Versions))
		for v := range p.Versions {
			vs = append(vs, v)
		}
		sort.Strings(vs)
		for _, v := range vs {
			if !seen[v] {
				seen[v] = true
				out = append(out, versionSeen{Version: v, First: p.At, FirstMS: p.At.Milliseconds()})
			}
		}
	}
	return out
}

// versionSeen is a version and when it was first answered.
type versionSeen struct {
	Version string        `json:"version"`
	First   time.Duration `json:"-"`
	FirstMS int64         `json:"first_ms"`
}

// recorder accumulates outcomes; guarded by Load.mu.
type recorder struct {
	bucket  time.Duration
	counts  map[Class]int
	kinds   map[string]int
	newConn int
	retried int
	series  []Point
	lat     map[int]int // log-scale latency histogram, see latIndex
	maxLat  time.Duration
	errs    map[Class][]string
}

func newRecorder(bucket time.Duration) *recorder {
	return &recorder{bucket: bucket, counts: map[Class]int{}, kinds: map[string]int{}, lat: map[int]int{}, errs: map[Class][]string{}}
}

func (l *Load) record(o outcome) {
	l.mu.Lock()
	defer l.mu.Unlock()
	r := l.rec
	r.counts[o.class]++
	r.kinds[o.kind]++
	if o.newConn {
		r.newConn++
	}
	if o.retried {
		r.retried++
	}
	i := int(o.at / r.bucket)
	for len(r.series) <= i {
		r.series = append(r.series, Point{At: time.Duration(len(r.series)) * r.bucket, Counts: map[Class]int{}, Versions: map[string]int{}})
	}
	r.series[i].Counts[o.class]++
	if o.version != "" {
		r.series[i].Versions[o.version]++
	}
	if o.err == nil {
		r.lat[latIndex(o.latency)]++
		r.maxLat = max(r.maxLat, o.latency)
	} else if len(r.errs[o.class]) < 2 {
		r.errs[o.class] = append(r.errs[o.class], fmt.Sprintf("%s: %v", o.kind, o.err))
	}
}

// latIndex buckets latencies on a log scale with about 5 % precision.
func latIndex(d time.Duration) int {
	us := float64(d.Microseconds())
	if us < 1 {
		return 0
	}
	return int(math.Log(us)/math.Log(1.05)) + 1
}

func latValue(i int) time.Duration {
	if i == 0 {
		return 0
	}
	return time.Duration(math.Pow(1.05, float64(i-1))) * time.Microsecond
}

func (l *Load) result(elapsed time.Duration) *Result {
	l.mu.Lock()
	defer l.mu.Unlock()
	r := l.rec
	res := &Result{
		Target: l.opts.Target, Rate: l.opts.Rate, Elapsed: elapsed,
		Counts: map[Class]int{}, Kinds: map[string]int{}, NewConn: r.newConn, Retried: r.retried,
		Bucket: r.bucket, Max: r.maxLat, Errors: r.errs,
	}
	for _, c := range Classes {
		res.Counts[c] = r.counts[c]
		res.Sent += r.counts[c]
		if c.Failure() {
			res.Failures += r.counts[c]
		}
	}
	for k, n := range r.kinds {
		res.Kinds[k] = n
	}
	res.Series = append(res.Series, r.series...)
	res.P50, res.P99 = percentile(r.lat, 0.50), percentile(r.lat, 0.99)
	if l.sessions != nil {
		st := l.sessions.snapshot()
		res.Sessions = &st
	}
	return res
}

func percentile(h map[int]int, q float64) time.Duration {
	total := 0
	idx := make([]int, 0, len(h))
	for i, n := range h {
		total += n
		idx = append(idx, i)
	}
	if total == 0 {
		return 0
	}
	sort.Ints(idx)
	want := int(math.Ceil(q * float64(total)))
	seen := 0
	for _, i := range idx {
		seen += h[i]
		if seen >= want {
			return latValue(i)
		}
	}
	return latValue(idx[len(idx)-1])
}

// WriteTable prints the result for people: the classes first, then the detail.
func (r *Result) WriteTable(w io.Writer) {
	fmt.Fprintf(w, "%-12s %8s %8s\n", "class", "requests", "share")
	for _, c := range Classes {
		n := r.Counts[c]
		note := ""
		switch {
		case c == Health503:
			note = "  (the drain at work: not a failure)"
		case c.Failure() && n > 0:
			note = "  FAILED"
		}
		fmt.Fprintf(w, "%-12s %8d %7.2f%%%s\n", c, n, pct(n, r.Sent), note)
	}
	fmt.Fprintf(w, "%-12s %8d\n", "total", r.Sent)
	fmt.Fprintf(w, "\nfailed requests: %d", r.Failures)
	if r.Failed() {
		fmt.Fprintf(w, " (%.2f%%)", pct(r.Failures, r.Sent))
	}
	fmt.Fprintln(w)
	fmt.Fprintf(w, "load: %s at %d/s for %s (%.0f/s achieved); %s %d, %s %d, %s %d; new connections %d, client retries %d\n",
		r.Target, r.Rate, r.Elapsed.Round(time.Millisecond), float64(r.Sent)/math.Max(r.Elapsed.Seconds(), 1e-9),
		KindGet, r.Kinds[KindGet], KindPost, r.Kinds[KindPost], KindHealth, r.Kinds[KindHealth], r.NewConn, r.Retried)
	fmt.Fprintf(w, "latency: p50 %s, p99 %s, max %s\n", r.P50.Round(time.Microsecond*10), r.P99.Round(time.Microsecond*10), r.Max.Round(time.Microsecond*10))
	if st := r.Sessions; st != nil {
		fmt.Fprintf(w, "sessions: %d opened, %d ended cleanly by the server and reopened, %d messages echoed, %d lost",
			st.Opened, st.EndedClean, st.Echoed, st.Lost)
		if st.Lost > 0 {
			fmt.Fprint(w, "  FAILED")
		}
		fmt.Fprintln(w)
		for _, e := range st.Errors {
			fmt.Fprintf(w, "  e.g. session: %s\n", e)
		}
	}
	if vs := r.VersionSwitches(); len(vs) > 0 {
		parts := make([]string, len(vs))
		for i, v := range vs {
			parts[i] = fmt.Sprintf("%s from +%s", v.Version, v.First)
		}
		fmt.Fprintf(w, "versions answered: %s\n", strings.Join(parts, ", "))
	}
	for _, c := range Classes {
		for _, e := range r.Errors[c] {
			fmt.Fprintf(w, "  e.g. %s: %s\n", c, e)
		}
	}
}

func pct(n, of int) float64 {
	if of == 0 {
		return 0
	}
	return 100 * float64(n) / float64(of)
}

// MarshalJSON writes durations as Go duration strings and the series with millisecond offsets.
func (r *Result) MarshalJSON() ([]byte, error) {
	type point struct {
		AtMS     int64          `json:"at_ms"`
		Counts   map[Class]int  `json:"counts"`
		Versions map[string]int `json:"versions,omitempty"`
	}
	pts := make([]point, len(r.Series))
	for i, p := range r.Series {
		pts[i] = point{AtMS: p.At.Milliseconds(), Counts: nonZero(p.Counts), Versions: p.Versions}
	}
	return json.Marshal(struct {
		Target   string             `json:"target"`
		Rate     int                `json:"rate"`
		Elapsed  string             `json:"elapsed"`
		Sent     int                `json:"sent"`
		Failures int                `json:"failures"`
		Counts   map[Class]int      `json:"counts"`
		Kinds    map[string]int     `json:"kinds"`
		NewConn  int                `json:"new_conn"`
		Retried  int                `json:"client_retries"`
		P50      string             `json:"latency_p50"`
		P99      string             `json:"latency_p99"`
		Max      string             `json:"latency_max"`
		Versions []versionSeen      `json:"versions"`
		BucketMS int64              `json:"bucket_ms"`
		Series   []point            `json:"series"`
		Errors   map[Class][]string `json:"errors,omitempty"`
		Sessions *SessionStats      `json:"sessions,omitempty"`
	}{r.Target, r.Rate, r.Elapsed.String(), r.Sent, r.Failures, r.Counts, r.Kinds, r.NewConn, r.Retried,
		r.P50.String(), r.P99.String(), r.Max.String(), r.VersionSwitches(), r.Bucket.Milliseconds(), pts, r.Errors, r.Sessions})
}

func nonZero(m map[Class]int) map[Class]int {
	out := map[Class]int{}
	for c, n := range m {
		if n > 0 {
			out[c] = n
		}
	}
	return out
}
