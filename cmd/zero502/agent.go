package main

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/zero502/zero502/infra/adminapi"
	"github.com/zero502/zero502/infra/agent"
	"github.com/zero502/zero502/infra/edgepick"
	"github.com/zero502/zero502/infra/origin"
	"github.com/zero502/zero502/infra/stopsignal"
)

// newAgentCmd runs the agent session (package infra/agent): one long-lived TLS session to the
// origin through the chosen edge, with the failback watcher beside it.
func newAgentCmd() *cobra.Command {
	var (
		name, serverName, caFile, certFile, keyFile, state string
		addrs                                              []string
		every, budget, interval                            time.Duration
		outbox                                             int
		insecure                                           bool
	)
	var logs *logFlags // set below, with the flags
	cmd := &cobra.Command{
		Use:   "agent (--name HOST:PORT | --addrs IP:PORT,...) --server-name NAME [--ca FILE] [--cert FILE --key FILE] --state FILE",
		Short: "Hold a session to the origin through the best edge; fail over, fail back, replay what was not acknowledged",
		Long: `Choose an edge the way 'zero502 edgepick' does (the state file first, else a full TLS handshake
to every address of --name's A set), dial the choice first, then the rest of the ranking, or the
name through the system resolver when there is nothing to choose, and hold one TLS session. Each
line read from stdin, and a "tick N" every --every, is a message with its own id; it waits in a
bounded outbox (--outbox) until the server acknowledges it and is replayed after a reconnect. A
line whose frame would be over 1 MiB is dropped with a warning, and the next lines are read on.

The failback watcher runs beside the session (a fully jittered --interval, a streak of two, 20 ms
and 25 %). A switch ends the session cleanly and the next dial goes to the new edge at once; a
real failure backs off exponentially with full jitter, up to a minute. Logs are JSON on stderr.
Exit status: 0 after SIGTERM or Ctrl-C, 2 bad flags.`,
		Example: `  zero502 agent --name edge.example.com:443 --server-name origin.example.com --ca ca.pem --state /var/lib/agent/edgepick.json
  zero502 agent --addrs 127.0.0.1:8443,127.0.0.1:8444 --server-name localhost --ca ca.pem --state /tmp/agent.json --every 1s`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			log, err := logs.logger(cmd, cmd.ErrOrStderr())
			if err != nil {
				return err
			}
			p := &edgepick.Picker{StatePath: state, Logger: log}
			target, err := edgepick.ParseTarget(name, addrs, serverName, insecure)
			if err != nil {
				return exitCode(2, fmt.Errorf("agent: %w", err))
			}
			p.Name, p.Addrs = target.Name, target.Addrs
			if err := requireFlags(cmd, "state"); err != nil {
				return err
			}
			conf, err := agent.ClientTLS(target.ServerName, caFile, certFile, keyFile, insecure)
			if err != nil {
				return exitCode(2, fmt.Errorf("agent: %w", err))
			}
			switch {
			case budget <= 0:
				return exitCode(2, fmt.Errorf("agent: --budget %s: must be more than 0, e.g. 3s", budget))
			case interval <= 0:
				return exitCode(2, fmt.Errorf("agent: --interval %s: must be more than 0, e.g. 5m", interval))
			case every < 0:
				return exitCode(2, fmt.Errorf("agent: --every %s: must be 0 (no ticks) or more", every))
			case outbox <= 0:
				return exitCode(2, fmt.Errorf("agent: --outbox %d: must be 1 or more messages", outbox))
			}
			p.Probe = edgepick.TLSProbe(conf, budget)
			a := &agent.Agent{Picker: p, TLS: conf, Outbox: agent.NewOutbox(outbox),
				Watcher: edgepick.Watcher{Interval: interval}}

			ctx, stop := stopsignal.Context(cmd.Context())
			defer stop()
			go agentFeed(ctx, a, cmd.InOrStdin(), every, log)
			_ = a.Run(ctx)
			log.Info("agent: stopped", "unacknowledged", a.Pending())
			return nil
		},
	}
	fl := cmd.Flags()
	fl.StringVar(&name, "name", "", "edge name host:port, resolved through the system resolver (its A set is the edge list)")
	fl.StringSliceVar(&addrs, "addrs", nil, "edge addresses IP:PORT instead of --name: no DNS (labs)")
	fl.StringVar(&serverName, "server-name", "", "name the origin's certificate is issued for (default: the host of --name)")
	fl.StringVar(&caFile, "ca", "", "PEM file of the CA that issued the origin's certificate (default: the system roots)")
	fl.StringVar(&certFile, "cert", "", "PEM client certificate, when the origin asks for one (with --key)")
	fl.StringVar(&keyFile, "key", "", "PEM key of --cert")
	fl.StringVar(&state, "state", "", "edge choice state file, kept across restarts (required)")
	fl.DurationVar(&every, "every", 0, "send a \"tick N\" message this often (0: only stdin lines)")
	fl.DurationVar(&budget, "budget", edgepick.DefaultBudget, "per-edge probe budget: TCP connect plus full TLS handshake")
	fl.DurationVar(&interval, "interval", edgepick.DefaultInterval, "failback rounds: each wait is drawn from [0, interval] (full jitter)")
	fl.IntVar(&outbox, "outbox", agent.DefaultOutbox, "messages waiting for an acknowledgement, at most")
	fl.BoolVar(&insecure, "insecure-skip-verify", false, "do not verify the origin's certificate (labs only)")
	logs = addLogFlags(cmd, false)
	return cmd
}

// agentFeed turns stdin lines and ticks into messages.
func agentFeed(ctx context.Context, a *agent.Agent, in io.Reader, every time.Duration, log *slog.Logger) {
	send := func(body string) {
		if id, err := a.Send(body); err != nil {
			log.Warn("agent: message dropped", "body", body, "err", err)
		} else {
			log.Debug("agent: message queued", "id", id, "bytes", len(body))
		}
	}
	go agentLines(ctx, in, send, log)
	if every <= 0 {
		return
	}
	t := time.NewTicker(every)
	defer t.Stop()
	for n := 1; ; n++ {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
			send(fmt.Sprintf("tick %d", n))
		}
	}
}

// agentLines sends every line of in (without its line ending) until in ends or ctx does. A line
// over agent.MaxFrame bytes could never be a message: it is dropped with a warning, without
// being held whole, and the lines after it are read on (a bufio.Scanner stops for good at
// its first line over 64 KiB).
func agentLines(ctx context.Context, in io.Reader, send func(string), log *slog.Logger) {
	br := bufio.NewReader(in)
	var (
		line []byte // the line read so far, while it is within the limit
		size int    // the line's length so far
	)
	for ctx.Err() == nil {
		chunk, err := br.ReadSlice('\n')
		ended := err == nil // chunk ends with the newline
		if ended {
			chunk = chunk[:len(chunk)-1]
		}
		size += len(chunk)
		if size <= agent.MaxFrame {
			line = append(line, chunk...)
		}
		if errors.Is(err, bufio.ErrBufferFull) {
			continue // the line goes on past the reader's buffer
		}
		switch {
		case size > agent.MaxFrame:
			log.Warn("agent: stdin line dropped: longer than a message can be; split it into smaller lines",
				"bytes", size, "limit_bytes", agent.MaxFrame)
		case ended || size > 0: // the last line may end without a newline
			send(string(bytes.TrimSuffix(line, []byte("\r"))))
		}
		line, size = line[:0], 0
		if err != nil {
			if !errors.Is(err, io.EOF) {
				log.Warn("agent: reading stdin failed; no more lines are sent", "err", err)
			}
			return
		}
	}
}

// newAgentServerCmd runs the echo/ack server agents hold their sessions to.
func newAgentServerCmd() *cobra.Command {
	var (
		listen, certFile, keyFile, clientCA string
		trusted                             []string
		dedup                               int
		anyClient                           bool
	)
	var logs *logFlags // set below, with the flags
	cmd := &cobra.Command{
		Use:   "agent-server --listen ADDR --cert FILE --key FILE --client-ca FILE|--no-client-cert [--trusted CIDR]...",
		Short: "Serve agent sessions: acknowledge every message, apply each id once, count the duplicates",
		Long: `The origin end of 'zero502 agent': accept TLS on --listen (directly, or from edges: a PROXY
header from --trusted edges is read and logged; one from any other peer, or from any peer when
--trusted is not given, closes the connection), apply every
message whose id is new to the dedup store (a log line) and acknowledge every message, saying
whether it was a duplicate: a replay after a reconnect is harmless. Agents must present a client
certificate chained to --client-ca; --no-client-cert accepts any, and only on a loopback --listen
and without --trusted: an edge on this host would relay clients from anywhere (labs). One log line per session with
the agent's claimed and measured address and its counts; the totals on exit.
Exit status: 0 after SIGTERM or Ctrl-C, 1 the listener failed, 2 bad flags.`,
		Example: `  zero502 agent-server --listen 127.0.0.1:9443 --cert origin.pem --key origin-key.pem --no-client-cert
  zero502 agent-server --listen :9443 --cert origin.pem --key origin-key.pem --client-ca agents-ca.pem --trusted 10.0.0.0/8`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if err := requireFlags(cmd, "listen", "cert", "key"); err != nil {
				return err
			}
			switch {
			case clientCA == "" && !anyClient:
				return exitCode(2, fmt.Errorf("agent-server: --client-ca is required: the CA agents' client certificates must chain to; "+
					"without it anyone who reaches --listen could send messages that are applied (pass --no-client-cert to accept any client, labs only)"))
			case clientCA != "" && anyClient:
				return exitCode(2, fmt.Errorf("agent-server: --client-ca %s and --no-client-cert: give one of them", clientCA))
			case anyClient && len(trusted) > 0:
				return exitCode(2, fmt.Errorf("agent-server: --no-client-cert with --trusted %s: an edge relays clients from anywhere, "+
					"so through an edge on this host a client on the internet arrives from loopback and could send messages that are applied; "+
					"give --client-ca FILE with --trusted, or drop --trusted (labs: agents connect to --listen directly)", strings.Join(trusted, ",")))
			case anyClient && !adminapi.Loopback(listen):
				return exitCode(2, fmt.Errorf("agent-server: --no-client-cert with --listen %s: not on loopback, so anyone who reaches it "+
					"could send messages that are applied; --no-client-cert is for labs on loopback only (e.g. --listen 127.0.0.1:9443): "+
					"give --client-ca FILE for any other address", listen))
			}
			log, err := logs.logger(cmd, cmd.ErrOrStderr())
			if err != nil {
				return err
			}
			conf, err := agent.ServerTLS(certFile, keyFile, clientCA)
			if err != nil {
				return exitCode(2, fmt.Errorf("agent-server: %w", err))
			}
			tr, err := origin.ParseTrusted(trusted)
			if err != nil {
				return exitCode(2, fmt.Errorf("agent-server: %w", err))
			}
			if dedup <= 0 {
				return exitCode(2, fmt.Errorf("agent-server: --dedup %d: must be 1 or more ids (more than any agent's --outbox)", dedup))
			}
			ln, err := net.Listen("tcp", listen)
			if err != nil {
				return exitCode(1, fmt.Errorf("agent-server: listen on --listen %s: %w", listen, err))
			}
			s := &agent.Server{Listener: ln, TLS: conf, Dedup: agent.NewDedupStore(dedup), Logger: log, Trusted: tr,
				Apply: func(f agent.Frame) { log.Info("agent-server: applied", "id", f.ID, "body", f.Body) }}
			ctx, stop := stopsignal.Context(cmd.Context())
			defer stop()
			log.Info("agent-server: serving", "listen", ln.Addr().String())
			err = s.Serve(ctx)
			c := s.Counts()
			log.Info("agent-server: stopped", "sessions", c.Sessions, "applied", c.Applied, "duplicates", c.Duplicates, "refused", c.Refused)
			if err != nil && !errors.Is(err, context.Canceled) {
				return exitCode(1, err)
			}
			return nil
		},
	}
	fl := cmd.Flags()
	fl.StringVar(&listen, "listen", "", "address agents (through the edges) connect to, e.g. :9443 (required)")
	fl.StringVar(&certFile, "cert", "", "PEM certificate of the origin (required)")
	fl.StringVar(&keyFile, "key", "", "PEM key of --cert (required)")
	fl.StringVar(&clientCA, "client-ca", "", "PEM CA that agents' client certificates must chain to (required unless --no-client-cert)")
	fl.BoolVar(&anyClient, "no-client-cert", false, "accept agents without a client certificate (labs: only with a loopback --listen and no --trusted)")
	fl.StringSliceVar(&trusted, "trusted", nil, "edges allowed to send a PROXY header (IPs or CIDRs); default none: a header closes the connection")
	fl.IntVar(&dedup, "dedup", agent.DefaultDedup, "message ids remembered for deduplication")
	logs = addLogFlags(cmd, false)
	return cmd
}
