package edge

import (
	"fmt"
	"net"
	"strconv"
	"strings"
	"time"
)

// Defaults of the Forwarder's and the Relay's timeouts when their field is zero.
const (
	DefaultConnectTimeout = 3 * time.Second
	DefaultIdleTimeout    = 5 * time.Minute
)

// DefaultShutdown is the commands' default budget for open connections once a drain window is
// over (the Forwarder's and the Relay's Shutdown; 0 there closes them at once).
const DefaultShutdown = 10 * time.Second

// checkListen checks a listen address (--flag names it in the error): host:port, the host may
// be empty (every interface), the port 0 to 65535 (0: any free port).
func checkListen(flag, addr string) error {
	host, port, err := net.SplitHostPort(addr)
	if err == nil {
		err = checkHost(host, true)
	}
	if err == nil {
		err = checkPort(port, 0)
	}
	if err != nil {
		return fmt.Errorf("--%s %q: must be [host]:port with a port from 0 to 65535, e.g. 0.0.0.0:443 or :443 (%v)", flag, addr, err)
	}
	return nil
}

// checkOptionalListen is checkListen for a listener that may be left out (an empty addr).
func checkOptionalListen(flag, addr string) error {
	if addr == "" {
		return nil
	}
	return checkListen(flag, addr)
}

// checkDial checks an address to dial (--flag names it in the error): host:port, with a host
// and a port from 1 to 65535.
func checkDial(flag, addr string) error {
	host, port, err := net.SplitHostPort(addr)
	if err == nil {
		err = checkHost(host, false)
	}
	if err == nil {
		err = checkPort(port, 1)
	}
	if err != nil {
		return fmt.Errorf("--%s %q: must be host:port with a host and a port from 1 to 65535, e.g. 10.0.0.5:443 (%v)", flag, addr, err)
	}
	return nil
}

func checkHost(host string, emptyOK bool) error {
	if host == "" && !emptyOK {
		return fmt.Errorf("no host")
	}
	if strings.ContainsAny(host, " /") {
		return fmt.Errorf("host %q is not a name or an IP address", host)
	}
	return nil
}

func checkPort(port string, lowest int) error {
	n, err := strconv.Atoi(port)
	if err != nil || n < lowest || n > 65535 {
		return fmt.Errorf("port %q is not a number from %d to 65535", port, lowest)
	}
	return nil
}

// checkDuration checks a duration (--flag names it in the error) is 0 or more.
func checkDuration(flag string, d time.Duration, zeroMeans string) error {
	if d < 0 {
		return fmt.Errorf("--%s %s: must be 0 or more (0: %s)", flag, d, zeroMeans)
	}
	return nil
}
