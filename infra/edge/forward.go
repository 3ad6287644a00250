package edge

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"sync"
	"sync/atomic"
	"time"

	"github.com/pires/go-proxyproto"

	"github.com/zero502/zero502/infra/clock"
)

// Forwarder is one edge: a TCP forwarder in front of the origin that prepends a PROXY protocol v2
// header to every connection. It sees ciphertext and never parses the payload.
//
// Set the fields, then Open (or let Serve open). Do not change them afterwards.
type Forwarder struct {
	// Listen is where clients connect (--listen), e.g. 0.0.0.0:443; port 0 picks a free port.
	Listen string
	// Origin is where every connection goes (--origin), host:port.
	Origin string
	// Health, when set, is a TCP health listener (--health): it accepts and closes while the
	// edge forwards, and refuses connections once the drain starts, so a TCP check by the DNS
	// health checker takes the edge out of the A set.
	Health string
	// Metrics, when set, is an HTTP listener (--metrics) serving GET /metrics: the Counts and
	// the drain, in the Prometheus text format.
	Metrics string

	// ConnectTimeout bounds the dial to the origin and the write of the header; 0 means
	// DefaultConnectTimeout.
	ConnectTimeout time.Duration
	// IdleTimeout closes a connection on which nothing moved, in either direction, for this long
	// (silence, not total duration); 0 means DefaultIdleTimeout.
	IdleTimeout time.Duration
	// Drain is how long the edge keeps forwarding, and accepting, after ctx ends while it
	// reports draining: longer than it takes to leave the DNS A set (edge.drain, invariant I6).
	Drain time.Duration
	// Shutdown is how long open connections get to finish once the edge stopped accepting;
	// what is still open then is closed.
	Shutdown time.Duration

	// Clock drives Drain and Shutdown; nil is the wall clock.
	Clock clock.Clock
	// Logger gets a line per non-empty connection, per unreachable origin and per drain phase;
	// nil logs nothing.
	Logger *slog.Logger

	ln, health net.Listener
	metrics    *metricsEndpoint
	healthOnce sync.Once
	draining   atomic.Bool
	counts     counters
}

// Validate checks the addresses and durations; each error names the flag, the value and the
// rule.
func (f *Forwarder) Validate() error {
	return errors.Join(
		checkListen("listen", f.Listen),
		checkDial("origin", f.Origin),
		checkOptionalListen("health", f.Health),
		checkOptionalListen("metrics", f.Metrics),
		checkDuration("connect-timeout", f.ConnectTimeout, fmt.Sprintf("the default, %s", DefaultConnectTimeout)),
		checkDuration("idle-timeout", f.IdleTimeout, fmt.Sprintf("the default, %s", DefaultIdleTimeout)),
		checkDuration("drain", f.Drain, "stop forwarding at once, which drops clients still resolving to this edge; it must outlast edge.dns_ttl + edge.check_interval × edge.unhealthy_threshold"),
		checkDuration("shutdown", f.Shutdown, "close open connections as soon as the drain window ends"),
	)
}

// Open validates the settings and opens the listener (and the health listener).
func (f *Forwarder) Open() error {
	if err := f.Validate(); err != nil {
		return err
	}
	ln, err := listenTCP(f.Listen)
	if err != nil {
		return fmt.Errorf("edge: listen on %s (--listen): %w", f.Listen, err)
	}
	if f.Health != "" {
		h, err := net.Listen("tcp", f.Health)
		if err != nil {
			_ = ln.Close()
			return fmt.Errorf("edge: health listener on %s (--health): %w", f.Health, err)
		}
		f.health = h
	}
	m, err := openMetrics(f.Metrics, "forward", f.Counts, f.Draining)
	if err != nil {
		_ = ln.Close()
		f.closeHealth()
		return err
	}
	f.ln, f.metrics = ln, m
	return nil
}

// MetricsAddr is where GET /metrics is served (after Open); nil without Metrics.
func (f *Forwarder) MetricsAddr() net.Addr { return f.metrics.addr() }

// Addr is the address clients connect to (after Open).
func (f *Forwarder) Addr() net.Addr { return f.ln.Addr() }

// Draining reports whether the drain has started: the edge still forwards, but it should be out
// of the A set (its health listener refuses connections).
func (f *Forwarder) Draining() bool { return f.draining.Load() }

// Counts says what the edge has seen: Accepted, Empty and Unreachable.
func (f *Forwarder) Counts() Counts { return f.counts.snapshot() }

// Serve forwards until ctx ends, then drains: it keeps forwarding and accepting for Drain while
// it reports draining, stops accepting, gives open connections Shutdown to finish and closes the
// rest. It returns nil after a clean drain, or an error when it cannot listen or the listener
// fails.
func (f *Forwarder) Serve(ctx context.Context) error {
	if f.ln == nil {
		if err := f.Open(); err != nil {
			return err
		}
	}
	log := logger(f.Logger)
	if f.health != nil {
		go acceptAndClose(f.health)
		defer f.closeHealth()
	}
	f.metrics.serve()
	defer f.metrics.close()
	log.Info("edge forwarding", "listen", f.ln.Addr().String(), "origin", f.Origin, "health", f.healthString(),
		"drain", f.Drain.String(), "shutdown", f.Shutdown.String(),
		"idle_timeout", f.idleTimeout().String(), "connect_timeout", f.connectTimeout().String())
	err := serveDrained(ctx, f.ln, f.forward, f.Drain, f.Shutdown, clockOr(f.Clock), log, "edge", func() {
		f.draining.Store(true)
		f.closeHealth()
	})
	c := f.Counts()
	log.Info("edge stopped", "accepted", c.Accepted, "empty", c.Empty, "unreachable", c.Unreachable)
	return err
}

// forward relays one client connection to the origin behind a PROXY v2 header.
func (f *Forwarder) forward(client *pairedConn) {
	start := time.Now()
	f.counts.accepted.Add(1)
	measured := addrPort(client.RemoteAddr())
	log := logger(f.Logger)
	origin, err := dialTCP(f.Origin, f.connectTimeout())
	if err != nil {
		f.counts.unreachable.Add(1)
		log.Warn("edge: origin unreachable; client connection closed", "measured", addrString(measured),
			"origin", f.Origin, "error", err.Error())
		return
	}
	if !client.pair(origin) {
		return
	}
	// Source: the client as this edge measured it. Destination: the address the client dialled.
	header := proxyproto.HeaderProxyFromAddrs(2, client.RemoteAddr(), client.LocalAddr())
	first, err := sendHeader(client, origin, header, f.connectTimeout())
	if err != nil {
		f.counts.unreachable.Add(1)
		log.Warn("edge: could not send the PROXY header to the origin; client connection closed",
			"measured", addrString(measured), "origin", f.Origin, "error", err.Error())
		return
	}
	fl := splice(client, origin, f.idleTimeout())
	fl.up += int64(first)
	if fl.up == 0 {
		f.counts.empty.Add(1)
		return
	}
	log.Info("edge connection closed", "measured", addrString(measured), "origin", f.Origin,
		"local", origin.LocalAddr().String(), "up_bytes", fl.up, "down_bytes", fl.down,
		"duration", time.Since(start).String(), "end", fl.end())
}

func (f *Forwarder) connectTimeout() time.Duration {
	return orDefault(f.ConnectTimeout, DefaultConnectTimeout)
}

func (f *Forwarder) idleTimeout() time.Duration { return orDefault(f.IdleTimeout, DefaultIdleTimeout) }
