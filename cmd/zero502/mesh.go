package main

import (
	"encoding/json"
	"fmt"
	"net"
	"net/netip"
	"os"
	"strconv"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/zero502/zero502/infra/mesh"
	"github.com/zero502/zero502/infra/stopsignal"
)

// newMeshCmd runs mesh monitoring (package infra/mesh): servers report about themselves, probe
// each other, and derive reachability verdicts by a vote.
func newMeshCmd() *cobra.Command {
	cmd := &cobra.Command{
		Use:   "mesh",
		Short: "Mesh monitoring: reachability verdicts from self-reports and mutual probes",
		Long: `Every server of a mesh reports about itself and probes every neighbour the way a client
would. A server leaves rotation when its own report says it is unhealthy (unavailable), or when a
quorum of reliable witnesses (or a checker server) fail to reach it for a streak of probes in a
row (unreachable). One failed probe means nothing; a witness that cannot see half of its other
neighbours is ignored; a failing pair without a quorum only marks the entry point; silence is not
a verdict; a route is never empty; everything heals by itself.

  zero502 mesh serve      on each server
  zero502 mesh verdicts   ask any server for its view
  zero502 mesh lb-sync    make zero502 lb take its backends from the route`,
	}
	cmd.AddCommand(newMeshServeCmd(), newMeshVerdictsCmd(), newMeshLBSyncCmd())
	return cmd
}

func newMeshServeCmd() *cobra.Command {
	var (
		n               mesh.Node
		peers           []string
		peerServices    []string
		service, source string
		al              alertFlags
	)
	th := mesh.DefaultThresholds()
	var logs *logFlags // set below, with the flags
	cmd := &cobra.Command{
		Use:   "serve --name NAME --listen ADDR --peers NAME=HOST:PORT,... [--checkers NAME,...] [flags]",
		Short: "Run one mesh server: probe the peers, exchange reports, serve the verdicts",
		Long: `Listen on --listen (HTTP): POST /mesh/bulletin takes a peer's report and probes, GET
/mesh/verdicts serves this server's view, GET /route the never-empty rotation (addresses and why
each is in or out), GET /metrics Prometheus metrics with their age. Every --probe-every the server
checks its own --service (and --check-command), reports with its metrics (load, connections, the
check's latency), probes each peer's service the way a user's app would (its --peer-service as
configured here; a peer without one: its mesh /health), and sends its report and probes to every
peer. What a peer's bulletin claims never changes what is probed or routed to.

Bulletins are authenticated: each is signed (HMAC-SHA256) with the mesh's shared key, the same
on every server, from --key-file FILE (its first line) or $ZERO502_MESH_KEY, never argv. A
server takes a bulletin only from a peer of its --peers, sent from that peer's configured address
(bulletins leave from the --listen IP, or --source), stamped within --bulletin-window of its clock
and later than the last one taken from it; anything else is refused (401/403) and logged. Without
a key a server starts only when --listen and every peer are on loopback (a lab on one machine).

Checker servers are the ones the operator trusts to judge others: when a checker cannot reach an
ordinary server, that server's address is likely blocked (it leaves rotation without a quorum).
List them with --checkers NAME,... (each this server's --name or one of its --peers), the same
list on every server: each server judges with its own list, and a peer's bulletin claiming the
role is not believed. --checker is gone: list the checker servers on every node with --checkers.

Alerts (--alert-webhook-file or $ZERO502_ALERT_WEBHOOK, --alert-command) go out once per confirmed verdict change that needs a
person: unreachable (a quorum), blocked (a checker: change its IP), unavailable, recovered. Give
every server the same alert flags: only one of them (the first by name that is up) sends each. Verdict changes are JSON log lines on
stderr. --name must be the name the other servers give this one in their --peers.

Exit status: 0 after SIGTERM or Ctrl-C, 1 the listener failed, 2 bad flags (or no key off loopback).`,
		Example: `  zero502 mesh serve --name a --listen 10.0.0.5:7946 --key-file /etc/zero502/mesh.key --service tls://203.0.113.5:443 --check-command 'systemctl is-active --quiet openvpn' --peers b=10.0.0.6:7946,c=10.0.0.7:7946 --peer-service b=tls://203.0.113.6:443 --peer-service c=tls://203.0.113.7:443 --alert-webhook-file /etc/zero502/mesh-webhook
  zero502 mesh serve --name a --listen 127.0.0.1:7001 --peers b=127.0.0.1:7002,c=127.0.0.1:7003 --checkers a
  zero502 mesh serve --name b --listen 127.0.0.1:7002 --peers a=127.0.0.1:7001,c=127.0.0.1:7003 --checkers a --probe-every 2s --probe-timeout 1s
  zero502 mesh serve --name c --listen 127.0.0.1:7003 --peers a=127.0.0.1:7001,b=127.0.0.1:7002 --checkers a --probe-every 2s --probe-timeout 1s`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if err := requireFlags(cmd, "name", "listen", "peers"); err != nil {
				return err
			}
			var err error
			if n.Peers, err = mesh.ParsePeers(peers); err != nil {
				return exitCode(2, fmt.Errorf("mesh serve: %w", err))
			}
			if err := th.ValidateNamed(thresholdFlag); err != nil {
				return exitCode(2, fmt.Errorf("mesh serve: %w", err))
			}
			n.Thresholds = th
			if n.Logger, err = logs.logger(cmd, cmd.ErrOrStderr()); err != nil {
				return err
			}
			if service != "" {
				if n.Service, err = mesh.ParseService("service", service); err != nil {
					return exitCode(2, fmt.Errorf("mesh serve: %w", err))
				}
			}
			if n.PeerServices, err = parsePeerServices(peerServices); err != nil {
				return exitCode(2, fmt.Errorf("mesh serve: %w", err))
			}
			key, keySet, err := meshKeySource.resolve(cmd.Flags(), os.Getenv)
			if err != nil {
				return exitCode(2, err)
			}
			if keySet {
				n.Key = []byte(key)
			}
			if source != "" {
				if n.Source, err = netip.ParseAddr(source); err != nil {
					return exitCode(2, fmt.Errorf("mesh serve: --source %q: must be an IP address of this server, e.g. 10.0.0.5 (%v)", source, err))
				}
			}
			if n.Alerts, n.Tracker, err = al.build(n.Logger); err != nil {
				return exitCode(2, fmt.Errorf("mesh serve: %w", err))
			}
			// A zero duration would be taken as the Node's default (its zero value), not refused.
			for _, d := range []struct {
				flag  string
				value time.Duration
			}{{"--probe-every", n.ProbeEvery}, {"--probe-timeout", n.ProbeTimeout}, {"--bulletin-window", n.BulletinWindow}} {
				if d.value == 0 {
					return exitCode(2, fmt.Errorf("mesh serve: %s %s: must be above 0 (leave the flag out for its default)", d.flag, d.value))
				}
			}
			if err := n.Validate(); err != nil {
				return exitCode(2, fmt.Errorf("mesh serve: %w", err))
			}
			if err := n.Open(); err != nil {
				return exitCode(1, err)
			}
			ctx, stop := stopsignal.Context(cmd.Context())
			defer stop()
			if err := n.Serve(ctx); err != nil {
				return exitCode(1, err)
			}
			return nil
		},
	}
	fl := cmd.Flags()
	fl.StringVar(&n.Name, "name", "", "this server's name, as its peers list it (required)")
	fl.StringVar(&n.Listen, "listen", "", "HTTP address for /health and /mesh/*, e.g. 127.0.0.1:7001 (required)")
	fl.StringSliceVar(&peers, "peers", nil, "every other server as name=host:port, comma-separated or repeated (required)")
	fl.StringVar(&service, "service", "", "this server's real service as users reach it: tcp://, tls:// or http(s)://host:port[/path]; the self-report checks it (default: the mesh's own listener); the peers probe what their --peer-service says")
	fl.StringArrayVar(&peerServices, "peer-service", nil, "a peer's service as NAME=URL (its --service), repeatable: what this server probes and routes to for that peer (default: its mesh /health, and no address in the route)")
	meshKeySource.register(fl, "")
	fl.DurationVar(&n.BulletinWindow, "bulletin-window", mesh.DefaultBulletinWindow, "a bulletin stamped further than this from this server's clock is refused (replay, or clocks off)")
	fl.StringVar(&n.CheckCommand, "check-command", "", "local check run through sh -c each round, exit 0 = running, e.g. 'systemctl is-active --quiet openvpn'; sh and a script it names must be files only root or this user can change (refused otherwise), and it runs without the mesh's secrets in its environment")
	fl.StringVar(&source, "source", "", "local IP address probes leave from (default: chosen by the kernel)")
	al.register(cmd)
	fl.StringSliceVar(&n.Checkers, "checkers", nil, "the checker servers, comma-separated or repeated, each this server's --name or one of its --peers, the same list on every server: when a checker cannot reach an ordinary server, that server's address is likely blocked (a peer's claim to the role is ignored)")
	fl.DurationVar(&n.ProbeEvery, "probe-every", mesh.DefaultProbeEvery, "one round: probe every peer, report, send the bulletin")
	fl.DurationVar(&n.ProbeTimeout, "probe-timeout", mesh.DefaultProbeTimeout, "timeout of each probe and each bulletin (below --probe-every)")
	fl.IntVar(&th.FailStreak, "fail-streak", th.FailStreak, "failed probes in a row before a witness's vote counts (2 or more)")
	fl.IntVar(&th.HealStreak, "heal-streak", th.HealStreak, "successful probes in a row that end a failing streak")
	fl.IntVar(&th.Quorum, "quorum", th.Quorum, "reliable witnesses that must fail a server to make it unreachable (2 or more)")
	fl.Float64Var(&th.UnreliableShare, "unreliable-share", th.UnreliableShare, "a witness failing this share of its other neighbours is ignored")
	fl.DurationVar(&th.ReportStaleAfter, "report-stale", th.ReportStaleAfter, "a report older than this is silence (no data)")
	fl.DurationVar(&th.ProbeStaleAfter, "probe-stale", th.ProbeStaleAfter, "a witness's last probe older than this is silence")
	logs = addLogFlags(cmd, false)
	return cmd
}

// parsePeerServices reads the --peer-service values, NAME=URL each.
func parsePeerServices(values []string) (map[string]mesh.Service, error) {
	out := map[string]mesh.Service{}
	for _, v := range values {
		name, raw, ok := strings.Cut(v, "=")
		if !ok || name == "" {
			return nil, fmt.Errorf("--peer-service %q: write NAME=URL with NAME one of --peers, e.g. b=tls://203.0.113.6:443", v)
		}
		if _, dup := out[name]; dup {
			return nil, fmt.Errorf("--peer-service %q: %s's service is given twice; give one", v, name)
		}
		svc, err := mesh.ParseService("peer-service "+name, raw)
		if err != nil {
			return nil, err
		}
		out[name] = svc
	}
	return out, nil
}

// validPort says whether port is a port number from 1 to 65535.
func validPort(port string) bool {
	p, err := strconv.ParseUint(port, 10, 16)
	return err == nil && p > 0
}

// thresholdFlag names a mesh threshold by the flag of mesh serve that sets it.
func thresholdFlag(field string) string {
	flag := map[string]string{
		"FailStreak": "--fail-streak", "HealStreak": "--heal-streak", "Quorum": "--quorum",
		"UnreliableShare": "--unreliable-share", "ReportStaleAfter": "--report-stale", "ProbeStaleAfter": "--probe-stale",
	}[field]
	if flag == "" {
		return "threshold " + field
	}
	return flag
}

func newMeshVerdictsCmd() *cobra.Command {
	var (
		from    string
		asJSON  bool
		timeout time.Duration
	)
	cmd := &cobra.Command{
		Use:   "verdicts --from HOST:PORT [--json]",
		Short: "Print one mesh server's verdicts and route",
		Long: `Reads GET /mesh/verdicts from a running 'zero502 mesh serve' and prints a table (server,
state, in rotation, conditions, how many witnesses fail it of those with an opinion), the route,
then each verdict's reason naming the witnesses, their streaks and the quorum.

Exit status: 0 printed, 1 the server could not be read, 2 bad flags.`,
		Example: `  zero502 mesh verdicts --from 127.0.0.1:7001
  zero502 mesh verdicts --from 127.0.0.1:7001 --json`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if err := requireFlags(cmd, "from"); err != nil {
				return err
			}
			if host, port, err := net.SplitHostPort(from); err != nil || host == "" || strings.Contains(from, "/") || !validPort(port) {
				return exitCode(2, fmt.Errorf("mesh verdicts: --from %q: must be a mesh server's --listen address as host:port, e.g. 127.0.0.1:7001 (no http://: that is lb-sync's --from)", from))
			}
			if timeout <= 0 {
				return exitCode(2, fmt.Errorf("mesh verdicts: --timeout %s: must be above 0", timeout))
			}
			s, err := mesh.FetchSnapshot(from, timeout)
			if err != nil {
				return exitCode(1, err)
			}
			if asJSON {
				enc := json.NewEncoder(cmd.OutOrStdout())
				enc.SetIndent("", "  ")
				return enc.Encode(s)
			}
			return s.WriteText(cmd.OutOrStdout())
		},
	}
	cmd.Flags().StringVar(&from, "from", "", "a mesh server's --listen address (required)")
	cmd.Flags().BoolVar(&asJSON, "json", false, "print the snapshot as JSON")
	cmd.Flags().DurationVar(&timeout, "timeout", 5*time.Second, "how long to wait for the answer")
	return cmd
}
