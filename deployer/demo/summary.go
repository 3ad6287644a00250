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

// WriteSummary prints one run for people: requests by class first, then each host's deploy
// time against its floor with its timeline, the versions, the verdict.
func WriteSummary(w io.Writer, r *Result) {
	fmt.Fprintf(w, "\n%s\n\n", title(r))
	writeClasses(w, []string{mode(r)}, []*Result{r})
	fmt.Fprintln(w)
	writeHosts(w, r)
	fmt.Fprintf(w, "\n%s\n", versionsLine(r))
	if r.Load != nil {
		if vs := r.Load.VersionSwitches(); len(vs) > 0 {
			parts := make([]string, len(vs))
			for i, v := range vs {
				parts[i] = fmt.Sprintf("%s from +%.2fs", v.Version, v.First.Seconds())
			}
			fmt.Fprintf(w, "answers seen through the LB: %s\n", strings.Join(parts, ", "))
		}
	}
	fmt.Fprintf(w, "took %s\n%s\n", r.Took.Round(100*time.Millisecond), verdict(r))
}

// WriteCompare prints the handshake run and the naive run side by side.
func WriteCompare(w io.Writer, clean, naive *Result) {
	fmt.Fprintf(w, "\nzero502 demo --compare: the same rollout %s → %s under the same load, with and without the drain handshake\n\n", From, To)
	writeClasses(w, []string{mode(clean), mode(naive)}, []*Result{clean, naive})
	for _, r := range []*Result{clean, naive} {
		fmt.Fprintf(w, "\n%s:\n", mode(r))
		writeHosts(w, r)
		fmt.Fprintln(w, versionsLine(r))
		fmt.Fprintf(w, "took %s; %s\n", r.Took.Round(100*time.Millisecond), verdict(r))
	}
}

func title(r *Result) string {
	rate := 0
	if r.Load != nil {
		rate = r.Load.Rate
	}
	on := ""
	if r.Runtime == RuntimeDocker {
		on = " (containers)"
	}
	return fmt.Sprintf("zero502 demo: rolling %s → %s across %d hosts%s under %d req/s, %s", From, To, len(r.Marks), on, rate, mode(r))
}

func mode(r *Result) string {
	if r.Naive {
		return "naive (no drain)"
	}
	return "drain handshake"
}

func writeClasses(w io.Writer, heads []string, rs []*Result) {
	fmt.Fprintf(w, "%-12s", "requests")
	for _, h := range heads {
		fmt.Fprintf(w, " %18s", h)
	}
	fmt.Fprintln(w)
	row := func(name string, n func(*Result) int, note string) {
		fmt.Fprintf(w, "%-12s", name)
		for _, r := range rs {
			fmt.Fprintf(w, " %18d", n(r))
		}
		if note != "" {
			fmt.Fprintf(w, "  %s", note)
		}
		fmt.Fprintln(w)
	}
	for _, c := range measure.Classes {
		note := ""
		if c == measure.Health503 {
			note = "(the drain at work, not a failure)"
		}
		row(string(c), func(r *Result) int { return count(r, c) }, note)
	}
	row("FAILED", func(r *Result) int {
		if r.Load == nil {
			return 0
		}
		return r.Load.Failures
	}, "")
	row("total", func(r *Result) int {
		if r.Load == nil {
			return 0
		}
		return r.Load.Sent
	}, "")
}

func count(r *Result, c measure.Class) int {
	if r.Load == nil {
		return 0
	}
	return r.Load.Counts[c]
}

func writeHosts(w io.Writer, r *Result) {
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "HOST\tTOOK\tFLOOR\tRATIO\tTIMELINE (seconds into the load)")
	for _, h := range r.Marks {
		ratio := "-"
		if h.Ratio > 0 {
			ratio = fmt.Sprintf("%.2f×", h.Ratio)
			if h.Ratio > ratioGoal && !r.Naive && r.Runtime != RuntimeDocker {
				ratio += fmt.Sprintf(" (goal ≤ %.2f)", ratioGoal)
			}
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\n", h.Host, h.Duration.Round(time.Millisecond), h.Floor, ratio, timeline(h))
	}
	tw.Flush()
	fmt.Fprintln(w, "floor = the bake (at least healthy_threshold × interval), plus drain.window for the handshake: what the drain itself needs")
	if d := r.Deploy; d != nil && d.Floor > 0 && d.Duration > 0 {
		fmt.Fprintf(w, "the deploy: %s against its floor %s (%.2f×): each batch's slowest host, plus %s judging by what users got (the canary's and each batch's analysis window)\n",
			d.Duration.Round(time.Millisecond), d.Floor.Round(time.Millisecond), float64(d.Duration)/float64(d.Floor), d.Judged.Round(time.Millisecond))
	}
	if r.Runtime == RuntimeDocker {
		fmt.Fprintf(w, "containers: each step also pays the engine's container stop and create/start (the ≤ %.2f× goal is the process runtime's)\n", ratioGoal)
	}
}

func timeline(h HostMarks) string {
	type mk struct {
		name string
		at   time.Duration
	}
	var ms []mk
	for n, at := range h.Marks {
		ms = append(ms, mk{n, at})
	}
	sort.Slice(ms, func(i, j int) bool { return ms[i].at < ms[j].at })
	parts := make([]string, len(ms))
	for i, m := range ms {
		parts[i] = fmt.Sprintf("%s %.2f", m.name, m.at.Seconds())
	}
	return strings.Join(parts, ", ")
}

func versionsLine(r *Result) string {
	s := "versions: " + versionList(r.Versions, "nothing")
	if r.OnTo(To) {
		s += fmt.Sprintf(" (all on %s)", To)
	} else {
		s += fmt.Sprintf(" (NOT all on %s)", To)
	}
	return s
}

func verdict(r *Result) string {
	sent, failed := 0, 0
	if r.Load != nil {
		sent, failed = r.Load.Sent, r.Load.Failures
	}
	switch {
	case r.Error != "":
		return "RESULT: the demo did not run through: " + r.Error
	case failed > 0:
		return fmt.Sprintf("RESULT: %d of %d requests FAILED (%s)", failed, sent, strings.Join(failedClasses(r.Load), ", "))
	case !r.OnTo(To):
		return fmt.Sprintf("RESULT: no request failed, but not every host runs %s", To)
	}
	return fmt.Sprintf("RESULT: clean: 0 of %d requests failed, every host on %s", sent, To)
}

// WriteTrafficSummary prints one traffic-layer run for people: what the client saw through the
// whole chain, each stage with every host's handshake timeline, the versions, the verdict.
func WriteTrafficSummary(w io.Writer, r *trafficResult) {
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
	fmt.Fprintf(w, "\nversions: %s\ntook %s\n%s\n", versionList(r.Versions, ""), r.Took.Round(100*time.Millisecond), trafficVerdict(r))
}

func trafficVerdict(r *trafficResult) string {
	switch {
	case r.Error != "":
		return "RESULT: the demo did not run through: " + r.Error
	case r.Load == nil:
		return "RESULT: no load ran"
	case r.Load.Failed():
		parts := failedClasses(r.Load)
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

// versionList is each host of versions with its version, in host name order: "a v2, b v1". A
// host with no version ("") reads as none.
func versionList(versions map[string]string, none string) string {
	hosts := make([]string, 0, len(versions))
	for h := range versions {
		hosts = append(hosts, h)
	}
	sort.Strings(hosts)
	parts := make([]string, len(hosts))
	for i, h := range hosts {
		v := versions[h]
		if v == "" {
			v = none
		}
		parts[i] = h + " " + v
	}
	return strings.Join(parts, ", ")
}

// failedClasses is each failure class the load counted, in measure.Classes' order, with its
// count: "3 reset".
func failedClasses(load *measure.Result) []string {
	var parts []string
	for _, c := range measure.Classes {
		if n := load.Counts[c]; c.Failure() && n > 0 {
			parts = append(parts, fmt.Sprintf("%d %s", n, c))
		}
	}
	return parts
}
