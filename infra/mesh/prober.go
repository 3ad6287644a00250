package mesh

import (
	"context"
	"fmt"
	"net/netip"
	"time"

	"github.com/zero502/zero502/infra/healthcheck"
)

// httpProber reaches a peer the way a client would, by the one health rule every checker runs
// (package healthcheck): a fresh TCP connection and GET of the rule's path, which must answer
// its status (200) within its timeout, without following a redirect. Anything else (refused,
// timed out, another status) fails.
type httpProber struct {
	Rule healthcheck.Rule
	// Source is the local address probes leave from (the Node's Source; invalid: any).
	Source netip.Addr
}

// newHTTPProber returns a prober of path (e.g. /health) wanting 200 within timeout. It keeps no
// connection between probes: a pooled connection would hide a peer that stopped accepting.
func newHTTPProber(path string, timeout time.Duration) *httpProber {
	return &httpProber{Rule: healthcheck.Rule{Path: path, Status: healthcheck.DefaultStatus, Timeout: timeout}}
}

// Probe checks addr (host:port) once and says why it failed ("GET /health answered 503, want
// 200", "connect: connection refused", "no answer within 1s"), or nil.
func (p *httpProber) Probe(ctx context.Context, addr string) error {
	a, err := healthcheck.CheckFrom(ctx, p.Source, addr, p.Rule, "zero502-mesh-probe")
	if err != nil && a.Status != 0 {
		return fmt.Errorf("GET %s %w", p.Rule.Path, err)
	}
	return err
}
