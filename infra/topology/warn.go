package topology

import (
	"fmt"
	"slices"
	"strings"
)

// Warnings are the cases in the set itself that the tool flags instead of deciding silently,
// whatever the query: a pool whose fallback breaks topology at both levels, destinations that
// do not apply at wide-IP level, negations the sources do not place, records weighing the
// default score, sources that can never match, destinations naming a pool that is not here.
// Score adds the warnings that depend on the query.
func (s *Set) Warnings() []Warning {
	var out []Warning
	add := func(rule, format string, args ...any) {
		out = append(out, Warning{Rule: rule, Text: fmt.Sprintf(format, args...)})
	}
	if s.WideIPLoadBalancing == "topology" {
		for _, p := range s.Pools {
			if p.LoadBalancing == "topology" && p.Fallback != "none" {
				add(RuleFallbackNotNone, "topology runs at both levels (the wide IP chooses pools, pool %s chooses "+
					"members) and pool %s's fallback is %s: set it to none, or a query can fall through a pool "+
					"with no available member to BIND; with none, an empty pool passes the query on to another pool",
					p.Name, p.Name, p.Fallback)
			}
		}
	}
	pools := make([]string, len(s.Pools))
	for i, p := range s.Pools {
		pools[i] = p.Name
	}
	for _, name := range sortedKeys(s.Regions) {
		var negated []string
		for _, m := range s.Regions[name] {
			if m.Not {
				negated = append(negated, m.String())
			}
		}
		if len(negated) > 0 {
			add(RuleNegatedMember, "region %s has negated members (%s): the sources do not say how BIG-IP combines "+
				"them; here the region matches when a plain member matches (or it has none) and no negated member does",
				name, strings.Join(negated, ", "))
		}
	}
	for i, r := range s.Records {
		ref := fmt.Sprintf("%s (%s)", s.recordName(i), r)
		d := r.Destination
		if s.Level == LevelWideIP && !appliesAtWideIP(d.Kind) {
			if d.Kind == KindDataCenter {
				add(RuleDataCenterAtWideIP, "%s: a data-center destination applies at pool level (choosing members), "+
					"not at wide-IP level (choosing pools): a pool is not inside a data center, so it never scores here", ref)
			} else {
				add(RuleDestinationAtWideIP, "%s: the sources do not say how a pool matches a %s destination at wide-IP "+
					"level; this tool never matches it against a pool", ref, d.Kind.words())
			}
		}
		if s.Level == LevelWideIP && d.Kind == KindRegion && !s.regionHoldsPool(d.Name, newWalk()) {
			add(RuleDestinationAtWideIP, "%s: region %s holds no pool; at wide-IP level only the pools of a region "+
				"can match a pool, so it never scores here", ref, d.Name)
		}
		if d.Kind == KindPool && !slices.Contains(pools, d.Name) {
			add(RuleUnknownPool, "%s: pool %s is not under pools (a typo, or a pool of another wide IP); it scores nothing here", ref, d.Name)
		}
		switch {
		case r.Source.Not && d.Not:
			add(RuleNegationUnconfirmed, "%s is negated on both sides: the sources do not place it; sorted with the "+
				"LDNS-side negations, below the server-side ones", ref)
		case r.Source.wildcard() && d.Not:
			add(RuleNegationUnconfirmed, "%s is a wildcard with a negated destination: the sources do not place it "+
				"among the wildcards; sorted by destination kind and score like the other wildcards", ref)
		}
		if r.DefaultScore {
			add(RuleDefaultScore, "%s has no score and weighs the default %d, which is rarely what a weighted design "+
				"means: give every intended record an explicit score", ref, DefaultScore)
		}
		for _, st := range []Statement{r.Source, d} {
			if !st.Kind.confirmed() {
				add(RuleRankUnconfirmed, "%s uses a %s statement: the sources do not place %s on the Longest Match "+
					"ladder; it is sorted between ISP and country (a state is inside a country), unconfirmed", ref, st.Kind, st.Kind)
				break
			}
		}
		if never := s.neverMatches(r.Source); never != "" {
			add(RuleNeverMatches, "%s: source never matches: %s", ref, never)
		}
	}
	return out
}

// neverMatches says why a source statement can never match any query, or "" when it can.
func (s *Set) neverMatches(st Statement) string {
	if st.Not && st.Kind == KindSubnet && st.Subnet.Bits() == 0 {
		return fmt.Sprintf("every %s address is inside %s", family(st), st.Subnet)
	}
	if st.Not {
		return ""
	}
	switch st.Kind {
	case KindISP, KindState, KindCountry, KindContinent:
		if s.GeoFromQuery {
			return ""
		}
		for _, g := range s.Geo {
			if geoMatches(st, g, true) {
				return ""
			}
		}
		return fmt.Sprintf("no geo entry gives %s %s (the geo table is the only classification)", st.Kind.words(), st.Name)
	}
	return ""
}

func family(st Statement) string {
	if st.Subnet.Addr().Is4() {
		return "IPv4"
	}
	return "IPv6"
}
