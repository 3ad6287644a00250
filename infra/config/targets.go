package config

import (
	"fmt"
	"net"
	"net/netip"
	"regexp"
	"strconv"
	"strings"
)

// servicePort is one port of a service (before a host's port_offset) and its key under
// services[i] (port, ports[0], ports[1]).
type servicePort struct {
	key  string
	port int
}

// allPorts are every port service s listens on, on each host (before the host's port_offset):
// its port and, for start-first, both of its ports, each once; none for a worker. Ports out of
// range are refused on their own and left out here.
func (s Service) allPorts() []servicePort {
	var out []servicePort
	add := func(key string, p int) {
		if p < 1 || p > 65535 {
			return
		}
		for _, o := range out {
			if o.port == p {
				return
			}
		}
		out = append(out, servicePort{key, p})
	}
	for j, p := range s.Ports {
		add(fmt.Sprintf("ports[%d]", j), p)
	}
	add("port", s.Port) // ports[0] when ports are set
	return out
}

// portClashes refuses a port two services of one host would both listen on (every host runs
// every service), and a port two hosts on one address would both listen on (the same address and
// port_offset, or offsets close enough that one host's port is another's, e.g. start-first ports
// [8080, 8081] with port_offset 0 and 1). Either way one listener's failed bind would be answered
// by the other's health check: the balancer would count one server twice, and a deploy of one
// service or "host" would stop the other.
func (c *Config) portClashes() []error {
	var errs []error
	// Two services of one host.
	owner := map[int]int{} // port → index of the first service with it
	for i, s := range c.Services {
		for _, p := range s.allPorts() {
			j, taken := owner[p.port]
			if !taken {
				owner[p.port] = i
				continue
			}
			if j == i {
				continue
			}
			other := c.Services[j]
			errs = append(errs, &FieldError{
				Key:   fmt.Sprintf("services[%d].%s", i, p.key),
				Value: p.port,
				Rule: fmt.Sprintf("service %s and service %s (services[%d]) both listen on port %d on every host: "+
					"one would fail to bind and the other would answer its health checks; give each service its own ports",
					s.Name, other.Name, j, p.port),
			})
		}
	}

	// Two hosts on one address.
	balanced, hasBalanced := c.BalancedService()
	type use struct {
		host    int
		service string
		port    int // before the offset
	}
	byAddr := map[string]map[int]use{} // address → port on it → first host and service with it
	for i, h := range c.Hosts {
		if h.Address == "" || hostRule(h.Address) != "" {
			continue // refused on its own
		}
		addr := canonicalHost(h.Address)
		if byAddr[addr] == nil {
			byAddr[addr] = map[int]use{}
		}
		ports := byAddr[addr]
		clashed := map[int]bool{} // hosts this one was already refused against
		for _, s := range c.Services {
			for _, p := range s.allPorts() {
				at := p.port + h.PortOffset
				u, taken := ports[at]
				if !taken {
					ports[at] = use{i, s.Name, p.port}
					continue
				}
				if u.host == i || clashed[u.host] {
					continue
				}
				clashed[u.host] = true
				other := c.Hosts[u.host]
				key, value := fmt.Sprintf("hosts[%d].port_offset", i), any(h.PortOffset)
				what := fmt.Sprintf("service %s's port %d + port_offset %d on host %s is service %s's port %d + port_offset %d on host %s",
					s.Name, p.port, h.PortOffset, h.Name, u.service, u.port, other.PortOffset, other.Name)
				if h.PortOffset == other.PortOffset {
					key, value = fmt.Sprintf("hosts[%d].address", i), h.ServiceAddr(Service{Port: p.port})
					what = fmt.Sprintf("service %s", s.Name)
					if u.service != s.Name {
						what = fmt.Sprintf("service %s on host %s, service %s on host %s", s.Name, h.Name, u.service, other.Name)
					}
				}
				if hasBalanced && s.Name == balanced.Name && u.service == balanced.Name {
					what += ": the same balanced target"
				}
				errs = append(errs, &FieldError{
					Key:   key,
					Value: value,
					Rule: fmt.Sprintf("host %s and host %s (hosts[%d]) both listen on %s (%s): every host needs its own address, "+
						"or on a shared address a port_offset that keeps all its ports apart from the other hosts'",
						h.Name, other.Name, u.host, h.ServiceAddr(Service{Port: p.port}), what),
				})
			}
		}
	}
	return errs
}

// listenerClashes refuses two listeners of the in-house LB (balancer.listen, balancer.admin,
// balancer.tls.listen, balancer.tls.redirect_http) on one port of one address, or of an address
// and every interface: the LB binds them all in one process, and would fail to bind the second
// and not start. Port 0 (any free port) never clashes; a listener refused on its own is left out.
func (b Balancer) listenerClashes() []error {
	type listener struct {
		key, addr, host string
		port            int
	}
	var errs []error
	var bound []listener
	for _, l := range []listener{{key: "balancer.listen", addr: b.Listen}, {key: "balancer.admin", addr: b.Admin},
		{key: "balancer.tls.listen", addr: b.TLS.Listen}, {key: "balancer.tls.redirect_http", addr: b.TLS.RedirectHTTP}} {
		host, port, err := net.SplitHostPort(l.addr)
		if err != nil {
			continue // off ("") or refused on its own
		}
		if l.port, err = strconv.Atoi(port); err != nil || l.port < 1 || l.port > 65535 {
			continue
		}
		l.host = host
		for _, o := range bound {
			if o.port == l.port && listenersOverlap(o.host, l.host) {
				errs = append(errs, &FieldError{Key: l.key, Value: fmt.Sprintf("%q", l.addr), Rule: fmt.Sprintf(
					"is on the port of %s %q: the LB binds both and the second would fail (address in use); give each listener its own port",
					o.key, o.addr)})
				break
			}
		}
		bound = append(bound, l)
	}
	return errs
}

// listenersOverlap reports whether listeners on hosts a and b (of host:port) would take the same
// port of one address: the same host, or one of them every interface ("", ::, or 0.0.0.0 beside
// anything but an IPv6 address).
func listenersOverlap(a, b string) bool {
	a, b = canonicalHost(a), canonicalHost(b)
	if a == b || a == "" || b == "" || a == "::" || b == "::" {
		return true
	}
	for _, pair := range [][2]string{{a, b}, {b, a}} {
		if pair[0] == "0.0.0.0" {
			ip, err := netip.ParseAddr(pair[1])
			return err != nil || ip.Is4()
		}
	}
	return false
}

// canonicalHost is h as two hosts on the same address write it alike: an IP in its canonical
// form (::1 for 0:0::1), a name in lower case without a trailing dot.
func canonicalHost(h string) string {
	if a, err := netip.ParseAddr(h); err == nil {
		return a.Unmap().String()
	}
	return strings.TrimSuffix(strings.ToLower(h), ".")
}

// instanceIDRE is an EC2 instance id, as an ALB target of type instance names it.
var instanceIDRE = regexp.MustCompile(`^i-([0-9a-f]{8}|[0-9a-f]{17})$`)

// albTargets refuses, on an ALB, a hosts[].target that is no target id (an EC2 instance id or an
// IP address, without a port: the service's port is added), and two hosts whose balanced service
// would be one target of the group (hosts[].target, else hosts[].address, on the same port): a
// drain of one host would take the other's target out, its own never watched, and a start-first
// deploy would register its new instance under the other's name.
func (c *Config) albTargets() []error {
	if c.Balancer.Kind != BalancerALB {
		return nil
	}
	var errs []error
	balanced, hasBalanced := c.BalancedService()
	owner := map[string]int{} // target id:port → the first host with it
	for i, h := range c.Hosts {
		id, key := h.Address, fmt.Sprintf("hosts[%d].address", i)
		if h.Target != "" {
			id, key = h.Target, fmt.Sprintf("hosts[%d].target", i)
			if _, err := netip.ParseAddr(h.Target); err != nil && !instanceIDRE.MatchString(h.Target) {
				errs = append(errs, &FieldError{Key: key, Value: h.Target, Rule: "must be the host's target id in the target " +
					"group: an EC2 instance id (i-0a1b2c3d4e5f60001) or an IP address, without a port (the service's port is added)"})
				continue
			}
		}
		if id == "" || !hasBalanced {
			continue
		}
		id = canonicalHost(id)
		for _, p := range balanced.allPorts() {
			at := fmt.Sprintf("%s:%d", id, p.port+h.PortOffset)
			j, taken := owner[at]
			if !taken {
				owner[at] = i
				continue
			}
			errs = append(errs, &FieldError{Key: key, Value: id, Rule: fmt.Sprintf("host %s and host %s (hosts[%d]) would be one target "+
				"of the target group, %s (service %s's port %d): each host needs its own target (hosts[].target, else its address)",
				h.Name, c.Hosts[j].Name, j, at, balanced.Name, p.port+h.PortOffset)})
			break
		}
	}
	return errs
}
