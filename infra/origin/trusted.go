package origin

import (
	"net/netip"

	"github.com/zero502/zero502/infra/config"
)

// ParseTrusted parses the trusted edges (the --trusted flag): each entry an IP address
// (10.0.0.7, a single edge) or a CIDR range (10.0.0.0/8).
func ParseTrusted(entries []string) ([]netip.Prefix, error) {
	return config.ParseRanges("--trusted", entries)
}

// Trusts reports whether a is in one of ranges (an IPv4-mapped address counts as IPv4).
func Trusts(ranges []netip.Prefix, a netip.Addr) bool {
	a = a.Unmap()
	for _, p := range ranges {
		if p.Contains(a) {
			return true
		}
	}
	return false
}
