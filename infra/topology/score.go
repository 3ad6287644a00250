package topology

import (
	"fmt"
	"net/netip"
	"strings"
)

// Query is what arrives at BIG-IP DNS: the address of the LDNS that sent it and, when the
// resolver forwarded one, the EDNS0 Client Subnet.
type Query struct {
	LDNS netip.Addr `json:"ldns"`
	// ECS is the EDNS0 Client Subnet; the zero Prefix when the query carries none.
	ECS netip.Prefix `json:"ecs,omitzero"`
	// Declared classifies the query without a geolocation table; nil when the table does.
	Declared *Declared `json:"declared,omitempty"`
}

// Declared is a classification stated with a query instead of looked up ("source country=PT
// region=eu-west"): each non-empty field replaces what the geo table says of the address, and
// the query is inside each of Regions (and so inside every region that contains one of them).
// A declared query with no address is inside the wildcard subnet and no other.
type Declared struct {
	Country   string   `json:"country,omitempty"`
	Continent string   `json:"continent,omitempty"`
	ISP       string   `json:"isp,omitempty"`
	State     string   `json:"state,omitempty"`
	Regions   []string `json:"regions,omitempty"`
}

// Where the classified address of a query came from.
const (
	fromLDNS = "ldns"
	fromECS  = "edns0-client-subnet"
)

// CandidateScore is what the scoring pass gave one candidate.
type CandidateScore struct {
	Candidate
	// Scored is false when no record matched the candidate: it has no score and cannot win.
	Scored bool `json:"scored"`
	Score  int  `json:"score"`
	// Record is the file index of the record that gave the score; -1 when not Scored.
	Record int `json:"record"`
}

// Step is one record of the walk: whether its source matched the query, and what it did.
type Step struct {
	Ranked
	SourceMatches bool `json:"source_matches"`
	// Via names the region member that made a region source match.
	Via string `json:"via,omitempty"`
	// Scored are the candidates this record gave their score to.
	Scored []string `json:"scored,omitempty"`
	// Shadowed are the candidates the record matched but an earlier record had already scored.
	Shadowed []string `json:"shadowed,omitempty"`
}

// shadow is one record that matched the query and a candidate but was never used for it:
// an earlier record in the walk had already given that candidate its score.
type shadow struct {
	// Record is the file index of the shadowed record, Score its unused score.
	Record    int    `json:"record"`
	Score     int    `json:"score"`
	Candidate string `json:"candidate"`
	// By is the file index of the record whose score the candidate kept, ByScore that score.
	By      int `json:"by"`
	ByScore int `json:"by_score"`
}

// Result is the topology decision for one query, with everything needed to explain it.
type Result struct {
	Query Query `json:"query"`
	// Address is the address classified: the LDNS, or the ECS subnet's address when
	// prefer_edns0_client_subnet is on and the query carries one. AddressFrom says which.
	Address     netip.Addr `json:"address"`
	AddressFrom string     `json:"address_from"`
	// Geo is the geo entry that classified Address; nil when none contains it.
	Geo          *geoEntry `json:"geo,omitempty"`
	Level        Level     `json:"level"`
	Pool         string    `json:"pool,omitempty"`
	LongestMatch bool      `json:"longest_match"`
	// Candidates are in file order with what each was given.
	Candidates []CandidateScore `json:"candidates"`
	// Walk is every record in the order walked.
	Walk     []Step   `json:"walk"`
	Shadowed []shadow `json:"shadowed"`
	// Winner is the chosen candidate, WinnerScore its score; empty when NoMatch.
	Winner      string `json:"winner,omitempty"`
	WinnerScore int    `json:"winner_score"`
	// Tied are the candidates sharing the top score, in file order, when more than one;
	// Winner is Tied[RoundRobin % len(Tied)].
	Tied       []string `json:"tied,omitempty"`
	RoundRobin uint64   `json:"round_robin"`
	// NoMatch is true when no record scored any candidate: topology has no answer and the
	// wide IP or pool goes to its next method (alternate, then fallback).
	NoMatch  bool      `json:"no_topology_match"`
	Warnings []Warning `json:"warnings"`
}

// Score runs the topology decision for q. It walks the records in Sorted order; a record whose
// source matches the query gives its score to every candidate its destination matches that
// has no score yet, and is shadowed for every candidate that already has one. The highest
// score wins; equal top scores go round robin: rr is the round-robin counter, and the winner is
// the (rr mod n)th of the n tied candidates in file order, so tests are deterministic. A
// candidate no record matched has no score and cannot win; when none has one, Result.NoMatch.
// An invalid query address matches no source at all, unless the query is Declared.
func (s *Set) Score(q Query, rr uint64) Result {
	res := Result{
		Query: q, Level: s.Level, Pool: s.Pool, LongestMatch: s.LongestMatch, RoundRobin: rr,
		Warnings: s.Warnings(), Shadowed: []shadow{},
	}
	res.Address, res.AddressFrom = q.LDNS, fromLDNS
	switch {
	case q.ECS.IsValid() && q.ECS.Bits() == 0 && s.PreferECS:
		// RFC 7871 §7.1.2: a SOURCE PREFIX-LENGTH of 0 carries no client information
		res.Warnings = append(res.Warnings, Warning{Rule: RuleECSEmpty, Text: fmt.Sprintf(
			"the query carries EDNS0 Client Subnet %s, whose prefix length 0 says nothing of the client (RFC 7871): the LDNS address %s was classified",
			q.ECS, q.LDNS)})
	case q.ECS.IsValid():
		if s.PreferECS {
			res.Address, res.AddressFrom = q.ECS.Masked().Addr(), fromECS
		} else {
			res.Warnings = append(res.Warnings, Warning{Rule: RuleECSIgnored, Text: fmt.Sprintf(
				"the query carries EDNS0 Client Subnet %s but prefer_edns0_client_subnet is off: the LDNS address %s was classified",
				q.ECS, q.LDNS)})
		}
	}
	res.Address = res.Address.Unmap()
	p := s.place(res.Address)
	p.declare(q.Declared)
	if p.geoOK {
		g := p.geo
		res.Geo = &g
	}

	cands := s.Candidates()
	res.Candidates = make([]CandidateScore, len(cands))
	for i, c := range cands {
		res.Candidates[i] = CandidateScore{Candidate: c, Record: -1}
	}
	for _, r := range s.Sorted() {
		step := Step{Ranked: r}
		if res.Address.IsValid() || p.declared {
			step.SourceMatches, step.Via = s.sourceMatches(r.Record.Source, p)
		}
		for i, c := range cands {
			if !step.SourceMatches || !s.destinationMatches(r.Record.Destination, c) {
				continue
			}
			cs := &res.Candidates[i]
			if cs.Scored {
				step.Shadowed = append(step.Shadowed, c.Name)
				res.Shadowed = append(res.Shadowed, shadow{Record: r.Index, Score: r.Record.Score,
					Candidate: c.Name, By: cs.Record, ByScore: cs.Score})
				continue
			}
			cs.Scored, cs.Score, cs.Record = true, r.Record.Score, r.Index
			step.Scored = append(step.Scored, c.Name)
		}
		res.Walk = append(res.Walk, step)
	}
	res.Warnings = append(res.Warnings, s.shadowWarnings(res.Shadowed)...)
	s.choose(&res)
	return res
}

// choose picks the winner among the scored candidates.
func (s *Set) choose(res *Result) {
	top, found := 0, false
	for _, c := range res.Candidates {
		if c.Scored && (!found || c.Score > top) {
			top, found = c.Score, true
		}
	}
	if !found {
		res.NoMatch = true
		return
	}
	var tied []string
	for _, c := range res.Candidates {
		if c.Scored && c.Score == top {
			tied = append(tied, c.Name)
		}
	}
	res.Winner, res.WinnerScore = tied[res.RoundRobin%uint64(len(tied))], top
	if len(tied) > 1 {
		res.Tied = tied
	}
	if top == 0 {
		res.Warnings = append(res.Warnings, Warning{Rule: RuleZeroScore, Text: fmt.Sprintf(
			"%s wins with score 0: the sources do not say whether BIG-IP treats a zero score as a match", res.Winner)})
	}
}

// shadowWarnings flags each shadowing that the documented keys did not decide: the two records
// tie on every key (only the file order placed them), or differ only in weight (whose direction
// the sources do not state). With Longest Match off the file order is the user's own choice
// and nothing is flagged.
func (s *Set) shadowWarnings(shadows []shadow) []Warning {
	if !s.LongestMatch {
		return nil
	}
	type pair struct{ by, record int }
	var order []pair
	cands := map[pair][]string{}
	for _, sh := range shadows {
		k := pair{sh.By, sh.Record}
		if _, ok := cands[k]; !ok {
			order = append(order, k)
		}
		cands[k] = append(cands[k], sh.Candidate)
	}
	var out []Warning
	for _, k := range order {
		by, r := s.Records[k.by], s.Records[k.record]
		names := strings.Join(cands[k], ", ")
		switch _, d := compareRecords(by, r); d {
		case byFileOrder:
			out = append(out, Warning{Rule: RuleTieFileOrder, Text: fmt.Sprintf(
				"%s (%s) shadows %s (%s) for %s, but the two tie on every documented sort key "+
					"(group, source, destination, score): only their order in the file decided which one gives the "+
					"score (the same score either way)",
				s.recordName(k.by), by, s.recordName(k.record), r, names)})
		case byScore:
			out = append(out, Warning{Rule: RuleWeightDirection, Text: fmt.Sprintf(
				"%s (%s) shadows %s (%s) for %s only because the higher weight sorts first; the "+
					"sources name weight as the last sort key without stating its direction: were it lower first, "+
					"%s would score %d",
				s.recordName(k.by), by, s.recordName(k.record), r, names, names, r.Score)})
		}
	}
	return out
}
