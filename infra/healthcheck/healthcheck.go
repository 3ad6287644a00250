// Package healthcheck owns a service's HTTP health rule and the one check of it: GET the rule's
// path on a fresh connection, never following a redirect, and pass when the answer's status is
// exactly the expected one (200 unless services[].health.expect_status says otherwise), all
// within the rule's timeout. The published spec carries the rule (spec.Service.HealthRule) and
// the config maps to it (config.ServiceHealth.Rule), so the deployer, the watchdog and the mesh
// judge a service the same way.
//
// The in-house LB and the edge keep their own transport (infra/standing.HTTPProbe: a raw socket,
// an optional PROXY preamble, the status line only) and judge its status by the same Passes,
// with the lab's rule LBStatus.
package healthcheck

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/netip"
	"net/url"
	"strings"
	"time"
)

// DefaultStatus is the status a healthy answer has when the rule names none.
const DefaultStatus = http.StatusOK

// LBStatus is the lab's rule of the in-house LB's backend checks and the edge's upstream checks:
// a target is healthy when its health path answers 200, and only 200. It is theirs, not a
// service's: services[].health.expect_status does not reach them.
const LBStatus = http.StatusOK

// MaxBody is how much of an answer's body a check reads; the rest is dropped with the connection.
const MaxBody = 1 << 20

// Rule is a service's HTTP health rule (services[].health): GET Path answers Status within
// Timeout.
type Rule struct {
	// Path is the path to GET, e.g. /health.
	Path string
	// Status is the one status a healthy answer has; 0 means DefaultStatus.
	Status int
	// Timeout bounds one check, from the connect to the end of the bounded body; 0 leaves the
	// bound to the caller's context.
	Timeout time.Duration
}

// Want is the status the rule expects.
func (r Rule) Want() int {
	if r.Status == 0 {
		return DefaultStatus
	}
	return r.Status
}

// Passes reports whether status passes a check that expects want (0: DefaultStatus): it is
// exactly that status. A redirect is not followed, so a 301 passes only a rule expecting 301.
// This is every HTTP health check's pass rule.
func Passes(status, want int) bool {
	if want == 0 {
		want = DefaultStatus
	}
	return status == want
}

// Answer is what a checked service answered.
type Answer struct {
	// Status is the answer's status code.
	Status int
	// Header is the answer's header (a version header for the deployer's verify).
	Header http.Header
	// Body is the start of the answer's body, at most MaxBody bytes.
	Body []byte
}

// Check runs rule r against addr (host:port): one Get of r.Path within r.Timeout, judged by
// Passes. It returns the answer whenever there was one, and an error that says what happened
// when the check failed: "answered 503, want 200", "no answer within 2s", "connect: connection
// refused". agent is the checker's User-Agent; empty sends Go's default.
func Check(ctx context.Context, addr string, r Rule, agent string) (Answer, error) {
	return CheckFrom(ctx, netip.Addr{}, addr, r, agent)
}

// CheckFrom is Check on a connection leaving from the local address source (the zero Addr: one
// the kernel picks), for a checker that must be seen from one address of its host (the mesh's
// --source).
func CheckFrom(ctx context.Context, source netip.Addr, addr string, r Rule, agent string) (Answer, error) {
	c := client
	if source.IsValid() {
		d := &net.Dialer{LocalAddr: &net.TCPAddr{IP: source.AsSlice()}}
		c = &http.Client{Transport: &http.Transport{DisableKeepAlives: true, Proxy: nil, DialContext: d.DialContext},
			CheckRedirect: client.CheckRedirect}
	}
	a, err := do(ctx, c, addr, http.MethodGet, r.Path, "", agent, r.Timeout)
	if err != nil {
		return a, err
	}
	if !Passes(a.Status, r.Status) {
		return a, fmt.Errorf("answered %d, want %d", a.Status, r.Want())
	}
	return a, nil
}

// client sends every check on a connection of its own (a pooled one would hide a peer that
// stopped accepting), through no proxy, and returns a redirect as the answer.
var client = &http.Client{
	Transport: &http.Transport{DisableKeepAlives: true, Proxy: nil},
	CheckRedirect: func(*http.Request, []*http.Request) error {
		return http.ErrUseLastResponse
	},
}

// Get is the transport under Check: one GET http://addr+path on a fresh connection, never
// following a redirect, reading at most MaxBody of the body, all within timeout (0: only ctx
// bounds it). Any status is an answer; the error says why there was none.
func Get(ctx context.Context, addr, path, agent string, timeout time.Duration) (Answer, error) {
	return Do(ctx, addr, http.MethodGet, path, "", agent, timeout)
}

// Do is Get with another method and a body (the deployer's smoke requests): the same fresh
// connection, no redirect followed, bounded body and timeout.
func Do(ctx context.Context, addr, method, path, body, agent string, timeout time.Duration) (Answer, error) {
	return do(ctx, client, addr, method, path, body, agent, timeout)
}

func do(ctx context.Context, c *http.Client, addr, method, path, body, agent string, timeout time.Duration) (Answer, error) {
	cctx := ctx
	if timeout > 0 {
		var cancel context.CancelFunc
		cctx, cancel = context.WithTimeout(ctx, timeout)
		defer cancel()
	}
	var rd io.Reader
	if body != "" {
		rd = strings.NewReader(body)
	}
	req, err := http.NewRequestWithContext(cctx, method, "http://"+addr+path, rd)
	if err != nil {
		return Answer{}, fmt.Errorf("bad check address %q or path %q: %w", addr, path, err)
	}
	if agent != "" {
		req.Header.Set("User-Agent", agent)
	}
	resp, err := c.Do(req)
	if err != nil {
		return Answer{}, why(ctx, cctx, timeout, err)
	}
	defer resp.Body.Close()
	got, err := io.ReadAll(io.LimitReader(resp.Body, MaxBody))
	if err != nil {
		return Answer{}, fmt.Errorf("answered %d but the body broke off: %w", resp.StatusCode, why(ctx, cctx, timeout, err))
	}
	return Answer{Status: resp.StatusCode, Header: resp.Header, Body: got}, nil
}

// why says what kept a check from its answer: its own timeout, the caller's end, or the
// connection's cause without the URL and address noise (e.g. "connect: connection refused").
func why(ctx, cctx context.Context, timeout time.Duration, err error) error {
	if timeout > 0 && ctx.Err() == nil && errors.Is(cctx.Err(), context.DeadlineExceeded) {
		return fmt.Errorf("no answer within %s", timeout)
	}
	if ctx.Err() != nil {
		return fmt.Errorf("no answer before the check was called off: %w", ctx.Err())
	}
	var ue *url.Error
	if errors.As(err, &ue) {
		err = ue.Err
	}
	var op *net.OpError
	if errors.As(err, &op) && op.Err != nil {
		return op.Err
	}
	if errors.Is(err, io.EOF) || errors.Is(err, io.ErrUnexpectedEOF) {
		return fmt.Errorf("closed the connection without a whole answer: %w", err)
	}
	return err
}
