package topology

import (
	"fmt"
	"net/netip"
	"testing"
)

// Regions nested as a diamond (each holding two regions that both hold the next one) are judged
// once each per match: the members looked at grow with the regions, not 2^depth (a 3 KB paste of
// 40 such levels would otherwise never be scored). The deepest region holds the subnet.
func TestNestedRegionsAreJudgedOncePerMatch(t *testing.T) {
	const depth = 20
	regions := map[string][]Statement{}
	for i := range depth {
		a, b := fmt.Sprintf("a%d", i), fmt.Sprintf("b%d", i)
		next := fmt.Sprintf("r%d", i+1)
		regions[fmt.Sprintf("r%d", i)] = []Statement{{Kind: KindRegion, Name: a}, {Kind: KindRegion, Name: b}}
		regions[a] = []Statement{{Kind: KindRegion, Name: next}}
		regions[b] = []Statement{{Kind: KindRegion, Name: next}}
	}
	regions[fmt.Sprintf("r%d", depth)] = []Statement{{Kind: KindSubnet, Subnet: netip.MustParsePrefix("10.0.0.0/8")}}
	s := &Set{Regions: regions}
	for _, tc := range []struct {
		addr string
		want bool
	}{{"10.1.2.3", true}, {"192.0.2.1", false}} {
		looked := 0
		w := newWalk()
		var test func(Statement, *walk) (bool, string)
		test = func(m Statement, w *walk) (bool, string) {
			looked++
			if m.Kind == KindRegion {
				return s.regionMatches(m.Name, w, test)
			}
			return m.Subnet.Contains(netip.MustParseAddr(tc.addr)), ""
		}
		ok, via := s.regionMatches("r0", w, test)
		if ok != tc.want {
			t.Errorf("%s in r0: %v (via %q), want %v", tc.addr, ok, via, tc.want)
		}
		if members := 4*depth + 1; looked > members {
			t.Errorf("%s: %d members looked at for %d regions of %d members, want each looked at once", tc.addr, looked, len(regions), members)
		}
	}
}
