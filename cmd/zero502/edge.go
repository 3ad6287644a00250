package main

import (
	"fmt"
	"time"

	"github.com/spf13/cobra"

	"github.com/zero502/zero502/infra"
	"github.com/zero502/zero502/infra/edge"
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
		f      edge.Forwarder
		config string
	)
	var logs *logFlags // set below, with the flags
	cmd := &cobra.Command{
		Use:   "forward --listen ADDR --origin HOST:PORT [flags]",
		Short: "Forward TCP to the origin behind a PROXY v2 header, draining on SIGTERM",
		Long: `Accept TCP on --listen, dial --origin, write a PROXY protocol v2 header (source: the client's
address; destination: the address it connected to) and copy bytes both ways, passing half-closes
on, until both directions end or nothing moves either way for --idle-timeout. If the origin cannot
be reached within --connect-timeout, the client connection is closed (and logged).

On SIGTERM the edge drains: for --drain it keeps forwarding and accepting while --health (a TCP
listener the DNS health checker connects to) refuses connections, long enough for the edge to
leave the A set (edge.drain, invariant I6: drain > dns_ttl + check_interval × unhealthy_threshold);
then it stops accepting, gives open connections --shutdown and closes the rest. With --config,
--drain defaults to the config's edge.drain.

On SIGHUP the edge hands its listening sockets (--listen, --health, --metrics) to a new process
of its executable as it is on disk, with the same arguments, and drains as on SIGTERM once that
one forwards; nothing is refused meanwhile. If the new process fails, this one keeps forwarding.
zero502 lb upgrade --pid-file FILE (this command's --pid-file) sends it and waits for the outcome.`,
		Example: `  zero502 edge forward --listen 0.0.0.0:443 --origin 10.0.0.5:443 --health 0.0.0.0:8443
  zero502 edge forward --listen 127.0.0.1:8443 --origin 10.0.0.5:443 --drain 30s --shutdown 10s
  zero502 edge forward --config prod.yaml --listen :443 --origin 10.0.0.5:443`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if config != "" && !cmd.Flags().Changed("drain") {
				cfg, err := infra.Load(config)
				if err != nil {
					return exitCode(2, err)
				}
				if !cfg.Edge.Configured() {
					return exitCode(2, fmt.Errorf("config %s: edge.drain is %s, which means no edge layer; set edge.drain "+
						"(longer than edge.dns_ttl + edge.check_interval × edge.unhealthy_threshold, invariant I6) or pass --drain",
						config, cfg.Edge.Drain))
				}
				f.Drain = cfg.Edge.Drain
			}
			if err := requireFlags(cmd, "listen", "origin"); err != nil {
				return err
			}
			var err error
			if f.Logger, err = logs.logger(cmd, cmd.ErrOrStderr()); err != nil {
				return err
			}
			if err := f.Validate(); err != nil {
				return exitCode(2, fmt.Errorf("edge forward: %w", err))
			}
			f.ListenFunc = up.Listen
			if err := f.Open(); err != nil {
				return exitCode(1, err)
			}
			ctx, stop := stopsignal.Context(cmd.Context())
			defer stop()
			ctx = up.UpgradeOnHangup(ctx, f.Logger)
			if err := up.Ready(); err != nil {
				return exitCode(1, err)
			}
			return f.Serve(ctx)
		},
	}
	fl := cmd.Flags()
	fl.StringVar(&f.Listen, "listen", "", "address clients connect to, e.g. 0.0.0.0:443 (required)")
	fl.StringVar(&f.Origin, "origin", "", "origin host:port every connection is forwarded to (required)")
	fl.StringVar(&f.Health, "health", "", "TCP health listener (accepts while forwarding, refuses once draining); default none")
	fl.StringVar(&f.Metrics, "metrics", "", "HTTP listener serving GET /metrics (Prometheus), e.g. 127.0.0.1:9102; default none")
	fl.DurationVar(&f.Drain, "drain", 30*time.Second, "after SIGTERM: keep forwarding this long while health refuses (config default: edge.drain)")
	fl.DurationVar(&f.Shutdown, "shutdown", 10*time.Second, "after the drain: how long open connections get before they are closed")
	fl.DurationVar(&f.IdleTimeout, "idle-timeout", edge.DefaultIdleTimeout, "close a connection silent in both directions this long")
	fl.DurationVar(&f.ConnectTimeout, "connect-timeout", edge.DefaultConnectTimeout, "timeout of the dial to the origin")
	fl.StringVarP(&config, "config", "c", "", "config file (YAML): --drain defaults to its edge.drain")
	logs = addLogFlags(cmd, false)
	up = withHandoff(cmd, "edge")
	return cmd
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
the connection with a log line. One log line per connection when it closes, with claimed (the
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
			if r.Trusted, err = edge.ParseTrusted(trusted); err != nil {
				return exitCode(2, fmt.Errorf("edge origin: %w", err))
			}
			if r.Logger, err = logs.logger(cmd, cmd.ErrOrStderr()); err != nil {
				return err
			}
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
	fl.StringSliceVar(&trusted, "trusted", nil, "edges allowed to send a PROXY header (IPs or CIDRs, repeatable or comma-separated); default any peer")
	fl.DurationVar(&r.HeaderTimeout, "header-timeout", edge.DefaultHeaderTimeout, "wait this long for a connection's first bytes before passing it on without a header")
	fl.DurationVar(&r.ConnectTimeout, "connect-timeout", edge.DefaultConnectTimeout, "timeout of the dial to --to")
	fl.DurationVar(&r.IdleTimeout, "idle-timeout", edge.DefaultIdleTimeout, "close a connection silent in both directions this long")
	fl.DurationVar(&r.Drain, "drain", 0, "after SIGTERM: keep accepting this long (0: the origin is not in any rotation)")
	fl.DurationVar(&r.Shutdown, "shutdown", 10*time.Second, "after the drain: how long open connections get before they are closed")
	logs = addLogFlags(cmd, false)
	return cmd
}

// requireFlags is a bad-flag error (exit 2) naming the first of the flags left empty.
func requireFlags(cmd *cobra.Command, names ...string) error {
	for _, name := range names {
		if v := cmd.Flags().Lookup(name).Value.String(); v == "" || v == "[]" {
			return exitCode(2, fmt.Errorf("%s: --%s is required (see --help)", cmd.CommandPath(), name))
		}
	}
	return nil
}
