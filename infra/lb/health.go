package lb

import (
	"context"
	"net"
	"time"

	"github.com/zero502/zero502/infra/clock"
	"github.com/zero502/zero502/infra/standing"
)

// Verdict is the result of one active health check (package infra/standing, which owns the
// state machine the LB's backends and the edge's upstreams share).
type Verdict = standing.Verdict

// checker runs the active health checks of every backend.
type checker struct {
	clock   clock.Clock
	path    string
	every   time.Duration
	timeout time.Duration
	th      standing.Thresholds
	probe   func(ctx context.Context, b *Backend) Verdict
	changed func(b *Backend, t Transition)
}

// run checks b at once and then every interval until ctx ends. Ejected backends keep being
// checked: that is how they come back.
func (c *checker) run(ctx context.Context, b *Backend) {
	b.Watch(ctx, standing.Checks{Clock: c.clock, Every: c.every, Thresholds: c.th},
		func(ctx context.Context) Verdict { return c.probe(ctx, b) },
		func(t Transition) { c.changed(b, t) })
}

// httpProbe sends GET path to b over a fresh connection and reads the status line, all within
// timeout. For a backend given by name, a check that passes records the address its connection
// got to (Backend.reach): where the event loops connect to it.
func httpProbe(path string, timeout time.Duration) func(ctx context.Context, b *Backend) Verdict {
	return func(ctx context.Context, b *Backend) Verdict {
		if !b.named {
			return standing.HTTPProbe(ctx, b.Address, path, "zero502-lb-health", timeout, nil)
		}
		var peer net.Addr
		v := standing.HTTPProbe(ctx, b.Address, path, "zero502-lb-health", timeout, func(c net.Conn) ([]byte, error) {
			peer = c.RemoteAddr() // (no preamble: only the connection's address)
			return nil, nil
		})
		if v.OK() {
			b.reach(peer)
		}
		return v
	}
}
