package edge

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/netip"
	"sync/atomic"
	"time"

	"github.com/zero502/zero502/infra/clock"
	"github.com/zero502/zero502/infra/origin"
)

// Relay is the origin side run as its own process: it accepts through an origin.Listener (sniffing
// and stripping PROXY headers), dials the local backend (a gRPC or TLS server that only sees
// loopback peers), registers the inner connection in Map so the backend can Lookup the real
// client, and copies bytes both ways. It writes one log line per connection, with Claimed and
// Measured, when the connection closes; none for an empty one.
//
// Set the fields, then Open (or let Serve open). Do not change them afterwards.
type Relay struct {
	// Listen is where edges (and, during a migration, clients) connect (--listen).
	Listen string
	// Backend is the local server every connection is relayed to (--to), e.g. 127.0.0.1:9443.
	Backend string
	// Trusted are the edges allowed to send a PROXY header (--trusted); see
	// origin.Listener.Trusted. Use origin.ParseTrusted.
	Trusted []netip.Prefix
	// HeaderTimeout is origin.Listener.HeaderTimeout (--header-timeout).
	HeaderTimeout time.Duration
	// ConnectTimeout bounds the dial to the backend; 0 means DefaultConnectTimeout.
	ConnectTimeout time.Duration
	// IdleTimeout closes a connection silent in both directions for this long; 0 means
	// DefaultIdleTimeout.
	IdleTimeout time.Duration
	// Drain is how long the relay keeps accepting after ctx ends (0 for an origin no balancer
	// or DNS points at directly); Shutdown is how long open connections then get.
	Drain, Shutdown time.Duration
	// MaxConns is how many connections are open at once at most (--max-conns); 0 means
	// DefaultMaxConns. One more is closed at once and counted (Counts.OverCap).
	MaxConns int
	// Metrics, when set, is an HTTP listener (--metrics) serving GET /metrics: the Counts and
	// the drain, in the Prometheus text format.
	Metrics string

	// Map is where inner connections are registered; nil: the Relay keeps its own (see innerMap).
	Map *innerMap
	// Clock drives Drain and Shutdown and stamps origin.Peer.Since; nil is the wall clock.
	Clock clock.Clock
	// Logger gets a line per non-empty connection, per bad header, per unreachable backend and
	// per drain phase; nil logs nothing.
	Logger *slog.Logger

	origin   *origin.Listener
	metrics  *metricsEndpoint
	draining atomic.Bool
	counts   counters // empty and unreachable; the listener counts the rest
}

// Validate checks the addresses and durations; each error names the flag, the value and the
// rule.
func (r *Relay) Validate() error {
	return errors.Join(
		checkListen("listen", r.Listen),
		checkDial("to", r.Backend),
		checkOptionalListen("metrics", r.Metrics),
		checkMaxConns(r.MaxConns),
		checkDuration("header-timeout", r.HeaderTimeout, fmt.Sprintf("the default, %s", origin.DefaultHeaderTimeout)),
		checkDuration("connect-timeout", r.ConnectTimeout, fmt.Sprintf("the default, %s", DefaultConnectTimeout)),
		checkDuration("idle-timeout", r.IdleTimeout, fmt.Sprintf("the default, %s", DefaultIdleTimeout)),
		checkDuration("drain", r.Drain, "stop accepting as soon as the drain starts"),
		checkDuration("shutdown", r.Shutdown, "close open connections as soon as the drain window ends"),
	)
}

// Open validates the settings and opens the sniffing listener.
func (r *Relay) Open() error {
	if err := r.Validate(); err != nil {
		return err
	}
	ln, err := listenTCP(r.Listen)
	if err != nil {
		return fmt.Errorf("edge origin: listen on %s (--listen): %w", r.Listen, err)
	}
	if r.Map == nil {
		r.Map = &innerMap{}
	}
	r.origin = &origin.Listener{Listener: ln, HeaderTimeout: r.HeaderTimeout, Trusted: r.Trusted,
		Logger: r.Logger, Clock: r.Clock}
	m, err := openMetrics(net.Listen, r.Metrics, "origin", r.Counts, r.Draining)
	if err != nil {
		_ = ln.Close()
		return err
	}
	r.metrics = m
	return nil
}

// MetricsAddr is where GET /metrics is served (after Open); nil without Metrics.
func (r *Relay) MetricsAddr() net.Addr { return r.metrics.addr() }

// Addr is the address the relay listens on (after Open).
func (r *Relay) Addr() net.Addr { return r.origin.Addr() }

// Draining reports whether the drain has started.
func (r *Relay) Draining() bool { return r.draining.Load() }

// Counts says what the relay has seen: its listener's counts plus Empty and Unreachable (the
// backend).
func (r *Relay) Counts() Counts {
	return Counts{Counts: r.origin.Counts(), Empty: r.counts.empty.Load(), OverCap: r.counts.overCap.Load(),
		Unreachable: r.counts.unreachable.Load()}
}

// Serve relays until ctx ends, then drains like the Forwarder (Drain, then Shutdown). It returns
// nil after a clean drain.
func (r *Relay) Serve(ctx context.Context) error {
	if r.origin == nil {
		if err := r.Open(); err != nil {
			return err
		}
	}
	r.metrics.serve()
	defer r.metrics.close()
	log := logger(r.Logger)
	log.Info("edge origin relaying", "listen", r.Addr().String(), "to", r.Backend, "trusted", fmt.Sprint(r.Trusted),
		"header_timeout", orDefault(r.HeaderTimeout, origin.DefaultHeaderTimeout).String(), "idle_timeout", r.idleTimeout().String(),
		"drain", r.Drain.String(), "shutdown", r.Shutdown.String())
	err := serveDrained(ctx, r.origin, r.relay, maxConns(r.MaxConns), nil, &r.counts.overCap, r.Drain, r.Shutdown, nil, clockOr(r.Clock), log, "edge origin",
		func() { r.draining.Store(true) })
	c := r.Counts()
	log.Info("edge origin stopped", "accepted", c.Accepted, "empty", c.Empty, "unreachable", c.Unreachable,
		"headers", c.Headers, "passed_through", c.PassedThrough, "malformed", c.Malformed, "untrusted", c.Untrusted)
	return err
}

// relay sniffs one accepted connection and relays it to the backend.
func (r *Relay) relay(client *pairedConn) {
	start := time.Now()
	oc := client.Conn.(*origin.Conn)
	if err := oc.Sniff(); err != nil {
		return // a bad or untrusted header was logged and counted; a broken socket has nothing to say
	}
	if oc.Empty() {
		r.counts.empty.Add(1)
		return
	}
	peer := oc.Peer()
	log := logger(r.Logger)
	backend, err := dialTCP(context.Background(), r.Backend, r.connectTimeout())
	if err != nil {
		r.counts.unreachable.Add(1)
		log.Warn("edge origin: backend unreachable; connection closed", "claimed", origin.LogAddr(peer.Claimed),
			"measured", origin.LogAddr(peer.Measured), "to", r.Backend, "error", err.Error())
		return
	}
	if !client.pair(backend) {
		return
	}
	inner := origin.AddrPort(backend.LocalAddr())
	unregister := r.Map.register(inner, peer) // before the first byte reaches the backend
	defer unregister()
	fl := splice(client, backend, r.idleTimeout())
	if fl.up == 0 {
		r.counts.empty.Add(1)
		return
	}
	log.Info("origin connection closed", "claimed", origin.LogAddr(peer.Claimed), "measured", origin.LogAddr(peer.Measured),
		"header", string(peer.Header), "to", r.Backend, "inner", origin.LogAddr(inner),
		"up_bytes", fl.up, "down_bytes", fl.down, "duration", time.Since(start).String(), "end", fl.end())
}

func (r *Relay) connectTimeout() time.Duration {
	return orDefault(r.ConnectTimeout, DefaultConnectTimeout)
}

func (r *Relay) idleTimeout() time.Duration { return orDefault(r.IdleTimeout, DefaultIdleTimeout) }
