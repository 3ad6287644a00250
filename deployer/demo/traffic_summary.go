package demo

import (
	"fmt"
	"io"
	"sort"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/zero502/zero502/deployer/measure"
)

// WriteTrafficSummary prints one traffic-layer run for people: what the client saw through the
// whole chain, each stage with every host's handshake timeline, the versions, the verdict.
func WriteTrafficSummary(w io.Writer, r *TrafficResult) {
	m := "with the drain handshake"
	if r.Naive {
		m = "naive (no drain)"
	}
	fmt.Fprintf(w, "\nzero502 demo --traffic-layer: client → DNS → 2 edges → 2 LB instances → 3 apps, every tier rolled %s → %s, %s\n\n", From, To, m)
	if r.Load != nil {
		r.Load.WriteTable(w)
	}
	for _, s := range r.Stages {
		fmt.Fprintf(w, "\n%s: %s (+%.2fs → +%.2fs)\n", s.Tier, s.What, s.From.Seconds(), s.To.Seconds())
		if len(s.Marks) == 0 {
			continue
		}
		tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
		fmt.Fprintln(tw, "  HOST\tTOOK\tTIMELINE (seconds into the load)")
		for _, h := range s.Marks {
			fmt.Fprintf(tw, "  %s\t%s\t%s\n", h.Host, h.Duration.Round(time.Millisecond), timeline(h))
		}
		tw.Flush()
	}
	hosts := make([]string, 0, len(r.Versions))
	for h := range r.Versions {
		hosts = append(hosts, h)
	}
	sort.Strings(hosts)
	parts := make([]string, len(hosts))
	for i, h := range hosts {
		parts[i] = h + " " + r.Versions[h]
	}
	fmt.Fprintf(w, "\nversions: %s\ntook %s\n%s\n", strings.Join(parts, ", "), r.Took.Round(100*time.Millisecond), trafficVerdict(r))
}

func trafficVerdict(r *TrafficResult) string {
	switch {
	case r.Error != "":
		return "RESULT: the demo did not run through: " + r.Error
	case r.Load == nil:
		return "RESULT: no load ran"
	case r.Load.Failed():
		var parts []string
		for _, c := range measure.Classes {
			if n := r.Load.Counts[c]; c.Failure() && n > 0 {
				parts = append(parts, fmt.Sprintf("%d %s", n, c))
			}
		}
		if s := r.Load.Sessions; s != nil && s.Lost > 0 {
			parts = append(parts, fmt.Sprintf("%d session failures", s.Lost))
		}
		return fmt.Sprintf("RESULT: FAILED through the chain: %s of %d requests", strings.Join(parts, ", "), r.Load.Sent)
	case !r.Clean():
		return fmt.Sprintf("RESULT: no request failed, but not every host of every tier runs %s", To)
	}
	sessions := ""
	if s := r.Load.Sessions; s != nil {
		sessions = fmt.Sprintf(", %d sessions reopened cleanly and none lost", s.EndedClean)
	}
	return fmt.Sprintf("RESULT: clean: 0 of %d requests failed%s, every host of every tier on %s", r.Load.Sent, sessions, To)
}
