package topology

import (
	"cmp"
	"fmt"
	"io"
	"slices"
	"strings"
	"text/tabwriter"
)

// WriteText writes the explanation for people: the answer first, then the candidates' scores,
// then the walk over the ordered records (what each matched, scored or had shadowed), why each
// record sits where it does, and the warnings.
func (r Result) WriteText(w io.Writer) error {
	ew := &errWriter{w: w}
	ew.printf("%s\n", r.verdict())
	ew.printf("query: %s\n", r.queryWords())
	if r.Level == LevelPool {
		ew.printf("level: pool %s chooses among its members; longest match %s\n", r.Pool, onOff(r.LongestMatch))
	} else {
		ew.printf("level: wide IP chooses among its pools; longest match %s\n", onOff(r.LongestMatch))
	}

	ew.printf("\n")
	tw := tabwriter.NewWriter(ew, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "CANDIDATE\tSCORE\tFROM")
	for _, c := range r.Candidates {
		if !c.Scored {
			fmt.Fprintf(tw, "%s\t-\tno record matched: no score, cannot win\n", c.Name)
			continue
		}
		fmt.Fprintf(tw, "%s\t%d\trecords[%d]  %s\n", c.Name, c.Score, c.Record, r.record(c.Record))
	}
	tw.Flush()

	ew.printf("\n")
	if r.LongestMatch {
		ew.printf("walk, in longest match order (keys: negation group, source, destination, then score, higher " +
			"first: that direction is assumed, the sources do not state it):\n")
	} else {
		ew.printf("walk, in file order (longest match off):\n")
	}
	tw = tabwriter.NewWriter(ew, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "#\tRECORD\tSOURCE\tDESTINATION\tSCORE\tSOURCE MATCHES\tOUTCOME")
	for _, st := range r.Walk {
		fmt.Fprintf(tw, "%d\trecords[%d]\t%s\t%s\t%d\t%s\t%s\n", st.Position, st.Index, st.Record.Source,
			st.Record.Destination, st.Record.Score, matchWords(st), r.outcome(st))
	}
	tw.Flush()

	ew.printf("\norder:\n")
	for _, st := range r.Walk {
		ew.printf("  %d. records[%d]: %s\n", st.Position, st.Index, st.Key)
		if st.Why != "" {
			ew.printf("     here because: %s\n", st.Why)
		}
	}

	if len(r.Warnings) == 0 {
		ew.printf("\nno warnings\n")
		return ew.err
	}
	ew.printf("\nwarnings (%d):\n", len(r.Warnings))
	for _, wn := range r.Warnings {
		ew.printf("  ! %s\n", wn)
	}
	return ew.err
}

func (r Result) verdict() string {
	if r.NoMatch {
		return "no topology match: no record scored any candidate; topology has no answer and the " +
			"decision goes to the next method (alternate, then fallback)"
	}
	ranked := slices.Clone(r.Candidates)
	slices.SortStableFunc(ranked, func(a, b CandidateScore) int { return cmp.Compare(b.Score, a.Score) })
	var others []string
	for _, c := range ranked {
		if c.Scored && c.Name != r.Winner {
			others = append(others, fmt.Sprintf("%s %d", c.Name, c.Score))
		}
	}
	s := fmt.Sprintf("winner: %s, score %d", r.Winner, r.WinnerScore)
	if len(r.Tied) > 1 {
		s += fmt.Sprintf(" (round robin %d among %s, tied at %d)", r.RoundRobin, strings.Join(r.Tied, ", "), r.WinnerScore)
	}
	if len(others) > 0 {
		s += "; then " + strings.Join(others, ", ")
	}
	return s
}

func (r Result) queryWords() string {
	s := "LDNS " + r.Query.LDNS.String()
	if r.Query.ECS.IsValid() {
		s += ", EDNS0 Client Subnet " + r.Query.ECS.String()
	}
	if r.AddressFrom == fromECS {
		s += fmt.Sprintf("; classified %s (the client subnet, prefer_edns0_client_subnet on)", r.Address)
	} else {
		s += fmt.Sprintf("; classified %s (the LDNS address)", r.Address)
	}
	if r.Geo == nil {
		return s + "; in no geo entry (no country, continent or ISP)"
	}
	var g []string
	for _, kv := range [][2]string{{"country", r.Geo.Country}, {"continent", r.Geo.Continent}, {"isp", r.Geo.ISP}} {
		if kv[1] != "" {
			g = append(g, kv[0]+" "+kv[1])
		}
	}
	return s + fmt.Sprintf("; %s (geo %s)", strings.Join(g, ", "), r.Geo.Subnet)
}

// record is records[i] in tmsh words, from the walk.
func (r Result) record(i int) string {
	for _, st := range r.Walk {
		if st.Index == i {
			return fmt.Sprintf("%s → %s", st.Record.Source, st.Record.Destination)
		}
	}
	return ""
}

func matchWords(st Step) string {
	switch {
	case !st.SourceMatches:
		return "no"
	case st.Via != "":
		return "yes, via " + st.Via
	}
	return "yes"
}

func (r Result) outcome(st Step) string {
	if !st.SourceMatches {
		return "-"
	}
	var parts []string
	if len(st.Scored) > 0 {
		parts = append(parts, "scores "+strings.Join(st.Scored, ", "))
	}
	for _, sh := range r.Shadowed {
		if sh.Record == st.Index {
			parts = append(parts, fmt.Sprintf("SHADOWED for %s by records[%d] (keeps %d; this %d is never used)",
				sh.Candidate, sh.By, sh.ByScore, sh.Score))
		}
	}
	if len(parts) == 0 {
		return "destination matches no candidate"
	}
	return strings.Join(parts, "; ")
}

func onOff(b bool) string {
	if b {
		return "on"
	}
	return "off"
}

// errWriter keeps the first write error so the text can be written without checking each line.
type errWriter struct {
	w   io.Writer
	err error
}

func (e *errWriter) Write(p []byte) (int, error) {
	if e.err != nil {
		return 0, e.err
	}
	n, err := e.w.Write(p)
	e.err = err
	return n, err
}

func (e *errWriter) printf(format string, args ...any) {
	fmt.Fprintf(e, format, args...)
}
