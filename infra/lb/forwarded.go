package lb

import (
	"net/netip"

	"github.com/zero502/zero502/infra/origin"
)

// trustsForwarded says whether the client at ip (the connection's address, or its accepted
// PROXY header's) is one of Settings.TrustedProxies, whose X-Forwarded-For the LB keeps.
// With none configured (the default) it is false at once, without parsing ip.
func (s *Server) trustsForwarded(ip []byte) bool {
	if len(s.forwardedFrom) == 0 {
		return false
	}
	a, err := netip.ParseAddr(string(ip))
	return err == nil && origin.Trusts(s.forwardedFrom, a)
}
