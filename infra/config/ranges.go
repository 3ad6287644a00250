package config

import (
	"fmt"
	"net/netip"
	"strings"
)

// ParseRanges parses a list of trusted peers (those allowed to send a PROXY header, the proxies
// whose X-Forwarded-For is kept), named what in errors (a flag or a config key): each entry an IP address (10.0.0.7) or a CIDR range (10.0.0.0/8).
func ParseRanges(what string, entries []string) ([]netip.Prefix, error) {
	var out []netip.Prefix
	for _, e := range entries {
		e = strings.TrimSpace(e)
		if p, err := netip.ParsePrefix(e); err == nil {
			out = append(out, UnmapPrefix(p))
			continue
		}
		a, err := netip.ParseAddr(e)
		if err != nil {
			return nil, fmt.Errorf("%s %q: must be an IP address or a CIDR range such as 10.0.0.0/8 (the trusted peers)", what, e)
		}
		a = a.Unmap()
		out = append(out, netip.PrefixFrom(a, a.BitLen()))
	}
	return out, nil
}

// UnmapPrefix is p masked, an IPv4-mapped IPv6 prefix (::ffff:198.51.100.7/128, the form a
// dual-stack socket shows an IPv4 peer in) as the IPv4 prefix it covers (/96+n is /n): peers are
// compared unmapped, and an IPv4 address is never inside an IPv6 prefix.
func UnmapPrefix(p netip.Prefix) netip.Prefix {
	if p.Addr().Is4In6() && p.Bits() >= 96 {
		return netip.PrefixFrom(p.Addr().Unmap(), p.Bits()-96).Masked()
	}
	return p.Masked()
}
