package topology

import (
	"fmt"
	"net/netip"
	"strings"
)

// Kind is what a statement names: an IP subnet, a data center, a pool, a user-defined region,
// an ISP, a country or a continent. The spelling is tmsh's.
type Kind string

// The kinds, in the Longest Match hierarchy: IP subnets (longer mask first), then data centers
// and pools, then user-defined regions, then ISPs, then countries, then continents.
const (
	KindSubnet     Kind = "subnet"
	KindDataCenter Kind = "datacenter"
	KindPool       Kind = "pool"
	KindRegion     Kind = "region"
	KindISP        Kind = "isp"
	// KindState is a state or province ("US/California"). BIG-IP has it, but the sources do
	// not place it in the hierarchy: it sorts between ISPs and countries (a state is inside a
	// country) and every record using it is flagged (RuleRankUnconfirmed).
	KindState     Kind = "state"
	KindCountry   Kind = "country"
	KindContinent Kind = "continent"
)

// kinds lists every kind in hierarchy order (the order error messages name them in).
var kinds = [...]Kind{KindSubnet, KindDataCenter, KindPool, KindRegion, KindISP, KindState, KindCountry, KindContinent}

// outsideHierarchy are BIG-IP kinds the sources do not place in the Longest Match hierarchy.
// They are refused, with this reason, instead of being sorted by a guess.
var outsideHierarchy = map[string]string{
	"geoip-isp": "BIG-IP has geoip-isp statements but the sources do not place them in the Longest Match hierarchy",
}

// continents are the continent codes BIG-IP's geolocation data uses.
var continents = map[string]string{
	"AF": "Africa", "AN": "Antarctica", "AS": "Asia", "EU": "Europe",
	"NA": "North America", "OC": "Oceania", "SA": "South America",
}

// continentCode is the code of a continent given by its code (EU) or its name (Europe, North
// America), in any case, as tmsh and the GUI show either; false for neither.
func continentCode(v string) (string, bool) {
	v = strings.Join(strings.Fields(v), " ")
	if _, ok := continents[strings.ToUpper(v)]; ok {
		return strings.ToUpper(v), true
	}
	for code, name := range continents {
		if strings.EqualFold(name, v) {
			return code, true
		}
	}
	return "", false
}

// continentRule is what a continent may be, for errors.
const continentRule = "is not one of AF AN AS EU NA OC SA, nor their names (Africa, Antarctica, Asia, Europe, North America, Oceania, South America)"

// rank is the kind's place in the sort, 0 first. Data centers and pools share a rank: the
// sources put them at the same level. State is not on the documented ladder (confirmed is
// false); it is placed between ISPs and countries.
func (k Kind) rank() int {
	switch k {
	case KindSubnet:
		return 0
	case KindDataCenter, KindPool:
		return 1
	case KindRegion:
		return 2
	case KindISP:
		return 3
	case KindState:
		return 4
	case KindCountry:
		return 5
	case KindContinent:
		return 6
	}
	return unknownRank // unreachable for a parsed statement
}

const unknownRank = 7

// confirmed reports whether the sources place the kind on the Longest Match ladder.
func (k Kind) confirmed() bool { return k != KindState }

// ladder is the kind's place on the documented six-step ladder, 1 first; 0 for a kind the
// sources do not place.
func (k Kind) ladder() int {
	switch {
	case !k.confirmed():
		return 0
	case k.rank() > KindState.rank():
		return k.rank()
	}
	return k.rank() + 1
}

// words is how the kind reads in an explanation.
func (k Kind) words() string {
	switch k {
	case KindSubnet:
		return "IP subnet"
	case KindDataCenter:
		return "data center"
	case KindRegion:
		return "user-defined region"
	case KindISP:
		return "ISP"
	}
	return string(k)
}

// Statement is one side of a topology record (or one member of a region): a kind, what it
// names, and whether it is negated with `not`. It reads and prints like tmsh:
// "subnet 10.1.2.0/24", "not country ES", "region eu-west", "pool /Common/POOL1".
type Statement struct {
	Not  bool
	Kind Kind
	// Subnet is set for KindSubnet; it is always masked (no host bits).
	Subnet netip.Prefix
	// Name is what every other kind names: a region, pool or data center name, an ISP, an
	// upper-case two-letter country code, an upper-case continent code (AF AN AS EU NA OC SA),
	// whether it was given as the code or the name.
	Name string
}

// parseStatement reads "[not] KIND VALUE". KIND is one of subnet, datacenter, pool, region,
// isp, state, country, continent (case-insensitive). A subnet is CIDR with no host bits set; a
// country is two letters; a continent is one of AF AN AS EU NA OC SA or its name (Europe, North
// America), kept as its code; an ISP, a state or a continent's name may be several words; every other name is one word. Whitespace between words does not matter.
func parseStatement(s string) (Statement, error) {
	words := strings.Fields(s)
	var st Statement
	if len(words) > 0 && strings.EqualFold(words[0], "not") {
		st.Not = true
		words = words[1:]
	}
	if len(words) == 0 {
		return Statement{}, fmt.Errorf("%q: want \"[not] KIND VALUE\" (KIND one of %s)", s, kindList())
	}
	kw := strings.ToLower(words[0])
	if why, ok := outsideHierarchy[kw]; ok {
		return Statement{}, fmt.Errorf("%q: kind %q is refused: %s", s, kw, why)
	}
	st.Kind = Kind(kw)
	if st.Kind.rank() == unknownRank {
		return Statement{}, fmt.Errorf("%q: unknown kind %q (known: %s)", s, words[0], kindList())
	}
	value := words[1:]
	if len(value) == 0 {
		return Statement{}, fmt.Errorf("%q: %s with no value", s, st.Kind)
	}
	if st.Kind != KindISP && st.Kind != KindState && st.Kind != KindContinent && len(value) > 1 {
		return Statement{}, fmt.Errorf("%q: a %s is one word, got %d", s, st.Kind.words(), len(value))
	}
	v := value[0]
	switch st.Kind {
	case KindSubnet:
		p, err := netip.ParsePrefix(v)
		if err != nil {
			return Statement{}, fmt.Errorf("%q: subnet %q is not CIDR (want e.g. 10.1.2.0/24)", s, v)
		}
		if p != p.Masked() {
			return Statement{}, fmt.Errorf("%q: subnet %s has host bits set (did you mean %s?)", s, v, p.Masked())
		}
		st.Subnet = p
	case KindCountry:
		if !isCountryCode(v) {
			return Statement{}, fmt.Errorf("%q: country %q is not a two-letter code (e.g. PT)", s, v)
		}
		st.Name = strings.ToUpper(v)
	case KindContinent:
		code, ok := continentCode(strings.Join(value, " "))
		if !ok {
			return Statement{}, fmt.Errorf("%q: continent %q %s", s, strings.Join(value, " "), continentRule)
		}
		st.Name = code
	case KindISP, KindState:
		st.Name = strings.Join(value, " ")
	default:
		st.Name = v
	}
	return st, nil
}

// String prints the statement as parseStatement reads it.
func (s Statement) String() string {
	var b strings.Builder
	if s.Not {
		b.WriteString("not ")
	}
	b.WriteString(string(s.Kind))
	b.WriteByte(' ')
	if s.Kind == KindSubnet {
		b.WriteString(s.Subnet.String())
	} else {
		b.WriteString(s.Name)
	}
	return b.String()
}

// MarshalText makes a statement read as its tmsh form in JSON.
func (s Statement) MarshalText() ([]byte, error) { return []byte(s.String()), nil }

// wildcard reports whether s is the wildcard source, 0.0.0.0/0 (or ::/0), which matches every
// address of its family and goes to the very end of the Longest Match order.
func (s Statement) wildcard() bool {
	return !s.Not && s.Kind == KindSubnet && s.Subnet.Bits() == 0
}

func isCountryCode(v string) bool {
	if len(v) != 2 {
		return false
	}
	for _, c := range []byte(v) {
		if (c < 'A' || c > 'Z') && (c < 'a' || c > 'z') {
			return false
		}
	}
	return true
}

func kindList() string {
	names := make([]string, len(kinds))
	for i, k := range kinds {
		names[i] = string(k)
	}
	return strings.Join(names, ", ")
}
