package topology

import (
	"fmt"
	"strings"
)

// Paste is what an operator pasted from a BIG-IP terminal (`tmsh list gtm …`), read by
// ParseTMSH: the topology records and regions, the longest-match setting, the wide IPs, pools
// and servers that make the two levels, and the query lines that make it one self-contained
// case. Decide turns it into a Decision.
type Paste struct {
	// Records are the topology records in the order pasted; Records[i] is "record i+1".
	Records []pastedRecord
	// Regions are the user-defined regions by name (partition removed).
	Regions map[string][]Statement
	// Unpasted are the regions records or regions name that the paste does not define
	// (sorted): a paste of tmsh list gtm topology alone. Such a region holds the query only
	// when the source line declares it (source region=NAME), and no destination; Decide says
	// which were taken as declared.
	Unpasted []string
	// LongestMatch is topology-longest-match (default yes); PreferECS is
	// topology-prefer-edns0-client-subnet.
	LongestMatch bool
	PreferECS    bool
	WideIPs      []WideIP
	// Pools are the gtm pool stanzas in the order pasted, members resolved through the gtm
	// server stanzas (data center, address). A pool is known by its record type and full path
	// (gtm pool a /Common/P and gtm pool aaaa /Common/P are two pools); a wide IP uses the
	// pools of its own type (see reachablePools).
	Pools []pastedPool
	// Query is the "source" line; nil when there is none (sorted-only).
	Query *Query
	// Candidates is the "candidates" line; Down names the members the "down" line marks down.
	// A member is named SERVER:VS, or VS when no other server has a virtual server of that
	// name.
	Candidates []string
	Down       []string
	// Ignored are the stanzas read past because they do not bear on topology.
	Ignored []string
}

// pastedRecord is one gtm topology record with what the paste said of it.
type pastedRecord struct {
	Record
	// Text is the record as pasted, on one line.
	Text string
	// Order is the tmsh "order" line; 0 when the record has none.
	Order int
	Line  int
}

// pastedPool is one gtm pool stanza with what the paste said of it.
type pastedPool struct {
	Pool
	// Type is the record type (a, aaaa, cname, mx, naptr, srv); empty in formats that give
	// none. Path is the name as pasted, partition included (/Common/POOL1).
	Type string
	Path string
	Line int
}

// stanza names the pool as tmsh lists it, with its line: "gtm pool a /Common/P (line 4)".
func (p pastedPool) stanza() string {
	return fmt.Sprintf("%s (line %d)", typedStanza("gtm pool", p.Type, p.Path), p.Line)
}

// WideIP is a gtm wideip stanza: its pools in order and how it chooses among them. A wide IP is
// known by its record type and full path; it uses the pools of its type.
type WideIP struct {
	// Name is the wide IP's name without its partition; Path is the name as pasted.
	Name string
	Path string
	// Type is the record type (a, aaaa, …); empty in formats that give none.
	Type string
	Line int
	// LoadBalancing is pool-lb-mode (BIG-IP's default is round-robin).
	LoadBalancing string
	// Pools are the pools as the pools block names them (partition included), in order.
	Pools []string
}

// stanza names the wide IP as tmsh lists it: "gtm wideip a www.example.com".
func (w WideIP) stanza() string { return typedStanza("gtm wideip", w.Type, w.Path) }

// typedStanza is "gtm pool a /Common/P", or "gtm pool /Common/P" when the paste gives no type.
func typedStanza(kind, typ, path string) string {
	if typ == "" {
		return kind + " " + path
	}
	return kind + " " + typ + " " + path
}

// tmshShape is the shape a tmsh paste is expected in; every error about a paste ends with it.
const tmshShape = `want tmsh text as BIG-IP prints it (tmsh list gtm topology / gtm region / gtm wideip / gtm pool), e.g.:
  gtm topology ldns: subnet 10.1.2.0/24 server: pool /Common/POOL1 { score 30 }
  gtm topology ldns: region /Common/near server: pool /Common/POOL2 {
      order 2
      score 20
  }
  gtm region /Common/near { region-members { subnet 10.1.0.0/16 { } } }
  source ip=10.1.2.7        (or: source country=PT continent=EU isp="Example Net" state="US/Ohio" region=near)
  candidates POOL1 POOL2    (optional: else the record destinations, or the wide IP's pools)
  down vs1                  (optional: members marked down; SERVER:VS when several servers have a vs1)`

// LooksLikeTMSH reports whether text reads as a tmsh paste rather than YAML: its first word
// (past comments and blank lines) starts a gtm stanza or a query line.
func LooksLikeTMSH(text string) bool {
	for _, line := range strings.Split(text, "\n") {
		f := strings.Fields(line)
		if len(f) == 0 || strings.HasPrefix(f[0], "#") {
			continue
		}
		switch f[0] {
		case "gtm", "source", "candidates", "down":
			return true
		}
		if promptLine(line) {
			continue
		}
		return false
	}
	return false
}

// bare is a tmsh object name without its partition and folder: /Common/POOL1 is POOL1, and a
// pool member /Common/dc1-server:/Common/vs1 is dc1-server:vs1.
func bare(name string) string {
	parts := strings.Split(name, ":")
	for i, p := range parts {
		if j := strings.LastIndexByte(p, '/'); j >= 0 && j < len(p)-1 {
			parts[i] = p[j+1:]
		}
	}
	return strings.Join(parts, ":")
}
