package topology

import (
	"net/netip"
	"strings"
	"testing"
)

func TestParseStatementReadsTmshForms(t *testing.T) {
	for _, tc := range []struct {
		in   string
		want Statement
	}{
		{"subnet 10.1.2.0/24", Statement{Kind: KindSubnet, Subnet: netip.MustParsePrefix("10.1.2.0/24")}},
		{"not subnet 10.1.2.7/32", Statement{Not: true, Kind: KindSubnet, Subnet: netip.MustParsePrefix("10.1.2.7/32")}},
		{"subnet 2001:db8::/32", Statement{Kind: KindSubnet, Subnet: netip.MustParsePrefix("2001:db8::/32")}},
		{"  NOT   Country  pt ", Statement{Not: true, Kind: KindCountry, Name: "PT"}},
		{"continent eu", Statement{Kind: KindContinent, Name: "EU"}},
		{"continent Europe", Statement{Kind: KindContinent, Name: "EU"}}, // tmsh and the GUI show names too
		{"not continent north  AMERICA", Statement{Not: true, Kind: KindContinent, Name: "NA"}},
		{"isp Deutsche   Telekom", Statement{Kind: KindISP, Name: "Deutsche Telekom"}},
		{"region eu-west", Statement{Kind: KindRegion, Name: "eu-west"}},
		{"pool /Common/POOL1", Statement{Kind: KindPool, Name: "/Common/POOL1"}},
		{"datacenter DC1", Statement{Kind: KindDataCenter, Name: "DC1"}},
		{"not state US/New  York", Statement{Not: true, Kind: KindState, Name: "US/New York"}},
	} {
		t.Run(tc.in, func(t *testing.T) {
			got, err := parseStatement(tc.in)
			if err != nil {
				t.Fatal(err)
			}
			if got != tc.want {
				t.Fatalf("got %+v, want %+v", got, tc.want)
			}
		})
	}
}

func TestParseStatementRefusesWithTheRule(t *testing.T) {
	for _, tc := range []struct{ in, says string }{
		{"", "[not] KIND VALUE"},
		{"not", "[not] KIND VALUE"},
		{"planet Mars", `unknown kind "planet"`},
		{"geoip-isp x", "not place them in the Longest Match hierarchy"},
		{"not not country PT", `unknown kind "not"`},
		{"subnet", "subnet with no value"},
		{"subnet 10.1.2.0", "is not CIDR"},
		{"subnet 10.1.2.0/33", "is not CIDR"},
		{"subnet 10.1.2.7/24", "did you mean 10.1.2.0/24"},
		{"country Portugal", "two-letter code"},
		{"country P1", "two-letter code"},
		{"continent Atlantis", `continent "Atlantis" is not one of AF AN AS EU NA OC SA, nor their names`},
		{"continent North Pole", `continent "North Pole" is not one of`},
		{"pool POOL 1", "a pool is one word"},
		{"region eu west", "a user-defined region is one word"},
	} {
		t.Run(tc.in, func(t *testing.T) {
			_, err := parseStatement(tc.in)
			if err == nil || !strings.Contains(err.Error(), tc.says) {
				t.Fatalf("ParseStatement(%q) = %v, want an error saying %q", tc.in, err, tc.says)
			}
		})
	}
}

// FuzzParseStatement: the parser never panics, and what it accepts prints back to a statement
// it reads the same way.
func FuzzParseStatement(f *testing.F) {
	for _, s := range []string{
		"subnet 10.1.2.0/24", "not subnet 0.0.0.0/0", "subnet ::/0", "region eu-west",
		"not country ES", "continent EU", "isp Example Net", "pool POOL1", "datacenter DC1",
		"state CA", "subnet 10.1.2.7/24", "NOT ISP x", "", "not", "country \x00\x01",
	} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		st, err := parseStatement(s)
		if err != nil {
			return
		}
		again, err := parseStatement(st.String())
		if err != nil {
			t.Fatalf("%q parsed to %q, which does not parse: %v", s, st, err)
		}
		if again != st {
			t.Fatalf("%q parsed to %+v, printed %q, reparsed to %+v", s, st, st.String(), again)
		}
		if st.Kind == KindSubnet && st.Subnet != st.Subnet.Masked() {
			t.Fatalf("%q: subnet %s kept host bits", s, st.Subnet)
		}
	})
}
