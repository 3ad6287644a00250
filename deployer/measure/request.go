package measure

import (
	"context"
	"fmt"
	"io"
	mrand "math/rand/v2"
	"net/http"
	"net/http/httptrace"
	"strings"
	"sync/atomic"
	"time"
)

// Request kinds of the mix.
const (
	KindGet    = "GET /"
	KindPost   = "POST /orders"
	KindHealth = "GET health"
)

// planned is one request of the load, decided before it is sent.
type planned struct {
	seq     int
	kind    string
	newConn bool
}

func (l *Load) plan(seq int, rng *mrand.Rand) planned {
	p := planned{seq: seq, kind: KindGet, newConn: rng.Float64() < l.opts.NewConnShare}
	switch x := rng.Float64(); {
	case x < l.opts.PostShare:
		p.kind = KindPost
	case x < l.opts.PostShare+l.opts.HealthShare:
		p.kind = KindHealth
	}
	return p
}

// outcome is what one request ended with.
type outcome struct {
	planned
	at      time.Duration // when it was sent, from the start of the load
	class   Class
	status  int
	version string
	latency time.Duration
	retried bool
	err     error
}

// do sends one request and records its outcome. The request's deadline is its own: cancelling
// the load does not cancel it.
func (l *Load) do(ctx context.Context, p planned, at time.Duration) {
	rctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), l.opts.Timeout)
	defer cancel()
	method := http.MethodGet
	var body io.Reader
	if p.kind == KindPost {
		method = http.MethodPost
		body = strings.NewReader(fmt.Sprintf(`{"item":"measure","seq":%d}`, p.seq))
	}
	var conns atomic.Int32
	trace := &httptrace.ClientTrace{GotConn: func(httptrace.GotConnInfo) { conns.Add(1) }}
	req, err := http.NewRequestWithContext(httptrace.WithClientTrace(rctx, trace), method, l.urls[p.kind], body)
	if err != nil {
		l.record(outcome{planned: p, at: at, class: ErrOther, err: err})
		return
	}
	if p.kind == KindPost {
		req.Header.Set("Content-Type", "application/json")
		req.Header.Set("Idempotency-Key", fmt.Sprintf("measure-%s-%d", l.runID, p.seq))
	}
	client := l.reused
	if p.newConn {
		client = l.fresh
		req.Close = true
	}
	t0 := time.Now()
	resp, err := client.Do(req)
	o := outcome{planned: p, at: at}
	if err == nil {
		// A body cut short is a reset the user would see as a broken page.
		_, err = io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
		o.status, o.version = resp.StatusCode, resp.Header.Get("X-Version")
	}
	o.latency = time.Since(t0)
	o.retried = conns.Load() > 1
	o.err = err
	o.class = classify(p.kind, o.status, err)
	l.record(o)
}
