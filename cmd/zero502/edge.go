package main

import (
	"fmt"
	"os"

	"github.com/spf13/cobra"

	"github.com/zero502/zero502/infra/config"
	"github.com/zero502/zero502/infra/edge"
	"github.com/zero502/zero502/infra/logsink"
	"github.com/zero502/zero502/infra/origin"
	"github.com/zero502/zero502/infra/stopsignal"
)

// newEdgeCmd runs the L4 edge (package infra/edge): forwarders in front of the origin, and the
// origin side that reads their PROXY v2 headers.
func newEdgeCmd() *cobra.Command {
	cmd := &cobra.Command{
		Use:   "edge",
		Short: "Run the L4 edge: a PROXY v2 TCP forwarder (forward), the origin side that reads it (origin), its firewall rules (firewall)",
		Long: `The edge hides the origin's address: clients resolve the edges' A set, each edge forwards
TCP to the origin with a PROXY protocol v2 header carrying the client's address, and sees only
ciphertext (TLS stays end to end, so the origin still authenticates clients by certificate).

  zero502 edge forward   on each disposable edge VM
  zero502 edge origin    on the origin, in front of the local server
  zero502 edge firewall  the DOCKER-USER rules for an edge in a container

The origin side sniffs rather than requires: connections without a header (TLS, plain) pass
through untouched, so it can be installed before the edges send headers. Every connection log
line carries claimed (the header's client: a claim) and measured (the socket's peer). Logs are
JSON on stderr. Exit status: 0 after a clean drain, 1 a listener failed, 2 bad flags or config.`,
	}
	cmd.AddCommand(newEdgeForwardCmd(), newEdgeOriginCmd(), newEdgeFirewallCmd())
	return cmd
}

func newEdgeForwardCmd() *cobra.Command {
	var up *handoffFlags // set below, with the flags (the in-place upgrade)
	var (
		f          edge.Forwarder
		configPath string
	)
	var logs *logFlags // set below, with the flags
	cmd := &cobra.Command{
		Use:   "forward --listen ADDR --origin HOST:PORT [--origin HOST:PORT]... [flags]",
		Short: "Forward TCP to the origin's upstreams behind a PROXY v2 header, with checks and failover, draining on SIGTERM",
		Long: `Accept TCP on --listen and forward each connection to one of the upstreams (--origin, repeatable:
the origin, or its in-house LB instances): dial it, write a PROXY protocol v2 header (source: the
client's address; destination: the address it connected to) and copy bytes both ways, passing
half-closes on, until both directions end or nothing moves either way for --idle-timeout.

Upstreams: a new connection goes to the in-rotation upstream with the fewest open connections. A
dial that fails (refused, or nothing within --connect-timeout) takes that upstream out at once
and tries the next; the client sees nothing of it. Every --check-interval each upstream is
checked: a TCP connect, or with --check-path an HTTP GET of the path sent after a PROXY v2 header
(the LB must accept PROXY from the edge: zero502 lb --accept-proxy-from). --unhealthy-threshold
failures in a row take it out, --healthy-threshold good checks bring it back, a 503 takes it out
at once (an LB instance that drains answers its /_lb/health with 503).

--admin serves the upstreams' view and changes, with the in-house LB's admin API wire type and
semantics: GET /admin/upstreams[/{addr}], PUT /admin/upstreams/{addr} (add, joining),
POST /admin/upstreams/{addr}/drain (out of rotation, open connections go on), DELETE (once out of
rotation). Off loopback it needs a bearer token: --admin-token-file FILE (its first line) or
$ZERO502_EDGE_ADMIN_TOKEN, which stay out of ps (no flag takes the token itself). --metrics adds each upstream's state and open
connections.

--health (a TCP listener the DNS health checker connects to) accepts while the edge forwards and
an upstream is in rotation; it refuses while none is, and from SIGTERM on. On SIGTERM the edge
drains: for --drain it keeps forwarding and accepting while --health refuses, long enough to leave
the A set (edge.drain, invariant I6: drain > dns_ttl + check_interval × unhealthy_threshold); then
it stops accepting, gives open connections --shutdown and closes the rest. Every default is the
shipped config's (edge.*); with --config, the file's edge.* values are the defaults.

On SIGHUP the edge hands its listening sockets (--listen, --metrics, --admin; --health opens its
own with SO_REUSEPORT) to a new process of its executable as it is on disk, with the same
arguments, and what its admin API changed (upstreams drained, added, removed: a file beside
--pid-file; admin writes get 503 with Retry-After while the attempt runs). Once the new process
forwards, this one closes its admin and metrics listeners, stops accepting at once and gives its
open connections --shutdown (no --drain: the address stays served); nothing is refused
meanwhile. If the new process fails, this one keeps forwarding. zero502 lb upgrade --pid-file
FILE (this command's --pid-file) sends it and waits for the outcome.`,
		Example: `  zero502 edge forward --listen 0.0.0.0:443 --origin 10.0.0.5:443 --health 0.0.0.0:8443 --drain 30s
  zero502 edge forward --listen :443 --origin 10.0.0.5:8080 --origin 10.0.0.6:8080 --check-path /_lb/health --admin 127.0.0.1:9104
  zero502 edge forward --config prod.yaml --listen :443`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if err := edgeForwardConfig(cmd, configPath, &f); err != nil {
				return err
			}
			token, tokenSet, err := edgeAdminTokenSource.resolve(cmd.Flags(), os.Getenv)
			if err != nil {
				return exitCode(2, err)
			}
			if tokenSet {
				f.AdminToken = token
			}
			if err := requireFlags(cmd, "listen"); err != nil {
				return err
			}
			if len(f.Origins) == 0 {
				return exitCode(2, fmt.Errorf("%s: --origin is required (repeatable; or edge.origins in --config; see --help)", cmd.CommandPath()))
			}
			var sink *logsink.Sink // a line per connection: batched
			if f.Logger, sink, err = logs.batchedLogger(cmd, cmd.ErrOrStderr()); err != nil {
				return err
			}
			defer sink.Close()
			if err := f.Validate(); err != nil {
				return exitCode(2, fmt.Errorf("edge forward: %w", err))
			}
			f.ListenFunc = up.Listen
			f.HandedOff = up.HandedOff
			// started by an upgrade: what the admin API changed in the old process goes on here
			if f.Inherit, err = up.inheritedAdmin(edge.ReadHandoff); err != nil {
				return exitCode(1, fmt.Errorf("edge forward: %w", err))
			}
			reserveSpareP(edge.EventLoopsAvailable, &f.Loops, edgeFreeCPUs) // this process runs one edge
			if err := f.Open(); err != nil {
				return exitCode(1, err)
			}
			ctx, stop := stopsignal.Context(cmd.Context())
			defer stop()
			up.handAdminOver(f.Admin != "", f.PrepareHandoff, f.HandoffFailed)
			ctx = up.UpgradeOnHangup(ctx, f.Logger)
			if err := up.Ready(); err != nil {
				return exitCode(1, err)
			}
			return f.Serve(ctx)
		},
	}
	d := config.Defaults().Edge
	fl := cmd.Flags()
	fl.StringVar(&f.Listen, "listen", "", "address clients connect to, e.g. 0.0.0.0:443 (required)")
	fl.StringArrayVar(&f.Origins, "origin", nil, "an upstream host:port (the origin, or an LB instance); repeatable (required; config: edge.origins)")
	fl.StringVar(&f.Check.Path, "check-path", d.UpstreamCheck.Path, "HTTP path of the upstream check, sent after a PROXY v2 header, e.g. /_lb/health; empty: TCP connect (config: edge.upstream_check.path)")
	fl.DurationVar(&f.Check.Interval, "check-interval", d.UpstreamCheck.Interval, "time between two checks of an upstream (config: edge.upstream_check.interval)")
	fl.DurationVar(&f.Check.Timeout, "check-timeout", d.UpstreamCheck.Timeout, "how long one check may take, below --check-interval (config: edge.upstream_check.timeout)")
	fl.IntVar(&f.Check.HealthyThreshold, "healthy-threshold", d.UpstreamCheck.HealthyThreshold, "good checks in a row that put an upstream in rotation (config: edge.upstream_check.healthy_threshold)")
	fl.IntVar(&f.Check.UnhealthyThreshold, "unhealthy-threshold", d.UpstreamCheck.UnhealthyThreshold, "failed checks in a row that take it out (config: edge.upstream_check.unhealthy_threshold)")
	fl.StringVar(&f.Health, "health", "", "TCP health listener (accepts while an upstream is in rotation, refuses otherwise and once draining); default none")
	fl.StringVar(&f.Metrics, "metrics", "", "HTTP listener serving GET /metrics (Prometheus), e.g. 127.0.0.1:9102; default none")
	fl.StringVar(&f.Admin, "admin", "", "admin API listener host:port (GET/PUT/POST .../drain/DELETE /admin/upstreams); default none")
	edgeAdminTokenSource.register(fl, "bearer token of the admin API (required when --admin is not on loopback)")
	fl.DurationVar(&f.Drain, "drain", d.Drain, "after SIGTERM: keep forwarding this long while health refuses (config: edge.drain)")
	fl.DurationVar(&f.Shutdown, "shutdown", edge.DefaultShutdown, "after the drain: how long open connections get before they are closed")
	fl.DurationVar(&f.IdleTimeout, "idle-timeout", edge.DefaultIdleTimeout, "close a connection silent in both directions this long")
	fl.IntVar(&f.MaxConns, "max-conns", edge.DefaultMaxConns, "client connections open at once at most; one more is closed at once (counted as over_cap in /metrics)")
	fl.DurationVar(&f.ConnectTimeout, "connect-timeout", edge.DefaultConnectTimeout, "timeout of the dial to an upstream")
	fl.StringVarP(&configPath, "config", "c", "", "config file (YAML): its edge.* values are the defaults of the flags above")
	logs = addLogFlags(cmd, false)
	up = withHandoff(cmd, "edge")
	return cmd
}

// edgeForwardConfig takes, with --config, every edge.* value for the flags left unset
// (edge.Forwarder.ApplyConfig); without it the flags' defaults are the shipped config's already.
func edgeForwardConfig(cmd *cobra.Command, configPath string, f *edge.Forwarder) error {
	if configPath == "" {
		return nil
	}
	cfg, err := config.Load(configPath)
	if err != nil {
		return exitCode(2, err)
	}
	if err := f.ApplyConfig(cfg.Edge, cmd.Flags().Changed); err != nil {
		return exitCode(2, fmt.Errorf("config %s: %w", configPath, err))
	}
	return nil
}

func newEdgeOriginCmd() *cobra.Command {
	var (
		r       edge.Relay
		trusted []string
	)
	var logs *logFlags // set below, with the flags
	cmd := &cobra.Command{
		Use:   "origin --listen ADDR --to HOST:PORT [--trusted CIDR]... [flags]",
		Short: "Accept edge connections, strip their PROXY header, relay to the local server",
		Long: `Accept on --listen, sniff the first bytes of each connection: a PROXY v2 (or v1) header is
parsed and stripped, anything else passes through untouched. Then dial --to and copy bytes both
ways. A header with the right signature and a bad body, or from a peer outside --trusted, closes
the connection with a log line; without --trusted no peer may send one (as agent-server without
--trusted and lb without --accept-proxy-from). One log line per connection when it closes, with claimed (the
header's client), measured (the socket's peer) and inner (the local address the server sees as
its peer, to match the server's own logs). A connection that sends nothing is not logged.`,
		Example: `  zero502 edge origin --listen :443 --to 127.0.0.1:9443 --trusted 10.0.0.0/8
  zero502 edge origin --listen :443 --to 127.0.0.1:9443 --trusted 203.0.113.7,203.0.113.8`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if err := requireFlags(cmd, "listen", "to"); err != nil {
				return err
			}
			var err error
			if r.Trusted, err = origin.ParseTrusted(trusted); err != nil {
				return exitCode(2, fmt.Errorf("edge origin: %w", err))
			}
			var sink *logsink.Sink // a line per connection: batched
			if r.Logger, sink, err = logs.batchedLogger(cmd, cmd.ErrOrStderr()); err != nil {
				return err
			}
			defer sink.Close()
			if err := r.Validate(); err != nil {
				return exitCode(2, fmt.Errorf("edge origin: %w", err))
			}
			if err := r.Open(); err != nil {
				return exitCode(1, err)
			}
			ctx, stop := stopsignal.Context(cmd.Context())
			defer stop()
			return r.Serve(ctx)
		},
	}
	fl := cmd.Flags()
	fl.StringVar(&r.Listen, "listen", "", "address the edges connect to, e.g. :443 (required)")
	fl.StringVar(&r.Backend, "to", "", "local server host:port every connection is relayed to (required)")
	fl.StringVar(&r.Metrics, "metrics", "", "HTTP listener serving GET /metrics (Prometheus), e.g. 127.0.0.1:9103; default none")
	fl.StringSliceVar(&trusted, "trusted", nil, "edges allowed to send a PROXY header (IPs or CIDRs, repeatable or comma-separated); default none: a header from any peer closes its connection")
	fl.DurationVar(&r.HeaderTimeout, "header-timeout", origin.DefaultHeaderTimeout, "wait this long for a connection's first bytes before passing it on without a header")
	fl.DurationVar(&r.ConnectTimeout, "connect-timeout", edge.DefaultConnectTimeout, "timeout of the dial to --to")
	fl.DurationVar(&r.IdleTimeout, "idle-timeout", edge.DefaultIdleTimeout, "close a connection silent in both directions this long")
	fl.IntVar(&r.MaxConns, "max-conns", edge.DefaultMaxConns, "connections open at once at most; one more is closed at once (counted as over_cap in /metrics)")
	fl.DurationVar(&r.Drain, "drain", 0, "after SIGTERM: keep accepting this long (0: the origin is not in any rotation)")
	fl.DurationVar(&r.Shutdown, "shutdown", edge.DefaultShutdown, "after the drain: how long open connections get before they are closed")
	logs = addLogFlags(cmd, false)
	return cmd
}
