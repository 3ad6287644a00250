package lb

import (
	"context"
	"fmt"
	"github.com/zero502/zero502/infra/lb/http1"
	"net"
	"strconv"
	"time"

	"github.com/zero502/zero502/infra/clock"
)

// Verdict is the result of one active health check: Status is the HTTP status (0 when there
// was none) and Err says why it failed.
type Verdict struct {
	Status int
	Err    error
}

// OK reports whether the check counts as healthy: only a 200 does.
func (v Verdict) OK() bool { return v.Err == nil && v.Status == 200 }

func (v Verdict) reason() string {
	switch {
	case v.Err != nil:
		return v.Err.Error()
	case v.Status != 0:
		return "health " + strconv.Itoa(v.Status)
	}
	return "no answer"
}

// thresholds are the numbers the state machine needs.
type thresholds struct {
	unhealthy, healthy int
}

// record applies one health-check verdict taken at now and returns the transition it caused,
// if any. The rules:
//   - a 200 counts toward healthy_threshold; reaching it puts a draining or unhealthy backend
//     back in rotation;
//   - a 503 from a backend that is not already draining takes it to draining at once (it asked
//     to leave: the drain handshake);
//   - any other failure (another status, refused, timeout) counts toward unhealthy_threshold;
//     reaching it takes a healthy or draining backend to unhealthy (a joining one stays joining);
//   - a backend the admin API drained or removed keeps its state: the verdicts are only recorded.
func (b *Backend) record(v Verdict, now time.Time, th thresholds) (Transition, bool) {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.lastCheck = now
	held := b.adminDrained || b.removed
	if v.OK() {
		b.lastErr = ""
		b.successes++
		b.failures = 0
		if !held && b.state != Healthy && b.successes >= th.healthy {
			return b.moveLocked(Healthy, now, fmt.Sprintf("%d consecutive health 200", b.successes)), true
		}
		return Transition{}, false
	}
	b.lastErr = v.reason()
	b.failures++
	b.successes = 0
	switch {
	case held:
	case v.Err == nil && v.Status == 503 && b.state != Draining:
		return b.moveLocked(Draining, now, "health 503"), true
	case v.Status != 503 && b.state != Unhealthy && b.state != Joining && b.failures >= th.unhealthy:
		return b.moveLocked(Unhealthy, now, fmt.Sprintf("%d consecutive failed checks, last: %s", b.failures, v.reason())), true
	}
	return Transition{}, false
}

// eject takes b out of rotation at once after a connection to it was refused or broke
// (passive health): it comes back only through healthy_threshold good checks.
func (b *Backend) eject(reason string, now time.Time) (Transition, bool) {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.successes = 0
	if b.state != Healthy {
		return Transition{}, false
	}
	return b.moveLocked(Unhealthy, now, "passive: "+reason), true
}

func (b *Backend) moveLocked(to State, now time.Time, reason string) Transition {
	t := Transition{At: now.UTC(), From: b.state, To: to, Reason: reason}
	b.state, b.since = to, now
	b.healthy.Store(to == Healthy)
	if len(b.transitions) == keptTransitions {
		copy(b.transitions, b.transitions[1:])
		b.transitions = b.transitions[:keptTransitions-1]
	}
	b.transitions = append(b.transitions, t)
	return t
}

// State is the backend's current state.
func (b *Backend) State() State {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.state
}

// checker runs the active health checks of every backend.
type checker struct {
	clock   clock.Clock
	path    string
	every   time.Duration
	timeout time.Duration
	th      thresholds
	probe   func(ctx context.Context, b *Backend) Verdict
	changed func(b *Backend, t Transition)
}

// run checks b at once and then every interval until ctx ends. Ejected backends keep being
// checked: that is how they come back.
func (c *checker) run(ctx context.Context, b *Backend) {
	for {
		v := c.probe(ctx, b)
		if ctx.Err() != nil {
			return
		}
		if t, ok := b.apply(v, c.clock.Now(), c.th); ok {
			c.changed(b, t)
		}
		select {
		case <-ctx.Done():
			return
		case <-c.clock.After(c.every):
		}
	}
}

// httpProbe sends GET path to b over a fresh connection and reads the status line, all within
// timeout. It is the LB's own small client, like the forwarding path.
func httpProbe(path string, timeout time.Duration) func(ctx context.Context, b *Backend) Verdict {
	return func(ctx context.Context, b *Backend) Verdict {
		ctx, cancel := context.WithTimeout(ctx, timeout)
		defer cancel()
		var d net.Dialer
		conn, err := d.DialContext(ctx, "tcp", b.Address)
		if err != nil {
			return Verdict{Err: fmt.Errorf("connect: %w", unwrapOp(err))}
		}
		defer conn.Close()
		deadline, _ := ctx.Deadline()
		_ = conn.SetDeadline(deadline)
		req := "GET " + path + " HTTP/1.1\r\nHost: " + b.Address + "\r\nUser-Agent: zero502-lb-health\r\nConnection: close\r\n\r\n"
		if _, err := conn.Write([]byte(req)); err != nil {
			return Verdict{Err: fmt.Errorf("send: %w", unwrapOp(err))}
		}
		rd := reader{conn: conn, buf: make([]byte, 1024)}
		for {
			if n, err := http1.HeadEnd(rd.buffered()); err != nil {
				return Verdict{Err: fmt.Errorf("bad response: %w", err)}
			} else if n > 0 {
				var resp http1.Response
				if err := http1.ParseResponse(rd.buffered()[:n], false, &resp); err != nil {
					return Verdict{Err: err}
				}
				return Verdict{Status: resp.Status}
			}
			if err := rd.fill(16 << 10); err != nil {
				if ne, ok := err.(net.Error); ok && ne.Timeout() {
					return Verdict{Err: fmt.Errorf("no answer within %s", timeout)}
				}
				return Verdict{Err: fmt.Errorf("read: %w", unwrapOp(err))}
			}
		}
	}
}

// unwrapOp drops net.OpError's address noise, keeping the cause (e.g. "connection refused").
func unwrapOp(err error) error {
	if oe, ok := err.(*net.OpError); ok && oe.Err != nil {
		return oe.Err
	}
	return err
}
