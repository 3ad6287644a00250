package agent

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"net"
	"net/netip"
	"time"

	"github.com/zero502/zero502/infra/edgepick"
)

// defaultDialTimeout bounds one dial (TCP connect and TLS handshake) of one address.
const defaultDialTimeout = 10 * time.Second

// dialOrder is the order the agent dials in: first (a switch's target) when valid, then the
// choice, then the rest of the ranking best first (failed edges last, as ranked). Empty when
// there is no ranking: the caller dials the name the way it always did.
func dialOrder(first netip.AddrPort, c edgepick.Choice) []netip.AddrPort {
	var out []netip.AddrPort
	add := func(a netip.AddrPort) {
		if !a.IsValid() {
			return
		}
		for _, have := range out {
			if have == a {
				return
			}
		}
		out = append(out, a)
	}
	add(first)
	add(c.Addr)
	for _, m := range c.Ranking {
		add(m.Addr)
	}
	return out
}

// dialed is an established session's connection and the edge it went through.
type dialed struct {
	conn *tls.Conn
	edge netip.AddrPort // invalid when the name was dialed through the resolver
}

// dial tries order in turn; with an empty order it dials target (the name, or the first fixed
// address) the plain way. failed is called for every address that did not answer.
func (a *Agent) dial(ctx context.Context, order []netip.AddrPort, failed func(netip.AddrPort, error)) (dialed, error) {
	d := &tls.Dialer{NetDialer: &net.Dialer{Timeout: a.dialTimeout()}, Config: a.TLS}
	if len(order) == 0 {
		target := a.Picker.Name
		if target == "" && len(a.Picker.Addrs) > 0 {
			order = a.Picker.Addrs
		} else {
			c, err := d.DialContext(ctx, "tcp", target)
			if err != nil {
				return dialed{}, fmt.Errorf("dial %s through the system resolver (no edge choice): %w", target, err)
			}
			return dialed{conn: c.(*tls.Conn)}, nil
		}
	}
	var errs []error
	for _, ap := range order {
		c, err := d.DialContext(ctx, "tcp", ap.String())
		if err == nil {
			return dialed{conn: c.(*tls.Conn), edge: ap}, nil
		}
		if ctx.Err() != nil {
			return dialed{}, ctx.Err()
		}
		err = fmt.Errorf("edge %s: %w", ap, err)
		failed(ap, err)
		errs = append(errs, err)
	}
	return dialed{}, fmt.Errorf("no edge of %v finished a TCP connect and TLS handshake: %w", order, errors.Join(errs...))
}
