package edgepick

import (
	"errors"
	"fmt"
	"net"
	"net/netip"
	"strconv"
)

// target is where an agent's edges come from, as the commands that pick an edge (zero502
// edgepick, edgepick survey, agent) are told: a Name resolved through the system resolver, or a
// fixed list of Addrs (no DNS), and the ServerName the origin's certificate is checked against.
type target struct {
	Name       string
	Addrs      []netip.AddrPort
	ServerName string
}

// ParseTarget checks --name, --addrs and --server-name: exactly one of name (host:port) and
// addrs (each IP:PORT), every port from 1 to 65535. An empty serverName is the host of a name
// that is not an IP address; it may only stay empty when insecure (--insecure-skip-verify) says
// no certificate is checked. Each error names the flag, the value and the rule.
func ParseTarget(name string, addrs []string, serverName string, insecure bool) (target, error) {
	switch {
	case name == "" && len(addrs) == 0:
		return target{}, errors.New("give --name HOST:PORT (resolved through the system resolver) or --addrs IP:PORT,... (no DNS)")
	case name != "" && len(addrs) > 0:
		return target{}, fmt.Errorf("--name %q and --addrs %v: give one of them, not both", name, addrs)
	}
	t := target{Name: name, ServerName: serverName}
	if name != "" {
		host, _, err := parseName("--name", name)
		if err != nil {
			return target{}, err
		}
		if t.ServerName == "" {
			if _, ipErr := netip.ParseAddr(host); ipErr != nil {
				t.ServerName = host
			}
		}
	}
	for _, a := range addrs {
		ap, err := netip.ParseAddrPort(a)
		if err == nil && ap.Port() == 0 {
			err = errors.New("port 0")
		}
		if err != nil {
			return target{}, fmt.Errorf("--addrs %q: each must be IP:PORT with a port from 1 to 65535, e.g. 127.0.0.1:8443 (%v)", a, err)
		}
		t.Addrs = append(t.Addrs, ap)
	}
	if t.ServerName == "" && !insecure {
		return target{}, errors.New("--server-name is empty: give the name the origin's certificate is issued for " +
			"(it cannot come from an IP address), or --insecure-skip-verify in a lab")
	}
	return t, nil
}

// parseName splits an edge name into its host and port: host:port with a host and a port from 1
// to 65535. The error starts with what (the flag, or "edge name") and the name.
func parseName(what, name string) (host string, port uint16, err error) {
	host, portStr, err := net.SplitHostPort(name)
	if err == nil && host == "" {
		err = errors.New("no host")
	}
	if err == nil {
		n, perr := strconv.ParseUint(portStr, 10, 16)
		if perr != nil || n == 0 {
			err = fmt.Errorf("port %q is not from 1 to 65535", portStr)
		}
		port = uint16(n)
	}
	if err != nil {
		return "", 0, fmt.Errorf("%s %q: must be host:port with a port from 1 to 65535, e.g. edge.example.com:443 (%v)", what, name, err)
	}
	return host, port, nil
}
