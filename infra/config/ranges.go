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
			out = append(out, p.Masked())
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
