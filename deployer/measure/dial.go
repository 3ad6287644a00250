package measure

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"net"
	"sync"
	"time"

	"github.com/miekg/dns"
)

// dialer opens the load's connections. With a DNS server (Options.DNS) it resolves the target's
// name there, as a client behind a caching resolver does: an answer is reused for its TTL and
// asked again once it expires (a TTL of 0 is asked every time). It tries the answer's addresses
// in a random order: a client of a multi-address A record set (the edges) spreads over the set
// and moves off an address that refuses.
type dialer struct {
	net      net.Dialer
	resolver *resolver // nil: the system's
}

func newDialer(server string) *dialer {
	// No connect timeout of its own: the request's (Options.Timeout, on its context) bounds the
	// connect with the rest, so a connect slower than some fixed bound but within it is no timeout.
	d := &dialer{net: net.Dialer{KeepAlive: 30 * time.Second}}
	if server != "" {
		d.resolver = &resolver{server: server, now: time.Now, answers: map[string]answer{}}
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
	ips, err := d.resolver.lookup(ctx, host)
	if err != nil {
		return nil, fmt.Errorf("resolve %s: %w", host, err)
	}
	ips = append([]string(nil), ips...)
	rand.Shuffle(len(ips), func(i, j int) { ips[i], ips[j] = ips[j], ips[i] })
	var errs []error
	for i, ip := range ips {
		c, err := d.dialShare(ctx, network, net.JoinHostPort(ip, port), len(ips)-i)
		if err == nil {
			return c, nil
		}
		errs = append(errs, err)
	}
	return nil, errors.Join(errs...)
}

// minShare is the least an address gets of the request's time while others are left to try
// (net.Dialer's own minimum when it shares a deadline among a name's addresses).
const minShare = 2 * time.Second

// dialShare connects to addr, one of left addresses still to try: with a deadline, it gets its
// share of the time remaining (at least minShare), as net.Dialer shares one among a name's
// addresses, so an address that drops SYNs leaves time for the next; the last gets all of it.
func (d *dialer) dialShare(ctx context.Context, network, addr string, left int) (net.Conn, error) {
	if deadline, ok := ctx.Deadline(); ok && left > 1 {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, max(time.Until(deadline)/time.Duration(left), minShare))
		defer cancel()
	}
	return d.net.DialContext(ctx, network, addr)
}

// resolver asks one DNS server for a name's A records and keeps each answer for its TTL. One
// question per name is in flight at a time: the dials that need it meanwhile wait for it.
type resolver struct {
	server string
	now    func() time.Time

	mu       sync.Mutex
	answers  map[string]answer
	inFlight map[string]chan struct{}
}

type answer struct {
	ips     []string
	expires time.Time
}

// lookup is host's addresses: a literal address as it is, else the cached answer while its TTL
// lasts, else a fresh one from the server.
func (r *resolver) lookup(ctx context.Context, host string) ([]string, error) {
	if ip := net.ParseIP(host); ip != nil {
		return []string{host}, nil
	}
	name := dns.Fqdn(host)
	for {
		r.mu.Lock()
		if a, ok := r.answers[name]; ok && r.now().Before(a.expires) {
			r.mu.Unlock()
			return a.ips, nil
		}
		if wait, ok := r.inFlight[name]; ok {
			r.mu.Unlock()
			select {
			case <-wait:
				continue
			case <-ctx.Done():
				return nil, ctx.Err()
			}
		}
		if r.inFlight == nil {
			r.inFlight = map[string]chan struct{}{}
		}
		done := make(chan struct{})
		r.inFlight[name] = done
		r.mu.Unlock()

		ips, ttl, err := r.ask(ctx, name)
		r.mu.Lock()
		delete(r.inFlight, name)
		close(done)
		if err == nil && ttl > 0 {
			r.answers[name] = answer{ips: ips, expires: r.now().Add(ttl)}
		}
		r.mu.Unlock()
		return ips, err
	}
}

// ask sends one A question over UDP (again over TCP when the answer is truncated) and returns
// the addresses with the smallest TTL among them.
func (r *resolver) ask(ctx context.Context, name string) ([]string, time.Duration, error) {
	q := new(dns.Msg)
	q.SetQuestion(name, dns.TypeA)
	c := &dns.Client{Timeout: 2 * time.Second}
	in, _, err := c.ExchangeContext(ctx, q, r.server)
	if err == nil && in.Truncated {
		c.Net = "tcp"
		in, _, err = c.ExchangeContext(ctx, q, r.server)
	}
	if err != nil {
		return nil, 0, fmt.Errorf("ask %s for %s: %w", r.server, name, err)
	}
	if in.Rcode != dns.RcodeSuccess {
		return nil, 0, fmt.Errorf("%s answered %s for %s", r.server, dns.RcodeToString[in.Rcode], name)
	}
	var ips []string
	ttl := time.Duration(-1)
	for _, rr := range in.Answer {
		a, ok := rr.(*dns.A)
		if !ok {
			continue
		}
		ips = append(ips, a.A.String())
		if t := time.Duration(a.Hdr.Ttl) * time.Second; ttl < 0 || t < ttl {
			ttl = t
		}
	}
	if len(ips) == 0 {
		return nil, 0, fmt.Errorf("%s has no A record for %s", r.server, name)
	}
	return ips, ttl, nil
}
