package mesh

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"time"
)

// HTTPProber reaches a peer the way a client would: a fresh TCP connection and GET Path, which
// must answer 200 within Timeout. Anything else (refused, timed out, another status) fails.
type HTTPProber struct {
	Path    string
	Timeout time.Duration
	client  *http.Client
}

// NewHTTPProber returns a prober of path (e.g. /health) with the given timeout. It keeps no
// connection between probes: a pooled connection would hide a peer that stopped accepting.
func NewHTTPProber(path string, timeout time.Duration) *HTTPProber {
	return &HTTPProber{Path: path, Timeout: timeout, client: &http.Client{
		Transport: &http.Transport{DisableKeepAlives: true, Proxy: nil},
		CheckRedirect: func(*http.Request, []*http.Request) error {
			return http.ErrUseLastResponse
		},
	}}
}

// Probe checks addr (host:port) once and says why it failed, or nil.
func (p *HTTPProber) Probe(ctx context.Context, addr string) error {
	ctx, cancel := context.WithTimeout(ctx, p.Timeout)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, "http://"+addr+p.Path, nil)
	if err != nil {
		return fmt.Errorf("bad probe address %q: %w", addr, err)
	}
	req.Header.Set("User-Agent", "zero502-mesh-probe")
	resp, err := p.client.Do(req)
	if err != nil {
		if ctx.Err() == context.DeadlineExceeded {
			return fmt.Errorf("no answer within %s", p.Timeout)
		}
		var op *net.OpError
		if errors.As(err, &op) && op.Err != nil {
			return op.Err // e.g. "connect: connection refused"
		}
		return err
	}
	_, _ = io.Copy(io.Discard, io.LimitReader(resp.Body, 4<<10))
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return fmt.Errorf("GET %s answered %d", p.Path, resp.StatusCode)
	}
	return nil
}
