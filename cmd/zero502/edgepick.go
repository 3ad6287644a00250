package main

import (
	"crypto/tls"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"net/netip"
	"text/tabwriter"
	"time"

	"github.com/spf13/cobra"

	"github.com/zero502/zero502/infra/edgepick"
	"github.com/zero502/zero502/infra/stopsignal"
)

// newEdgePickCmd shows the agent's edge choice (package infra/edgepick): resolve the edges' A
// set, measure each with a full TLS handshake, print the ranking and the choice.
func newEdgePickCmd() *cobra.Command {
	var (
		name, serverName, state string
		addrs                   []string
		asJSON, insecure        bool
		budget, maxAge          time.Duration
	)
	cmd := &cobra.Command{
		Use:   "edgepick (--name HOST:PORT | --addrs IP:PORT,...) [flags]",
		Short: "Measure the edges with a full TLS handshake and show the ranking and the agent's choice",
		Long: `Resolve --name through the system resolver (its A set is the list of edges) or take --addrs,
probe every edge in parallel with a full TLS handshake (not a TCP connect: an edge that accepts
and forwards nothing answers a connect like a working one), each within --budget, and rank them
by handshake time. Each row has two numbers from one socket: connect (the round trip to the edge)
and handshake (through the edge to the origin and back); health depends on the second.

With --state, a state file measured from the same set and younger than --max-age is read instead
of probing (as an agent's restart does), and a new measurement is written to it atomically.
Fewer than two candidates: nothing to choose, nothing probed.

Exit status: 0 a choice (or nothing to choose), 1 no choice (DNS failed, no edge finished a
handshake), 2 bad flags.`,
		Example: `  zero502 edgepick --name edge.example.com:443
  zero502 edgepick --name edge.example.com:443 --server-name origin.example.com --state /var/lib/agent/edgepick.json
  zero502 edgepick --addrs 127.0.0.1:8443,127.0.0.1:8444 --insecure-skip-verify --json`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			p := &edgepick.Picker{StatePath: state, MaxAge: maxAge,
				Logger: slog.New(slog.NewTextHandler(cmd.ErrOrStderr(), &slog.HandlerOptions{Level: slog.LevelWarn}))}
			target, err := edgepick.ParseTarget(name, addrs, serverName, insecure)
			if err != nil {
				return exitCode(2, fmt.Errorf("edgepick: %w", err))
			}
			p.Name, p.Addrs = target.Name, target.Addrs
			if budget <= 0 {
				return exitCode(2, fmt.Errorf("edgepick: --budget %s: must be more than 0, e.g. 3s", budget))
			}
			if maxAge < 0 {
				return exitCode(2, fmt.Errorf("edgepick: --max-age %s: must be 0 (the default, %s) or more", maxAge, edgepick.DefaultMaxAge))
			}
			conf := &tls.Config{ServerName: target.ServerName, InsecureSkipVerify: insecure, MinVersion: tls.VersionTLS12}
			p.Probe = edgepick.TLSProbe(conf, budget)

			ctx, stop := stopsignal.Context(cmd.Context())
			defer stop()
			c, ok := p.Choose(ctx)
			if asJSON {
				err = writeEdgePickJSON(cmd.OutOrStdout(), name, c)
			} else {
				writeEdgePickText(cmd.OutOrStdout(), name, state, c)
			}
			if err != nil {
				return err
			}
			if !ok && !c.Skipped {
				return exitCode(1, nil)
			}
			return nil
		},
	}
	cmd.AddCommand(newEdgePickSurveyCmd())
	fl := cmd.Flags()
	fl.StringVar(&name, "name", "", "edge name host:port, resolved through the system resolver (its A set is the edge list)")
	fl.StringSliceVar(&addrs, "addrs", nil, "edge addresses IP:PORT (comma-separated or repeated) instead of --name: no DNS")
	fl.StringVar(&serverName, "server-name", "", "name the origin's certificate is checked against (default: the host of --name)")
	fl.StringVar(&state, "state", "", "agent state file: read when fresh for the same set, written after a measurement")
	fl.BoolVar(&asJSON, "json", false, "print the result as JSON")
	fl.BoolVar(&insecure, "insecure-skip-verify", false, "do not verify the origin's certificate (labs only)")
	fl.DurationVar(&budget, "budget", edgepick.DefaultBudget, "per-edge probe budget: TCP connect plus full TLS handshake")
	fl.DurationVar(&maxAge, "max-age", edgepick.DefaultMaxAge, "a state file measured longer ago than this is measured again")
	return cmd
}

// edgePickJSON is the --json output.
type edgePickJSON struct {
	Name       string            `json:"name,omitempty"`
	Set        edgepick.Set      `json:"set"`
	Ranking    edgepick.Ranking  `json:"ranking"`
	Chosen     *netip.AddrPort   `json:"chosen,omitempty"`
	FromState  bool              `json:"from_state"`
	MeasuredAt *time.Time        `json:"measured_at,omitempty"`
	Skipped    bool              `json:"skipped,omitempty"`
	NoChoice   string            `json:"no_choice,omitempty"`
	Verdicts   map[string]string `json:"verdicts,omitempty"`
}

func writeEdgePickJSON(w io.Writer, name string, c edgepick.Choice) error {
	out := edgePickJSON{Name: name, Set: c.Set, Ranking: c.Ranking, FromState: c.FromState,
		Skipped: c.Skipped, NoChoice: c.NoChoice}
	if out.Set == nil {
		out.Set = edgepick.Set{}
	}
	if out.Ranking == nil {
		out.Ranking = edgepick.Ranking{}
	}
	if c.Addr.IsValid() {
		out.Chosen = &c.Addr
	}
	if !c.MeasuredAt.IsZero() {
		out.MeasuredAt = &c.MeasuredAt
	}
	for _, m := range c.Ranking {
		if out.Verdicts == nil {
			out.Verdicts = map[string]string{}
		}
		out.Verdicts[m.Addr.String()] = m.Verdict()
	}
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	return enc.Encode(out)
}

func writeEdgePickText(w io.Writer, name, state string, c edgepick.Choice) {
	what := name
	if what == "" {
		what = "--addrs"
	}
	switch {
	case c.FromState:
		fmt.Fprintf(w, "edgepick %s: %d candidates, read from %s (measured %s, nothing probed)\n",
			what, len(c.Set), state, c.MeasuredAt.Format(time.RFC3339))
	case len(c.Ranking) > 0:
		fmt.Fprintf(w, "edgepick %s: %d candidates, measured now\n", what, len(c.Set))
	default:
		fmt.Fprintf(w, "edgepick %s: %d candidates %v\n", what, len(c.Set), c.Set)
	}
	if len(c.Ranking) > 0 {
		tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
		fmt.Fprintln(tw, "RANK\tEDGE\tCONNECT\tHANDSHAKE\tVERDICT")
		for i, m := range c.Ranking {
			fmt.Fprintf(tw, "%d\t%s\t%s\t%s\t%s\n", i+1, m.Addr, edgePickDur(m.Connect), edgePickDur(m.Handshake), m.Verdict())
		}
		_ = tw.Flush()
	}
	if c.Addr.IsValid() {
		fmt.Fprintf(w, "choice: %s\n", c.Addr)
	} else {
		fmt.Fprintf(w, "no choice: %s (an agent connects as it did without edgepick)\n", c.NoChoice)
	}
	for _, m := range c.Ranking {
		if m.Err != nil {
			fmt.Fprintf(w, "  %v\n", m.Err)
		}
	}
}

func edgePickDur(d time.Duration) string {
	if d <= 0 {
		return "-"
	}
	return d.Round(time.Microsecond).String()
}
