package topology

import (
	"cmp"
	"fmt"
	"slices"
)

// group is the outermost Longest Match key (F5 K10721): plain records first, then records with
// a server-side (destination) negation, then records with an LDNS-side (source) negation, then
// the wildcards (source 0.0.0.0/0) at the very end.
type group int

const (
	groupPlain group = iota
	groupDestinationNot
	groupSourceNot
	groupWildcard
)

func (g group) words() string {
	switch g {
	case groupPlain:
		return "plain record"
	case groupDestinationNot:
		return "server-side negation"
	case groupSourceNot:
		return "LDNS-side negation"
	}
	return "wildcard"
}

// groupOf places a record. A record negated on both sides has an LDNS-side negation and goes
// with those; the sources do not confirm it (RuleNegationUnconfirmed).
func groupOf(r Record) group {
	switch {
	case r.Source.wildcard():
		return groupWildcard
	case r.Source.Not:
		return groupSourceNot
	case r.Destination.Not:
		return groupDestinationNot
	}
	return groupPlain
}

// decider is the key that put one record above another.
type decider int

const (
	byFileOrder decider = iota // every documented key ties: the original order stands
	byGroup
	bySource
	byDestination
	byScore
)

// compareRecords is the Longest Match order: group, then source statement, then destination
// statement, then weight. Within a statement, kinds follow the hierarchy (Kind.rank), and two
// subnets put the longer mask first. A region is one entity: it sorts as a region whatever
// its members, never with the specificity of a subnet inside it.
//
// Weight: higher weight first. The sources name weight as the last key but do not say in which
// direction; this is the one assumption in the order, and the scoring pass reports every case
// where it decided which record spoke for a candidate (RuleWeightDirection).
//
// It returns the comparison and the key that decided it; byFileOrder means a full tie, which
// the stable sort resolves by the original order.
func compareRecords(a, b Record) (int, decider) {
	if c := cmp.Compare(groupOf(a), groupOf(b)); c != 0 {
		return c, byGroup
	}
	if c := compareStatements(a.Source, b.Source); c != 0 {
		return c, bySource
	}
	if c := compareStatements(a.Destination, b.Destination); c != 0 {
		return c, byDestination
	}
	if c := cmp.Compare(b.Score, a.Score); c != 0 { // higher weight first (see above)
		return c, byScore
	}
	return 0, byFileOrder
}

// compareStatements orders two statements by the kind hierarchy, subnets by longer mask first.
// Negation is not a key here: the group already holds it.
func compareStatements(a, b Statement) int {
	if c := cmp.Compare(a.Kind.rank(), b.Kind.rank()); c != 0 {
		return c
	}
	if a.Kind == KindSubnet && b.Kind == KindSubnet {
		return cmp.Compare(b.Subnet.Bits(), a.Subnet.Bits())
	}
	return 0
}

// Ranked is a record at its place in the order the scoring pass walks.
type Ranked struct {
	// Position is the 1-based place in the order.
	Position int `json:"position"`
	// Index is the record's place in the file: records[Index].
	Index  int    `json:"index"`
	Record Record `json:"record"`
	// Key is the record's sort key in words.
	Key string `json:"key"`
	// Why says what put the record below the one above it; empty for the first.
	Why string `json:"why,omitempty"`
	// Tie is true when the record equals the one above on every documented key, so only the
	// file order placed it.
	Tie bool `json:"tie,omitempty"`
}

// Sorted returns the records in the order the scoring pass walks them: the Longest Match order
// when LongestMatch is on (a stable sort, so full ties keep the file order), the file order
// as written when it is off.
func (s *Set) Sorted() []Ranked {
	idx := make([]int, len(s.Records))
	for i := range idx {
		idx[i] = i
	}
	if s.LongestMatch {
		slices.SortStableFunc(idx, func(i, j int) int {
			c, _ := compareRecords(s.Records[i], s.Records[j])
			return c
		})
	}
	out := make([]Ranked, len(idx))
	for pos, i := range idx {
		r := s.Records[i]
		out[pos] = Ranked{Position: pos + 1, Index: i, Record: r, Key: keyWords(r)}
		if pos == 0 {
			continue
		}
		above := s.Records[idx[pos-1]]
		if !s.LongestMatch {
			out[pos].Why = "file order (longest match off)"
			continue
		}
		_, d := compareRecords(above, r)
		out[pos].Tie = d == byFileOrder
		out[pos].Why = why(d, above, r, s.recordName(idx[pos-1]))
	}
	return out
}

// keyWords is a record's sort key in words.
func keyWords(r Record) string {
	g := groupOf(r)
	if g == groupWildcard {
		return fmt.Sprintf("wildcard (always last); destination %s; score %d", statementKey(r.Destination), r.Score)
	}
	return fmt.Sprintf("%s; source %s; destination %s; score %d", g.words(), statementKey(r.Source), statementKey(r.Destination), r.Score)
}

// statementKey is a statement's place in the hierarchy in words.
func statementKey(st Statement) string {
	rank := fmt.Sprintf("rank %d of 6", st.Kind.ladder())
	switch st.Kind {
	case KindState:
		return "state (not on the documented ladder: placed between ISP and country, unconfirmed)"
	case KindSubnet:
		return fmt.Sprintf("IP subnet /%d (%s, longer mask first)", st.Subnet.Bits(), rank)
	case KindRegion:
		return fmt.Sprintf("user-defined region (%s, one entity whatever its members)", rank)
	}
	return fmt.Sprintf("%s (%s)", st.Kind.words(), rank)
}

// why says what put r below above (the record named ref).
func why(d decider, above, r Record, ref string) string {
	switch d {
	case byGroup:
		g := groupOf(r)
		if g == groupWildcard {
			return "wildcard source: wildcards go to the very end"
		}
		return fmt.Sprintf("%s sorts below %s (%s)", g.words(), groupOf(above).words(), ref)
	case bySource:
		return fmt.Sprintf("source %s sorts below %s (%s)", sideWords(r.Source), sideWords(above.Source), ref)
	case byDestination:
		return fmt.Sprintf("same source rank as %s; destination %s sorts below %s", ref, sideWords(r.Destination), sideWords(above.Destination))
	case byScore:
		return fmt.Sprintf("same source and destination rank as %s; score %d below %d (higher weight first: assumed, the sources do not state the direction)", ref, r.Score, above.Score)
	}
	return fmt.Sprintf("ties with %s on every documented key: file order kept", ref)
}

func sideWords(st Statement) string {
	if st.Kind == KindSubnet {
		return fmt.Sprintf("IP subnet /%d", st.Subnet.Bits())
	}
	return st.Kind.words()
}

// recordName is how texts name records[i]: RecordNames[i] when the set has them (a front end
// with its own numbering), else "records[i]".
func (s *Set) recordName(i int) string {
	if i < len(s.RecordNames) {
		return s.RecordNames[i]
	}
	return fmt.Sprintf("records[%d]", i)
}
