package edgepick

import (
	"context"
	"fmt"
)

// Verdict is the platform's reading of one probe; health depends on the handshake, because a
// forwarder with a dead backend answers the TCP connect perfectly.
func (m Measurement) Verdict() string {
	switch {
	case m.Healthy():
		return "healthy"
	case m.Connect > 0:
		return "down: accepts TCP, handshake fails (forwards nothing?)"
	default:
		return "down: TCP connect fails"
	}
}

// Survey is the platform-side monitor: resolve name the way the agent does (through r, the
// system resolver when nil, not a direct DNS query: it is what real traffic uses, so it returns
// the same list) and probe every edge in parallel, both numbers from one socket. The ranking's
// Verdicts are the edges' health.
func Survey(ctx context.Context, r Resolver, name string, probe probeFunc) (Ranking, error) {
	set, err := Resolve(ctx, r, name)
	if err != nil {
		return nil, err
	}
	if len(set) == 0 {
		return nil, fmt.Errorf("edge name %s resolved to no address: no edge is in rotation", name)
	}
	return Measure(ctx, set, probe), nil
}
