package mesh

import (
	"fmt"
	"io"
	"strings"
	"text/tabwriter"
	"time"
)

// WriteText renders a snapshot for people: a short table first (one line per server), the route,
// then each server's reason.
func (s Snapshot) WriteText(w io.Writer) error {
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	fmt.Fprintf(tw, "SERVER\tSTATE\tIN ROTATION\tCONDITIONS\tFAILING\tLOAD\tCONNS\tSVC LATENCY\tMETRICS AGE\n")
	for _, v := range s.Verdicts {
		name := v.Server
		if v.Checker {
			name += " (checker)"
		}
		conds := make([]string, 0, len(v.Conditions))
		for _, c := range v.Conditions {
			conds = append(conds, string(c))
		}
		fmt.Fprintf(tw, "%s\t%s\t%v\t%s\t%s\t%s\n", name, v.State, v.InRotation, orDash(strings.Join(conds, ",")),
			fmt.Sprintf("%d of %d (quorum %d)", len(v.Failing), len(v.Failing)+len(v.Seeing), v.Quorum), metricsText(v))
	}
	if err := tw.Flush(); err != nil {
		return err
	}
	route := strings.Join(s.Route.Servers, ", ")
	if s.Route.Fallback {
		route += " (fallback: never an empty route)"
	}
	fmt.Fprintf(w, "\nroute: %s\n  %s\n\nas seen by %s at %s:\n", orDash(route), s.Route.Reason, s.Server, s.At.Format("2006-01-02 15:04:05Z07:00"))
	for _, v := range s.Verdicts {
		if _, err := fmt.Fprintf(w, "  %s: %s\n", v.Server, v.Reason); err != nil {
			return err
		}
	}
	return nil
}

func orDash(s string) string {
	if s == "" {
		return "-"
	}
	return s
}

// ParsePeers reads peers written as name=host:port, e.g. from `--peers b=10.0.0.6:7946,c=...`.
func ParsePeers(entries []string) (map[string]string, error) {
	peers := make(map[string]string, len(entries))
	for _, e := range entries {
		name, addr, ok := strings.Cut(strings.TrimSpace(e), "=")
		if !ok || name == "" || addr == "" {
			return nil, fmt.Errorf("--peers %q: must be name=host:port, e.g. b=10.0.0.6:7946", e)
		}
		if _, dup := peers[name]; dup {
			return nil, fmt.Errorf("--peers: %q is listed twice; names must be unique", name)
		}
		peers[name] = addr
	}
	return peers, nil
}

// metricsText is a verdict's metrics columns: load, connections, service latency and age, with
// the "stale" badge when they missed two rounds.
func metricsText(v Verdict) string {
	if v.Metrics == nil {
		return "-\t-\t-\t-"
	}
	age := time.Duration(v.MetricsAge * float64(time.Second)).Round(time.Millisecond).String()
	if v.MetricsStale {
		age += " [stale]"
	}
	return fmt.Sprintf("%.2f\t%d\t%s\t%s", v.Metrics.Load1, v.Metrics.Connections,
		time.Duration(v.Metrics.ServiceLatency*float64(time.Second)).Round(time.Microsecond), age)
}
