package topology

import (
	"net/netip"
	"slices"
	"strings"
)

// classify returns the geo entry of a: the longest subnet in the table containing it. ok is
// false when no entry does (the address has no country, continent or ISP).
func (s *Set) classify(a netip.Addr) (geoEntry, bool) {
	best, found := geoEntry{}, false
	for _, e := range s.Geo {
		if e.Subnet.Contains(a) && (!found || e.Subnet.Bits() > best.Subnet.Bits()) {
			best, found = e, true
		}
	}
	return best, found
}

// geoMatches reports whether a statement of kind ISP, state, country or continent names what
// the geo table says about an address.
func geoMatches(st Statement, g geoEntry, ok bool) bool {
	if !ok {
		return false
	}
	switch st.Kind {
	case KindISP: // names, not codes: "comcast" in a record is the geo table's Comcast
		return g.ISP != "" && strings.EqualFold(g.ISP, st.Name)
	case KindState:
		return g.State != "" && strings.EqualFold(g.State, st.Name)
	case KindCountry:
		return g.Country == st.Name
	case KindContinent:
		return g.Continent == st.Name
	}
	return false
}

// place is what one address is, for matching: the address and its geo classification, and,
// for a query that declares them, the regions it is in.
type place struct {
	addr    netip.Addr
	geo     geoEntry
	geoOK   bool
	regions []string
	// declared is true for a query classified by declaration; without an address it is
	// inside the wildcard subnet only.
	declared bool
}

func (s *Set) place(a netip.Addr) place {
	g, ok := s.classify(a)
	return place{addr: a, geo: g, geoOK: ok}
}

// declare lays a query's declared classification over what the geo table said: each declared
// field replaces the table's.
func (p *place) declare(d *Declared) {
	if d == nil {
		return
	}
	p.declared = true
	p.regions = d.Regions
	for _, f := range []struct {
		to   *string
		from string
	}{
		{&p.geo.Country, d.Country}, {&p.geo.Continent, d.Continent}, {&p.geo.ISP, d.ISP}, {&p.geo.State, d.State},
	} {
		if f.from != "" {
			*f.to = f.from
			p.geoOK = true
		}
	}
}

// sourceMatches reports whether a source statement matches the query's classified address,
// and, for a region, which member matched ("subnet 10.1.0.0/16", or "region iberia > country
// ES"). A negated statement matches exactly when the plain one does not.
func (s *Set) sourceMatches(st Statement, p place) (bool, string) {
	ok, via := s.addressMatches(st, p, newWalk())
	if st.Not {
		return !ok, ""
	}
	return ok, via
}

// addressMatches is the plain (un-negated) match of st against an address. Pool and data
// center statements never match an address: only region members can be those, and they
// count for destinations only.
func (s *Set) addressMatches(st Statement, p place, w *walk) (bool, string) {
	switch st.Kind {
	case KindSubnet:
		if !p.addr.IsValid() {
			return p.declared && st.Subnet.Bits() == 0, ""
		}
		return st.Subnet.Contains(p.addr), ""
	case KindISP, KindState, KindCountry, KindContinent:
		return geoMatches(st, p.geo, p.geoOK), ""
	case KindRegion:
		if slices.Contains(p.regions, st.Name) {
			return true, "declared"
		}
		return s.regionMatches(st.Name, w, func(m Statement, w *walk) (bool, string) {
			return s.addressMatches(m, p, w)
		})
	}
	return false, ""
}

// Candidate is one destination the scoring pass can give a score to: a pool at wide-IP level,
// a pool member at pool level.
type Candidate struct {
	// Name is the pool name (wide-IP level) or the member name (pool level).
	Name string `json:"name"`
	// Pool is the pool the candidate is or belongs to.
	Pool       string     `json:"pool"`
	Address    netip.Addr `json:"address,omitzero"`
	DataCenter string     `json:"datacenter,omitempty"`
}

// Candidates are the destinations in competition, in file order (the round-robin order); a
// member marked down is none.
func (s *Set) Candidates() []Candidate {
	var out []Candidate
	for _, p := range s.Pools {
		switch s.Level {
		case LevelWideIP:
			out = append(out, Candidate{Name: p.Name, Pool: p.Name})
		case LevelPool:
			if p.Name != s.Pool {
				continue
			}
			for _, m := range p.Members {
				if m.Down {
					continue // unavailable: no candidate
				}
				out = append(out, Candidate{Name: m.Name, Pool: p.Name, Address: m.Address, DataCenter: m.DataCenter})
			}
		}
	}
	return out
}

// destinationMatches reports whether a destination statement matches a candidate.
//
// At wide-IP level a candidate is a pool, which has no address and sits in no data center: a
// pool statement matches by name, a region by a pool member of the region, and data-center,
// subnet, ISP, country and continent statements never match, negated or not, nor does a region
// holding no pool statement (reported by Warnings). At pool level a candidate is a member: pool
// by its pool, datacenter by its data center, subnet by its address, ISP, country and continent
// by its address's geo entry, a region by any of those members.
func (s *Set) destinationMatches(st Statement, c Candidate) bool {
	w := newWalk()
	if s.Level == LevelWideIP {
		if !appliesAtWideIP(st.Kind) {
			return false
		}
		if _, defined := s.Regions[st.Name]; st.Kind == KindRegion && defined && !s.regionHoldsPool(st.Name, w) {
			return false // no pool in it: it matches no pool, negated or not (Warnings flags it)
		}
	}
	ok := s.candidateMatches(st, c, w)
	return ok != st.Not
}

// appliesAtWideIP reports whether a destination kind can match a pool.
func appliesAtWideIP(k Kind) bool { return k == KindPool || k == KindRegion }

func (s *Set) candidateMatches(st Statement, c Candidate, w *walk) bool {
	switch st.Kind {
	case KindPool:
		return c.Pool == st.Name
	case KindRegion:
		if s.Level == LevelWideIP && !s.regionHoldsPool(st.Name, w) {
			return false // no pool member: nothing in it is a pool (Warnings flags it)
		}
		ok, _ := s.regionMatches(st.Name, w, func(m Statement, w *walk) (bool, string) {
			if s.Level == LevelWideIP && !appliesAtWideIP(m.Kind) {
				return false, ""
			}
			return s.candidateMatches(m, c, w), ""
		})
		return ok
	case KindDataCenter:
		return c.DataCenter != "" && c.DataCenter == st.Name
	case KindSubnet, KindISP, KindState, KindCountry, KindContinent:
		if !c.Address.IsValid() {
			return false
		}
		ok, _ := s.addressMatches(st, s.place(c.Address), w)
		return ok
	}
	return false
}
