package topology

import (
	"fmt"
	"net/netip"
)

// DefaultScore is the weight of a record created without one (tmsh calls the weight "score").
// The sources warn it is rarely what a weighted design means; see Warning rule RuleDefaultScore.
const DefaultScore = 1

// Record is one topology record: queries whose request source matches Source give Score to
// every candidate that Destination matches, unless an earlier record already scored it.
type Record struct {
	// Source is the LDNS request source statement (tmsh "ldns:"). It never names a pool or a
	// data center: an LDNS address is in neither.
	Source Statement `json:"source"`
	// Destination is the server statement (tmsh "server:").
	Destination Statement `json:"destination"`
	// Score is the record's weight, zero or more.
	Score int `json:"score"`
	// DefaultScore is true when the file gave no score and Score is DefaultScore.
	DefaultScore bool `json:"default_score,omitempty"`
}

func (r Record) String() string {
	return fmt.Sprintf("%s → %s score %d", r.Source, r.Destination, r.Score)
}

// Level is the decision a set is scored for.
type Level string

const (
	// LevelWideIP is a wide IP choosing among its pools: the candidates are the pools.
	LevelWideIP Level = "wideip"
	// LevelPool is a pool choosing among its members: the candidates are the members of one
	// pool (Set.Pool).
	LevelPool Level = "pool"
)

// Set is a validated topology configuration: the records, what classifies a query address
// (geolocation table, regions), the candidates and the options. Build it with Parse or Load;
// Sorted and Score assume the validation Parse does.
type Set struct {
	// LongestMatch re-sorts the records (the default). Off, the file order is used as written.
	LongestMatch bool `json:"longest_match"`
	// PreferECS classifies the EDNS0 Client Subnet of a query that carries one instead of the
	// LDNS address (tmsh topology-prefer-edns0-client-subnet).
	PreferECS bool `json:"prefer_edns0_client_subnet"`
	// Level says what the candidates are.
	Level Level `json:"level"`
	// WideIPLoadBalancing is the wide IP's method for choosing pools (tmsh pool-lb-mode); it
	// is topology at LevelWideIP. With a pool's own LoadBalancing it says whether topology
	// runs at both levels.
	WideIPLoadBalancing string `json:"wideip_load_balancing"`
	// Pool names the pool whose members compete at LevelPool; empty at LevelWideIP.
	Pool string `json:"pool,omitempty"`
	// Regions are the user-defined regions by name; a member may be negated (see
	// regionMatches).
	Regions map[string][]Statement `json:"regions,omitempty"`
	// Geo is the geolocation table; the longest subnet containing an address classifies it.
	Geo []geoEntry `json:"geo,omitempty"`
	// Pools are the wide IP's pools, in file order (the round-robin order for equal scores).
	Pools []Pool `json:"pools"`
	// Records are the topology records in file order; "records[i]" everywhere is an index
	// into this slice.
	Records []Record `json:"records"`
	// RecordNames, when set, is how warnings and explanations name Records[i] instead of
	// "records[i]" (the tmsh front end numbers records from 1, as pasted).
	RecordNames []string `json:"-"`
	// GeoFromQuery says the geo classification comes with each query (Query.Declared), not
	// from Geo: a country, continent, ISP or state source missing from Geo is then no warning.
	GeoFromQuery bool `json:"-"`
}

// Pool is a GTM pool: a candidate at wide-IP level, the owner of the candidates at pool level.
type Pool struct {
	Name string `json:"name"`
	// LoadBalancing is the pool's method for choosing members (tmsh load-balancing-mode).
	LoadBalancing string `json:"load_balancing"`
	// Fallback is the pool's fallback method (tmsh fallback-mode). With topology at both
	// levels it must be none, or a query can fall through an empty pool to BIND.
	Fallback string `json:"fallback"`
	// Alternate is the pool's alternate method (tmsh alternate-mode), tried when the
	// preferred method has no answer; empty when not given.
	Alternate string   `json:"alternate,omitempty"`
	Members   []Member `json:"members,omitempty"`
}

// Member is a pool member (a virtual server): a candidate at pool level.
type Member struct {
	Name       string     `json:"name"`
	Address    netip.Addr `json:"address"`
	DataCenter string     `json:"datacenter,omitempty"`
	// Down marks a member unavailable: it is no candidate.
	Down bool `json:"down,omitempty"`
}

// geoEntry classifies the addresses of Subnet. Any of Country, Continent, ISP and State may
// be empty (unknown), not all four.
type geoEntry struct {
	Subnet    netip.Prefix `json:"subnet"`
	Country   string       `json:"country,omitempty"`
	Continent string       `json:"continent,omitempty"`
	ISP       string       `json:"isp,omitempty"`
	State     string       `json:"state,omitempty"`
}

// Warning is a case the tool flags instead of deciding silently: a configuration the
// sources warn about, or an order or match they do not confirm.
type Warning struct {
	// Rule names the case, one of the Rule* constants.
	Rule string `json:"rule"`
	// Text says what was found, with the records, pools and values, and what was done.
	Text string `json:"text"`
}

func (w Warning) String() string { return "[" + w.Rule + "] " + w.Text }

// The warning rules.
const (
	// RuleFallbackNotNone: topology at both levels and a pool's fallback is not none.
	RuleFallbackNotNone = "fallback-not-none"
	// RuleDataCenterAtWideIP: a data-center destination at wide-IP level, where it never
	// matches (a pool is not inside a data center).
	RuleDataCenterAtWideIP = "datacenter-at-wideip"
	// RuleDestinationAtWideIP: a subnet, ISP, country or continent destination at wide-IP
	// level; the sources do not say how a pool would match it, so it never matches here.
	RuleDestinationAtWideIP = "destination-kind-at-wideip"
	// RuleNegationUnconfirmed: a record negated on both sides, or a wildcard with a negated
	// destination; the sources do not confirm where it sorts.
	RuleNegationUnconfirmed = "negation-order-unconfirmed"
	// RuleTieFileOrder: a record was shadowed by one that equals it on every documented sort
	// key; only the file order put one above the other.
	RuleTieFileOrder = "tie-file-order"
	// RuleWeightDirection: a record was shadowed by one that differs from it only in weight;
	// the sources name weight as the last key without saying higher or lower first.
	RuleWeightDirection = "weight-direction"
	// RuleDefaultScore: a record has no explicit score and weighs the default 1.
	RuleDefaultScore = "default-score"
	// RuleNeverMatches: a source that can never match (a country, continent or ISP the geo
	// table never gives, a negated wildcard).
	RuleNeverMatches = "never-matches"
	// RuleUnknownPool: a destination names a pool that is not among the candidates' pools.
	RuleUnknownPool = "unknown-pool"
	// RuleECSIgnored: the query carried an EDNS0 Client Subnet but prefer_edns0_client_subnet
	// is off, so the LDNS address was classified.
	RuleECSIgnored = "ecs-ignored"
	// RuleECSEmpty: the query carried an EDNS0 Client Subnet of prefix length 0, which says
	// nothing of the client (RFC 7871), so the LDNS address was classified.
	RuleECSEmpty = "ecs-empty"
	// RuleRankUnconfirmed: a record uses a kind (state) that the sources do not place on the
	// Longest Match ladder; it sorts between ISP and country.
	RuleRankUnconfirmed = "rank-unconfirmed"
	// RuleNegatedMember: a region has negated members; the sources do not say how BIG-IP
	// combines them (this tool: a plain member matches, or there is none, and no negated one
	// does).
	RuleNegatedMember = "negated-region-member"
	// RuleZeroScore: the winner's score is 0; the sources do not say whether BIG-IP treats a
	// zero score as a match.
	RuleZeroScore = "zero-score-winner"
)
