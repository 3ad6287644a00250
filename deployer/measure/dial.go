package measure

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"net"
	"time"
)

// dialer opens the load's connections. With a DNS server (Options.DNS) it resolves the target's
// name there for every new connection, as a client behind a resolver with a short TTL does, and
// tries the answer's addresses in a random order: a client of a multi-address A record set (the
// edges) spreads over the set and moves off an address that refuses.
type dialer struct {
	net      net.Dialer
	resolver *net.Resolver // nil: the system's
}

func newDialer(dns string) *dialer {
	d := &dialer{net: net.Dialer{Timeout: 2 * time.Second, KeepAlive: 30 * time.Second}}
	if dns != "" {
		d.resolver = &net.Resolver{PreferGo: true, Dial: func(ctx context.Context, network, _ string) (net.Conn, error) {
			var nd net.Dialer
			return nd.DialContext(ctx, network, dns)
		}}
	}
	return d
}

// DialContext resolves addr's host and connects to one of its addresses.
func (d *dialer) DialContext(ctx context.Context, network, addr string) (net.Conn, error) {
	if d.resolver == nil {
		return d.net.DialContext(ctx, network, addr)
	}
	host, port, err := net.SplitHostPort(addr)
	if err != nil {
		return nil, err
	}
	ips, err := d.resolver.LookupHost(ctx, host)
	if err != nil {
		return nil, fmt.Errorf("resolve %s: %w", host, err)
	}
	rand.Shuffle(len(ips), func(i, j int) { ips[i], ips[j] = ips[j], ips[i] })
	var errs []error
	for _, ip := range ips {
		c, err := d.net.DialContext(ctx, network, net.JoinHostPort(ip, port))
		if err == nil {
			return c, nil
		}
		errs = append(errs, err)
	}
	return nil, errors.Join(errs...)
}
