package topology

import (
	"fmt"
	"net/netip"
	"strings"
)

// ExampleYAML is the worked example, in the file format Parse reads. The records are written
// in the reverse of the order Longest Match walks them, to show the sort doing its work.
//
// A query from inside 10.1.2.0/24 matches all three records. Sorted: the /24 first, the region
// second (a region sorts as a region, though it contains the /16 around the /24), the wildcard
// last. POOL1 takes 30 from the subnet record, POOL2 takes 20 from the region record and the
// wildcard's 40 is shadowed: POOL1 wins 30 to 20 although a 40 is in the list. Delete the region
// record (ExampleWithoutRegion) and POOL2 takes its score from the wildcard: 40 beats 30 and the
// answer flips.
const ExampleYAML = `# The worked example: Longest Match orders, the scores decide.
longest_match: true
level: wideip
regions:
  around-10-1: ["subnet 10.1.0.0/16"]
pools:
  - {name: POOL1, fallback: none}
  - {name: POOL2, fallback: none}
records:
  - {source: "subnet 0.0.0.0/0", destination: "pool POOL2", score: 40}
  - {source: "region around-10-1", destination: "pool POOL2", score: 20}
  - {source: "subnet 10.1.2.0/24", destination: "pool POOL1", score: 30}
`

// ExampleTMSH is the worked example as an operator pastes it: the records as tmsh list gtm
// topology prints them (multi-line form, written in the reverse of the walk order), the region,
// and a query line from inside the /24. Delete the region record and POOL2 wins 40 to 30.
const ExampleTMSH = `gtm topology ldns: subnet 0.0.0.0/0 server: pool /Common/POOL2 {
    order 1
    score 40
}
gtm topology ldns: region /Common/around-10-1 server: pool /Common/POOL2 {
    order 2
    score 20
}
gtm topology ldns: subnet 10.1.2.0/24 server: pool /Common/POOL1 {
    order 3
    score 30
}
gtm region /Common/around-10-1 {
    region-members {
        subnet 10.1.0.0/16 { }
    }
}
source ip=10.1.2.7
`

// ExampleQuery is a query from inside the example's /24.
func ExampleQuery() Query {
	return Query{LDNS: netip.MustParseAddr("10.1.2.7")}
}

// Example returns the worked example (ExampleYAML).
func Example() *Set {
	s, err := Parse(strings.NewReader(ExampleYAML))
	if err != nil {
		panic(fmt.Sprintf("the worked example does not parse: %v", err))
	}
	return s
}

// ExampleWithoutRegion returns the worked example with its region record deleted: the answer
// flips from POOL1 to POOL2.
func ExampleWithoutRegion() *Set {
	s := Example()
	var kept []Record
	for _, r := range s.Records {
		if r.Source.Kind != KindRegion {
			kept = append(kept, r)
		}
	}
	s.Records = kept
	return s
}
