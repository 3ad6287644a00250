package topology

import (
	"fmt"
	"io"
	"strings"
	"text/tabwriter"
)

// WriteText writes a Decision for people: the winner, the candidates, the walk (each record
// by its pasted number, with what it scored or had shadowed), the notes, then each pool's
// member decision and where the query ends.
func (d Decision) WriteText(w io.Writer) error {
	ew := &errWriter{w: w}
	d.writeLevel(ew, "")
	for _, pd := range d.PoolLevel {
		ew.printf("\n")
		pd.writeLevel(ew, "  ")
	}
	if d.Answer != nil {
		ew.printf("\nanswer: %s\n", d.Answer.Text)
	}
	return ew.err
}

func (d Decision) writeLevel(ew *errWriter, indent string) {
	p := func(format string, args ...any) { ew.printf(indent+format, args...) }
	switch {
	case d.Level == LevelPool && d.Pool != "":
		p("pool %s chooses among its members; longest match %s\n", d.Pool, onOff(d.LongestMatch))
	case d.Level == LevelPool:
		p("a pool chooses among data centers; longest match %s\n", onOff(d.LongestMatch))
	case d.WideIP != "":
		p("wide IP %s chooses among its pools; longest match %s\n", d.WideIP, onOff(d.LongestMatch))
	default:
		p("the wide IP chooses among pools; longest match %s\n", onOff(d.LongestMatch))
	}
	if d.Mode == ModeSortedOnly {
		p("sorted only (no source line): the order the records are walked in\n")
	} else {
		p("query: %s\n", d.queryWords())
		p("%s\n", d.Winner.words())
	}

	if d.Mode == ModeEvaluate && len(d.Candidates) > 0 {
		tw := tabwriter.NewWriter(ew, 0, 0, 2, ' ', 0)
		fmt.Fprintf(tw, "%sCANDIDATE\tSCORE\tFROM RECORD\n", indent)
		for _, c := range d.Candidates {
			if c.Score == nil {
				fmt.Fprintf(tw, "%s%s\t-\tno record matched: no score, cannot win\n", indent, c.Name)
				continue
			}
			fmt.Fprintf(tw, "%s%s\t%d\t%d\n", indent, c.Name, *c.Score, *c.FromRecord)
		}
		tw.Flush()
	}

	tw := tabwriter.NewWriter(ew, 0, 0, 2, ' ', 0)
	fmt.Fprintf(tw, "%s#\tRECORD\tGROUP\tSOURCE\tDESTINATION\tSCORE\tOUTCOME\n", indent)
	for _, r := range d.Records {
		fmt.Fprintf(tw, "%s%d\t%d\t%s\t%s\t%s\t%d\t%s\n", indent, r.Position, r.Index, r.Group, r.Source, r.Destination, r.Score, r.outcome())
	}
	tw.Flush()
	if d.LongestMatch {
		p("order (longest match: negation group, source, destination, then score, higher first):\n")
		for _, r := range d.Records {
			if r.Why != "" {
				p("  %d. record %d: %s\n", r.Position, r.Index, r.Why)
			} else {
				p("  %d. record %d: %s\n", r.Position, r.Index, r.Key)
			}
		}
	}
	for _, n := range d.Notes {
		p("note: %s\n", n)
	}
}

func (d Decision) queryWords() string {
	var parts []string
	if d.Address.IsValid() {
		parts = append(parts, fmt.Sprintf("%s %s", d.AddressFrom, d.Address))
	}
	if q := d.Query; q != nil && q.Declared != nil {
		for _, kv := range [][2]string{{"country", q.Declared.Country}, {"continent", q.Declared.Continent},
			{"isp", q.Declared.ISP}, {"state", q.Declared.State}, {"region", strings.Join(q.Declared.Regions, ",")}} {
			if kv[1] != "" {
				parts = append(parts, kv[0]+"="+kv[1])
			}
		}
	}
	if len(parts) == 0 {
		return "no address"
	}
	return strings.Join(parts, ", ")
}

func (w Winner) words() string {
	switch {
	case len(w.Names) == 0:
		return "no winner: no record scored any candidate"
	case w.Tie:
		return fmt.Sprintf("winner: %s, score %d (round robin among %s)", w.Chosen, *w.Score, strings.Join(w.Names, ", "))
	}
	return fmt.Sprintf("winner: %s, score %d", w.Chosen, *w.Score)
}

func (r decidedRecord) outcome() string {
	if r.SourceMatches == nil {
		return ""
	}
	if !*r.SourceMatches {
		return "source does not match"
	}
	var parts []string
	if len(r.Scored) > 0 {
		parts = append(parts, "scores "+strings.Join(r.Scored, ", "))
	}
	if len(r.Shadowed) > 0 {
		parts = append(parts, fmt.Sprintf("SHADOWED for %s by record %d (this %d is never used)", strings.Join(r.Shadowed, ", "), *r.ShadowedBy, r.Score))
	}
	if len(parts) == 0 {
		return "destination matches no candidate"
	}
	return strings.Join(parts, "; ")
}
