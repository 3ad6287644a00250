// Package topology owns the GTM (F5 BIG-IP DNS) topology decision: a list of topology records
// (request source, destination, score), the Longest Match order that BIG-IP puts them in, and
// the scoring pass that turns the ordered list into one answer for one query.
//
// The point the package is built around: Longest Match orders, it does not choose. Walking the
// ordered records, each candidate (a pool at wide-IP level, a pool member at pool level) takes
// its score from the FIRST record whose source matches the query and whose destination matches
// the candidate; every later record naming that candidate is shadowed and never used. The
// candidate with the highest score wins, equal top scores go round robin. So a wildcard worth
// 100 beats a /32 worth 5, and deleting a record can flip the answer (see Example).
//
// The rules come from the Topology chapter of the BIG-IP GTM Load Balancing manual and F5
// K10721. Where those sources do not decide a case (two records equal on every documented sort
// key, the direction of the weight key, a record negated on both sides, destination kinds that
// the sources do not place at wide-IP level), the package does not guess silently: it keeps a
// documented default and reports a Warning naming the records involved.
//
// A set is read from YAML (Parse, Load) that reads like tmsh; everything a person could get
// wrong in it is refused with the field, the value and the rule before anything is computed:
//
//	longest_match: true               # default true; false walks the records as written
//	prefer_edns0_client_subnet: false # classify the query's ECS instead of the LDNS address
//	level: wideip                     # wideip: the pools compete; pool: the members of `pool` do
//	regions:                          # user-defined, nestable, no cycles
//	  eu-west: ["subnet 10.1.0.0/16", "country PT", "region iberia"]
//	  iberia: ["country ES"]
//	geo:                              # the only geolocation: longest subnet wins
//	  - {subnet: 10.0.0.0/8, country: PT, continent: EU, isp: ExampleNet}
//	pools:                            # load_balancing and fallback are tmsh's modes
//	  - {name: POOL1, load_balancing: topology, fallback: none}
//	  - {name: POOL2, members: [{name: vs1, address: 192.0.2.10, datacenter: DC1}]}
//	records:                          # score is tmsh's name for the weight; default 1
//	  - {source: "subnet 10.1.2.0/24", destination: "pool POOL1", score: 30}
//	  - {source: "not country ES", destination: "pool POOL2", score: 40}
//
// The same set can come from what an operator has in a terminal: ParseTMSH reads the output of
// tmsh list gtm topology (one-line or multi-line), gtm region, gtm global-settings
// load-balancing, gtm wideip, gtm pool and gtm server stanzas, and query lines ("source
// ip=10.1.2.7", "candidates POOL1 POOL2", "down vs1"); Decide walks the same records with the
// same order and scoring, at wide-IP level and then, for the chosen pool, at pool level, and
// says where the query ends (a member, the alternate or fallback method, the next pool, or the
// local BIND). See ExampleTMSH.
//
// A statement is "[not] KIND VALUE" (parseStatement). Topology runs at both levels when the
// wide IP's method (wideip_load_balancing, default topology) and a pool's load_balancing are
// both topology; that pool's fallback must then be none.
package topology
