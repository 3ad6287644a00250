package edgepick

import (
	"context"
	"fmt"
	"net"
	"net/netip"
)

// Resolver looks a name up. *net.Resolver implements it; net.DefaultResolver is the system
// resolver, the one real traffic uses, and the one the agent and the platform must use so they
// see the same list (a direct DNS query can disagree with it, or fail where it works).
type Resolver interface {
	LookupNetIP(ctx context.Context, network, host string) ([]netip.Addr, error)
}

// Resolve turns name (host:port) into the candidate set: one address per record of the host's
// A set (and AAAA, if the system resolver returns them), each with the name's port. An IP literal
// host resolves to itself. The name is checked as ParseTarget checks --name. A nil r is
// net.DefaultResolver.
func Resolve(ctx context.Context, r Resolver, name string) (Set, error) {
	host, port, err := parseName("edge name", name)
	if err != nil {
		return nil, err
	}
	if ip, err := netip.ParseAddr(host); err == nil {
		return setOf([]netip.AddrPort{netip.AddrPortFrom(ip.Unmap(), port)}), nil
	}
	if r == nil {
		r = net.DefaultResolver
	}
	ips, err := r.LookupNetIP(ctx, "ip", host)
	if err != nil {
		return nil, fmt.Errorf("resolve edge name %s through the system resolver: %w", host, err)
	}
	addrs := make([]netip.AddrPort, 0, len(ips))
	for _, ip := range ips {
		addrs = append(addrs, netip.AddrPortFrom(ip.Unmap(), port))
	}
	return setOf(addrs), nil
}
