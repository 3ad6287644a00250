// Package measure counts what users feel during a deploy: requests that went nowhere. It sends
// a steady, open-loop load (paced by a ticker, never waiting for answers) of GET / and POST
// /orders (each with a unique Idempotency-Key), on reused keep-alive connections and on new ones,
// and classifies every outcome: ok, 502, 503, 504, other 5xx, 4xx, and transport errors
// (refused, reset, timeout). A 503 from the health endpoint is the drain doing its work, not a
// failure; a 503 on a real path is. It keeps a time series by class and by X-Version so a deploy
// can be seen switching versions. See docs/ARCHITECTURE.md.
package measure

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	mrand "math/rand/v2"
	"net"
	"net/http"
	"net/url"
	"strings"
	"sync"
	"time"

	"github.com/zero502/zero502/infra/clock"
)

// Options configure one load.
type Options struct {
	// Target is the base URL the load goes to, e.g. http://127.0.0.1:18080.
	Target string
	// Rate is requests per second, issued at a steady pace whatever the answers.
	Rate int
	// Duration is how long the load runs; 0 runs until the context is done.
	Duration time.Duration
	// PostShare is the share of requests that are POST /orders (0..1).
	PostShare float64
	// HealthShare is the share of requests that are GET HealthPath (0..1): they show the drain's
	// 503s, which are not failures.
	HealthShare float64
	// NewConnShare is the share of requests sent on a new connection (0..1); the rest reuse
	// keep-alive connections.
	NewConnShare float64
	// GetPath and PostPath are what GETs and POSTs ask for (path and query). Defaults / and
	// /orders; e.g. /orders?ms=150 makes each order take 150 ms on the zero502 app.
	GetPath, PostPath string
	// HealthPath is the health endpoint, whose 503s are not failures. Default /health.
	HealthPath string
	// Timeout bounds one request, from dial to the end of the body. Default 2s.
	Timeout time.Duration
	// Bucket is the time series' resolution, at least 1ms. Default 1s.
	Bucket time.Duration
	// Clock paces the load; default the wall clock.
	Clock clock.Clock
	// DNS, when set, is the DNS server (host:port) that resolves Target's name for every new
	// connection (the edges' A record set); the load spreads over the addresses it answers.
	DNS string
	// IdleConnTimeout is how long the load keeps an idle keep-alive connection. Default 90s.
	IdleConnTimeout time.Duration
	// Sessions is how many long-lived WebSocket sessions the load holds open beside its requests
	// (GET SessionPath, one message every SessionEvery, each echoed back). A session the server
	// ends cleanly (a close frame, or the connection closed between two messages) is reopened and
	// its unanswered message sent again; a session that is reset, times out or cannot reopen is a
	// failure. Default 0.
	Sessions int
	// SessionPath is the WebSocket echo endpoint. Default /ws.
	SessionPath string
	// SessionEvery is the time between two messages of a session. Default 100ms.
	SessionEvery time.Duration
}

func (o *Options) defaults() {
	if o.HealthPath == "" {
		o.HealthPath = "/health"
	}
	if o.GetPath == "" {
		o.GetPath = "/"
	}
	if o.PostPath == "" {
		o.PostPath = "/orders"
	}
	if o.Timeout == 0 {
		o.Timeout = 2 * time.Second
	}
	if o.Bucket == 0 {
		o.Bucket = time.Second
	}
	if o.Clock == nil {
		o.Clock = clock.Real{}
	}
	if o.IdleConnTimeout == 0 {
		o.IdleConnTimeout = 90 * time.Second
	}
	if o.SessionPath == "" {
		o.SessionPath = "/ws"
	}
	if o.SessionEvery == 0 {
		o.SessionEvery = 100 * time.Millisecond
	}
}

// MaxRate is the highest Rate a load sends, in requests per second.
const MaxRate = 100000

// CheckRate checks rate, given as option (rate, --rate), against the rule every load's Rate
// follows: from 1 to MaxRate requests per second.
func CheckRate(option string, rate int) error {
	if rate < 1 || rate > MaxRate {
		return fmt.Errorf("%s %d: must be from 1 to %d requests per second", option, rate, MaxRate)
	}
	return nil
}

// Validate says what is wrong with o, naming the option, its value and the rule.
func (o Options) Validate() error {
	var errs []error
	u, err := url.Parse(o.Target)
	switch {
	case err != nil:
		errs = append(errs, fmt.Errorf("target %q: %w", o.Target, err))
	case u.Scheme != "http" && u.Scheme != "https" || u.Host == "":
		errs = append(errs, fmt.Errorf("target %q: must be an http:// or https:// URL with a host, e.g. http://127.0.0.1:18080", o.Target))
	}
	if err := CheckRate("rate", o.Rate); err != nil {
		errs = append(errs, err)
	}
	if o.Duration < 0 {
		errs = append(errs, fmt.Errorf("duration %s: must not be negative (0 runs until interrupted)", o.Duration))
	}
	for _, s := range []struct {
		name string
		v    float64
	}{{"post-share", o.PostShare}, {"health-share", o.HealthShare}, {"new-conn-share", o.NewConnShare}} {
		if !(s.v >= 0 && s.v <= 1) { // NaN too, which passes every comparison
			errs = append(errs, fmt.Errorf("%s %g: must be from 0 to 1", s.name, s.v))
		}
	}
	if o.PostShare+o.HealthShare > 1 {
		errs = append(errs, fmt.Errorf("post-share %g + health-share %g: must not exceed 1", o.PostShare, o.HealthShare))
	}
	for _, p := range []struct{ name, v string }{{"get-path", o.GetPath}, {"post-path", o.PostPath}, {"health-path", o.HealthPath}} {
		if u, err := url.Parse(p.v); p.v != "" && (err != nil || !strings.HasPrefix(p.v, "/") || u.Host != "") {
			errs = append(errs, fmt.Errorf("%s %q: must be a path starting with /, e.g. /orders?ms=150", p.name, p.v))
		}
	}
	if o.DNS != "" {
		if _, _, err := net.SplitHostPort(o.DNS); err != nil {
			errs = append(errs, fmt.Errorf("dns %q: must be the DNS server's host:port, e.g. 127.0.0.1:5353", o.DNS))
		}
	}
	if o.Sessions < 0 || o.Sessions > 10000 {
		errs = append(errs, fmt.Errorf("sessions %d: must be from 0 to 10000", o.Sessions))
	}
	if o.Timeout < 0 {
		errs = append(errs, fmt.Errorf("timeout %s: must not be negative", o.Timeout))
	}
	if o.Bucket != 0 && o.Bucket < time.Millisecond {
		// The series holds a point per bucket from the start: 100ns over 100ms is a million.
		errs = append(errs, fmt.Errorf("bucket %s: must be at least 1ms, the load's finest pace (the series keeps a point per bucket)", o.Bucket))
	}
	return errors.Join(errs...)
}

// Load is one running (or finished) load. Totals may be read while it runs.
type Load struct {
	opts    Options
	urls    map[string]string // by kind
	runID   string
	reused  *http.Client
	fresh   *http.Client
	started time.Time

	mu  sync.Mutex
	rec *recorder

	sessions *sessions // nil without Options.Sessions
}

// New validates opts and prepares a load; Run starts it.
func New(opts Options) (*Load, error) {
	opts.defaults()
	if err := opts.Validate(); err != nil {
		return nil, fmt.Errorf("measure: %w", err)
	}
	base, _ := url.Parse(opts.Target)
	urls := map[string]string{}
	for kind, p := range map[string]string{KindGet: opts.GetPath, KindPost: opts.PostPath, KindHealth: opts.HealthPath} {
		ref, _ := url.Parse(p)
		u := base.ResolveReference(ref)
		u.Path = strings.TrimSuffix(base.Path, "/") + ref.Path
		urls[kind] = u.String()
	}
	id := make([]byte, 6)
	_, _ = rand.Read(id)
	idle := opts.Rate
	if idle < 64 {
		idle = 64
	}
	dial := newDialer(opts.DNS)
	reused := &http.Transport{MaxIdleConns: idle, MaxIdleConnsPerHost: idle, IdleConnTimeout: opts.IdleConnTimeout,
		DialContext: dial.DialContext}
	fresh := &http.Transport{DisableKeepAlives: true, DialContext: dial.DialContext}
	var ss *sessions
	if opts.Sessions > 0 {
		ws := *base
		ws.Scheme = map[string]string{"http": "ws", "https": "wss"}[base.Scheme]
		ws.Path = strings.TrimSuffix(base.Path, "/") + opts.SessionPath
		ss = &sessions{url: ws.String(), every: opts.SessionEvery, timeout: opts.Timeout,
			client: &http.Client{Transport: &http.Transport{DialContext: dial.DialContext, DisableKeepAlives: true}}}
	}
	return &Load{
		sessions: ss,
		opts:     opts,
		urls:     urls,
		runID:    hex.EncodeToString(id),
		reused:   &http.Client{Transport: reused, CheckRedirect: noRedirect},
		fresh:    &http.Client{Transport: fresh, CheckRedirect: noRedirect},
		rec:      newRecorder(opts.Bucket),
	}, nil
}

func noRedirect(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }

// Run sends the load until Duration has passed or ctx is done, then waits for the requests in
// flight (each bounded by Timeout) and returns the result. Cancelling ctx ends the load early;
// it does not fail the requests already sent.
func (l *Load) Run(ctx context.Context) *Result {
	clk := l.opts.Clock
	start := clk.Now()
	l.mu.Lock()
	l.started = start
	l.mu.Unlock()
	tick := time.Second / time.Duration(l.opts.Rate)
	if tick < time.Millisecond {
		tick = time.Millisecond
	}
	rng := mrand.New(mrand.NewPCG(uint64(start.UnixNano()), 0x5eed))
	var wg sync.WaitGroup
	sessCtx, stopSessions := context.WithCancel(ctx)
	defer stopSessions()
	if l.sessions != nil {
		wg.Add(1)
		go func() {
			defer wg.Done()
			l.sessions.run(sessCtx, l.opts.Sessions)
		}()
	}
	sent := 0
	elapsed := time.Duration(0)
	for done := false; !done; {
		select {
		case <-ctx.Done():
			done = true
		case <-clk.After(tick):
		}
		elapsed = clk.Now().Sub(start)
		if l.opts.Duration > 0 && elapsed >= l.opts.Duration {
			elapsed, done = l.opts.Duration, true
		}
		due := int(elapsed.Seconds() * float64(l.opts.Rate))
		for ; sent < due; sent++ {
			r := l.plan(sent, rng)
			wg.Add(1)
			go func() {
				defer wg.Done()
				l.do(ctx, r, clk.Now().Sub(start))
			}()
		}
	}
	stopSessions()
	wg.Wait()
	l.reused.CloseIdleConnections()
	return l.result(elapsed)
}

// Totals returns the counts by class of the requests answered so far (safe while Run runs).
func (l *Load) Totals() map[Class]int {
	l.mu.Lock()
	defer l.mu.Unlock()
	out := make(map[Class]int, len(Classes))
	for c, n := range l.rec.counts {
		out[c] = n
	}
	return out
}

// Started is when Run started pacing (zero before); series offsets count from it.
func (l *Load) Started() time.Time {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.started
}
