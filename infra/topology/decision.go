package topology

import (
	"fmt"
	"net/netip"
	"strings"
)

// The modes of a Decision.
const (
	// ModeEvaluate: the paste has a query; the records were walked and scored for it.
	ModeEvaluate = "evaluate"
	// ModeSortedOnly: the paste has no source line; only the walk order is shown.
	ModeSortedOnly = "sorted-only"
)

// noAnswer is the note of a topology decision in which no record scored any candidate.
const noAnswer = "Topology returns no answer; the next method in the chain decides"

// Decision is the answer to a Paste at one level: the records in walk order, what each
// candidate scored, the winner and the notes. At wide-IP level, PoolLevel holds the member
// decision of each pool the query reached (the chosen one, then the next when a pool with
// fallback none has no available member) and Answer says where the query ends. The JSON field
// names are a contract: fields may be added, never renamed.
type Decision struct {
	Mode         string `json:"mode"`
	Level        Level  `json:"level"`
	WideIP       string `json:"wideip,omitempty"`
	Pool         string `json:"pool,omitempty"`
	LongestMatch bool   `json:"longest_match"`
	Query        *Query `json:"query,omitempty"`
	// Address is the address classified and AddressFrom where it came from (ldns or
	// edns0-client-subnet); empty for a query declared without an address.
	Address     netip.Addr      `json:"address,omitzero"`
	AddressFrom string          `json:"address_from,omitempty"`
	Records     []decidedRecord `json:"records"`
	// Candidates are in the round-robin order (the wide IP's pool order, the pool's member
	// order, or the order named).
	Candidates []decidedCandidate `json:"candidates"`
	Winner     Winner             `json:"winner"`
	Notes      []string           `json:"notes"`
	Warnings   []Warning          `json:"warnings"`
	PoolLevel  []Decision         `json:"pool_level,omitempty"`
	Answer     *Answer            `json:"answer,omitempty"`
}

// decidedRecord is one record at its place in the walk.
type decidedRecord struct {
	// Index is the record's place in the paste, from 1.
	Index int `json:"index"`
	// Group is the outermost Longest Match key: plain, server-negation, ldns-negation or
	// wildcard.
	Group string `json:"group"`
	// ShadowedBy is the index of the record that had already scored a candidate this record
	// matched; nil when it shadows nothing (and always in sorted-only mode).
	ShadowedBy *int   `json:"shadowed_by"`
	Text       string `json:"text"`
	// Position is the place in the walk, from 1.
	Position    int       `json:"position"`
	Source      Statement `json:"source"`
	Destination Statement `json:"destination"`
	Score       int       `json:"score"`
	// DefaultScore is true when the record has no score line and weighs 1.
	DefaultScore bool `json:"default_score,omitempty"`
	// SourceMatches is nil in sorted-only mode.
	SourceMatches *bool    `json:"source_matches,omitempty"`
	Scored        []string `json:"scored,omitempty"`
	Shadowed      []string `json:"shadowed,omitempty"`
	// Key is the sort key in words, Why what put the record below the one above it.
	Key string `json:"key"`
	Why string `json:"why,omitempty"`
}

// decidedCandidate is what one candidate was given.
type decidedCandidate struct {
	// Name has no partition.
	Name string `json:"name"`
	// Score and FromRecord (a record index) are nil when no record scored the candidate.
	Score      *int       `json:"score"`
	FromRecord *int       `json:"from_record"`
	Pool       string     `json:"pool,omitempty"`
	DataCenter string     `json:"datacenter,omitempty"`
	Address    netip.Addr `json:"address,omitzero"`
}

// Winner is the top of the decision.
type Winner struct {
	// Names are the candidates with the top score: none when nothing matched, more than one
	// when equal top scores go round robin.
	Names []string `json:"names"`
	Score *int     `json:"score"`
	Tie   bool     `json:"tie"`
	// Chosen is the one this query gets (the round robin's turn among Names).
	Chosen string `json:"chosen,omitempty"`
}

// Answer is where a query ends after both levels.
type Answer struct {
	// By is what decided: topology, alternate, fallback, local-bind, or the pool's own
	// method when it is not topology.
	By     string `json:"by"`
	Pool   string `json:"pool,omitempty"`
	Member string `json:"member,omitempty"`
	Text   string `json:"text"`
}

// groupName is a group in the JSON's words.
func (g group) name() string {
	switch g {
	case groupPlain:
		return "plain"
	case groupDestinationNot:
		return "server-negation"
	case groupSourceNot:
		return "ldns-negation"
	}
	return "wildcard"
}

// decision turns a scored (or, res nil, sorted-only) level into a Decision, naming records by
// their place in the paste (lv.index).
func (lv *level) decision(res *Result) Decision {
	d := Decision{Mode: ModeSortedOnly, Level: lv.set.Level, Pool: lv.set.Pool, LongestMatch: lv.set.LongestMatch,
		Winner: Winner{Names: []string{}}, Notes: []string{}, Warnings: lv.set.Warnings()}
	if d.Level == LevelWideIP {
		d.Pool = ""
	}
	steps := map[int]Step{}
	shadowedBy := map[int]int{}
	if res != nil {
		d.Mode, d.Query, d.Warnings = ModeEvaluate, &res.Query, res.Warnings
		if res.Address.IsValid() {
			d.Address, d.AddressFrom = res.Address, res.AddressFrom
		}
		for _, st := range res.Walk {
			steps[st.Index] = st
		}
		for _, sh := range res.Shadowed {
			if _, ok := shadowedBy[sh.Record]; !ok {
				shadowedBy[sh.Record] = lv.index[sh.By]
			}
		}
	}
	for _, r := range lv.set.Sorted() {
		pr := lv.paste.Records[lv.index[r.Index]-1]
		dr := decidedRecord{Index: lv.index[r.Index], Group: groupOf(r.Record).name(), Text: pr.Text, Position: r.Position,
			Source: r.Record.Source, Destination: r.Record.Destination, Score: r.Record.Score,
			DefaultScore: r.Record.DefaultScore, Key: r.Key, Why: r.Why}
		if st, ok := steps[r.Index]; ok {
			m := st.SourceMatches
			dr.SourceMatches, dr.Scored, dr.Shadowed = &m, st.Scored, st.Shadowed
		}
		if by, ok := shadowedBy[r.Index]; ok {
			dr.ShadowedBy = &by
		}
		d.Records = append(d.Records, dr)
	}
	if d.Warnings == nil {
		d.Warnings = []Warning{}
	}
	for _, w := range d.Warnings {
		d.Notes = append(d.Notes, w.String())
	}
	if res == nil {
		d.Candidates = []decidedCandidate{}
		d.Notes = append(d.Notes, "no source line: the walk order only (add source ip=A.B.C.D, or source country=XX …, to decide)")
		return d
	}
	for _, c := range res.Candidates {
		dc := decidedCandidate{Name: c.Name, DataCenter: c.DataCenter, Address: c.Address}
		if lv.set.Level == LevelPool {
			dc.Pool = c.Pool
		}
		if c.Scored {
			score, from := c.Score, lv.index[c.Record]
			dc.Score, dc.FromRecord = &score, &from
		}
		d.Candidates = append(d.Candidates, dc)
	}
	if d.Candidates == nil {
		d.Candidates = []decidedCandidate{}
	}
	switch {
	case res.NoMatch:
		d.Notes = append(d.Notes, noAnswer)
	case len(res.Tied) > 1:
		score := res.WinnerScore
		d.Winner = Winner{Names: res.Tied, Score: &score, Tie: true, Chosen: res.Winner}
		d.Notes = append(d.Notes, fmt.Sprintf("%s tie at score %d: round robin decides; this query (turn %d) goes to %s",
			strings.Join(res.Tied, ", "), score, res.RoundRobin, res.Winner))
	default:
		score := res.WinnerScore
		d.Winner = Winner{Names: []string{res.Winner}, Score: &score, Chosen: res.Winner}
	}
	return d
}
