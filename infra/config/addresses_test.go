package config

import (
	"fmt"
	"math"
	"net"
	"strings"
	"testing"
	"time"
)

// Every port of every service counts: two services of one host may not listen on one port,
// whether it is a port, a start-first ports entry, or one of each.
func TestTwoServicesOfOneHostMayNotShareAPort(t *testing.T) {
	mustRefuse(t, "services:\n  - {name: web, image: x, port: 8080}\n  - {name: admin, image: x, port: 8080}\nhosts: [{name: a}]\n",
		"services[1].port: 8080: service admin and service web (services[0]) both listen on port 8080 on every host")
	startFirst := "rollout: {strategy: start-first}\nservices:\n  - {name: web, image: x, ports: [8080, 8081]}\n"
	mustRefuse(t, startFirst+"  - {name: admin, image: x, ports: [8082, 8081]}\nhosts: [{name: a}]\n",
		"services[1].ports[1]: 8081: service admin and service web (services[0]) both listen on port 8081")
	// Without hosts the clash is there all the same: every host would run both.
	mustRefuse(t, startFirst+"  - {name: admin, image: x, ports: [8081, 8090]}\n", "services[1].ports[0]: 8081", "service admin and service web")
	if _, err := Load(writeConfig(t, startFirst+"  - {name: admin, image: x, ports: [8082, 8083]}\n  - {name: worker, image: x}\n"+
		"  - {name: cron, image: x}\nhosts: [{name: a}]\n")); err != nil {
		t.Fatalf("services on their own ports, two workers without one: %v", err)
	}
}

// Hosts on one address (the demo's loopback fleet) are kept apart by port_offset; every port of
// every service counts, not only the balanced service's first.
func TestHostsOnOneAddressMayNotShareAPort(t *testing.T) {
	startFirst := "rollout: {strategy: start-first}\nservices:\n  - {name: web, image: x, ports: [8080, 8081]}\n"
	mustRefuse(t, startFirst+"hosts:\n  - {name: a, port_offset: 0}\n  - {name: b, port_offset: 1}\n",
		"hosts[1].port_offset: 1: host b and host a (hosts[0]) both listen on 127.0.0.1:8081",
		"service web's port 8080 + port_offset 1 on host b is service web's port 8081 + port_offset 0 on host a")
	// Another service's port: host b's web (8000 + 100) is host a's admin (8100).
	mustRefuse(t, "services:\n  - {name: web, image: x, port: 8000}\n  - {name: admin, image: x, port: 8100}\n"+
		"hosts:\n  - {name: a, address: 10.0.0.1}\n  - {name: b, address: 10.0.0.1, port_offset: 100}\n",
		"hosts[1].port_offset: 100: host b and host a (hosts[0]) both listen on 10.0.0.1:8100")
	// One address written two ways is one address.
	mustRefuse(t, webService+"hosts:\n  - {name: a, address: '2001:db8::1'}\n  - {name: b, address: '2001:DB8:0::1'}\n",
		"hosts[1].address: [2001:DB8:0::1]:9000: host b and host a (hosts[0])")
	mustRefuse(t, webService+"hosts:\n  - {name: a, address: App-1.internal.}\n  - {name: b, address: app-1.internal}\n",
		"hosts[1].address: app-1.internal:9000: host b and host a (hosts[0])")
	c, err := Load(writeConfig(t, startFirst+"hosts:\n  - {name: a, port_offset: 0}\n  - {name: b, port_offset: 2}\n  - {name: c, address: 10.0.0.2}\n"))
	if err != nil {
		t.Fatalf("start-first hosts two ports apart: %v", err)
	}
	if got := strings.Join(c.Targets(), ","); got != "127.0.0.1:8080,127.0.0.1:8081,127.0.0.1:8082,127.0.0.1:8083,10.0.0.2:8080,10.0.0.2:8081" {
		t.Fatalf("targets %s", got)
	}
}

func TestHostAddressIsAHostOrAnIPWithoutAPort(t *testing.T) {
	for _, tc := range []struct{ address, want string }{
		{"10.0.0.1:22", `hosts[0].address: "10.0.0.1:22": must be a host name or an IP address (IPv6 without brackets), without a port`},
		{"web server", `hosts[0].address: "web server": must be a host name or an IP address`},
		{"[2001:db8::1]", `hosts[0].address: "[2001:db8::1]": must be a host name or an IP address (IPv6 without brackets)`},
		{"10.0.0.256", `hosts[0].address: "10.0.0.256"`},
		{"http://app-1", `hosts[0].address: "http://app-1"`},
		{"-app", `hosts[0].address: "-app"`},
	} {
		_, err := Load(writeConfig(t, webService+fmt.Sprintf("hosts:\n  - {name: a, address: '%s'}\n", tc.address)))
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("address %q: %v; want refused with %q", tc.address, err, tc.want)
		}
	}
	c, err := Load(writeConfig(t, webService+"hosts:\n  - {name: a, address: '2001:db8::1'}\n  - {name: b, address: app-1.internal}\n"+
		"  - {name: c, address: WEB.example.com.}\n  - {name: d, address: 10.0.0.1}\n  - {name: e, address: 'fe80::1%eth0'}\n"))
	if err != nil {
		t.Fatalf("an IPv6 address, names and an IPv4 address: %v", err)
	}
	want := "[2001:db8::1]:9000,app-1.internal:9000,WEB.example.com.:9000,10.0.0.1:9000,[fe80::1%eth0]:9000"
	if got := strings.Join(c.Targets(), ","); got != want {
		t.Fatalf("targets %s, want %s", got, want)
	}
	if got := c.Hosts[0].ServiceAddr(c.Services[0]); got != "[2001:db8::1]:9000" {
		t.Fatalf("ServiceAddr %s", got)
	}
}

func TestPortOffsetKeepsEveryPortInRange(t *testing.T) {
	mustRefuse(t, "services:\n  - {name: web, image: x, port: 8080}\n  - {name: admin, image: x, port: 65000}\nhosts: [{name: a, port_offset: 1000}]\n",
		"hosts[0].port_offset: 1000: services[1].port 65000 + port_offset 1000 = 66000: a port must be from 1 to 65535")
	mustRefuse(t, "rollout: {strategy: start-first}\nservices: [{name: web, image: x, ports: [65000, 64000]}]\nhosts: [{name: a, port_offset: 536}]\n",
		"hosts[0].port_offset: 536: services[0].ports[0] 65000 + port_offset 536 = 65536")
	if _, err := Load(writeConfig(t, "services: [{name: web, image: x, port: 65000}]\nhosts: [{name: a, port_offset: 535}]\n")); err != nil {
		t.Fatalf("port 65000 + port_offset 535 = 65535: %v", err)
	}
}

// Addresses zero502 connects to need a host and a port from 1 to 65535; listeners keep ":port"
// (every interface) and port 0 (any free port).
func TestDialAddressesNeedAHostAndAPort(t *testing.T) {
	edges := "balancer:\n  kind: edges\n  admins: ['%s']\n"
	for _, tc := range []struct{ body, want string }{
		{fmt.Sprintf(edges, ":8081"), `balancer.admins[0]: ":8081": host must be a host name or an IP address`},
		{fmt.Sprintf(edges, "10.0.0.5:0"), `balancer.admins[0]: "10.0.0.5:0": must have a port from 1 to 65535`},
		{fmt.Sprintf(edges, "10.0.0.5"), `balancer.admins[0]: "10.0.0.5": must be host:port`},
		{"balancer:\n  admins: ['127.0.0.1:0']\n", `balancer.admins[0]: "127.0.0.1:0": must have a port from 1 to 65535`},
		{"edge:\n  origins: [':443']\n", `edge.origins[0]: ":443": host must be a host name or an IP address`},
		{"edge:\n  origins: ['10.0.0.5:0']\n", `edge.origins[0]: "10.0.0.5:0": must have a port from 1 to 65535`},
		{"edge:\n  origins: ['web server:443']\n", `edge.origins[0]: "web server:443": host must be a host name`},
		{"balancer:\n  admin: 127.0.0.1:0\n", `balancer.admin: "127.0.0.1:0": must have a port from 1 to 65535: without balancer.admins the deployer connects to it`},
	} {
		_, err := Load(writeConfig(t, tc.body))
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s: %v; want refused with %q", tc.body, err, tc.want)
		}
	}
	for _, body := range []string{
		"balancer:\n  listen: ':0'\n  admin: ':8081'\n",
		"balancer:\n  admin: 127.0.0.1:0\n  admins: ['10.0.0.5:8081', '[2001:db8::5]:8081', 'lb-1.internal:8081']\n",
		"edge:\n  origins: ['10.0.0.5:443', 'lb-1.internal:443']\n",
	} {
		if _, err := Load(writeConfig(t, body)); err != nil {
			t.Errorf("%s: %v", body, err)
		}
	}
}

func TestThresholdsHaveAnUpperBound(t *testing.T) {
	for _, key := range []string{
		"balancer.unhealthy_threshold", "balancer.healthy_threshold", "watchdog.heal_after",
		"edge.unhealthy_threshold", "edge.upstream_check.healthy_threshold", "edge.upstream_check.unhealthy_threshold",
	} {
		body := func(n int) string {
			parts := strings.Split(key, ".")
			var b strings.Builder
			for i, p := range parts[:len(parts)-1] {
				fmt.Fprintf(&b, "%s%s:\n", strings.Repeat("  ", i), p)
			}
			fmt.Fprintf(&b, "%s%s: %d\n", strings.Repeat("  ", len(parts)-1), parts[len(parts)-1], n)
			return b.String()
		}
		mustRefuse(t, body(2000000000), key+": 2000000000: must be at most 1000 checks in a row")
		mustRefuse(t, body(MaxThreshold+1), key+": 1001: must be at most 1000")
		if _, err := Load(writeConfig(t, body(MaxThreshold))); err != nil {
			t.Errorf("%s: %d: %v", key, MaxThreshold, err)
		}
	}
}

func TestDurationArithmeticSaturates(t *testing.T) {
	const maxD, minD = time.Duration(math.MaxInt64), time.Duration(math.MinInt64)
	for _, tc := range []struct {
		d    time.Duration
		n    int
		want time.Duration
	}{
		{5 * time.Second, 2, 10 * time.Second},
		{5 * time.Second, 2000000000, maxD}, // wraps to about -2346317h without saturation
		{maxD, 2, maxD},
		{maxD, 1, maxD},
		{maxD / 2, 2, maxD - 1},
		{5 * time.Second, -2000000000, minD},
		{-5 * time.Second, 2000000000, minD},
		{-5 * time.Second, -2000000000, maxD},
		{minD, 1, minD},
		{minD, -1, maxD},
		{minD, 0, 0},
		{0, math.MaxInt, 0},
		{-3, 4, -12},
	} {
		if got := MulDuration(tc.d, tc.n); got != tc.want {
			t.Errorf("MulDuration(%d, %d) = %d, want %d", tc.d, tc.n, got, tc.want)
		}
	}
	for _, tc := range []struct {
		ds   []time.Duration
		want time.Duration
	}{
		{[]time.Duration{time.Second, 2 * time.Second}, 3 * time.Second},
		{[]time.Duration{maxD, time.Second}, maxD},
		{[]time.Duration{maxD / 2, maxD / 2, maxD / 2}, maxD},
		{[]time.Duration{minD, -time.Second}, minD},
		{nil, 0},
	} {
		if got := AddDurations(tc.ds...); got != tc.want {
			t.Errorf("AddDurations(%v) = %d, want %d", tc.ds, got, tc.want)
		}
	}
	n := BalancerNumbers{Interval: 5 * time.Second, UnhealthyThreshold: 2000000000, HealthyThreshold: 2000000000}
	if n.Detection() != maxD || n.Recovery() != maxD {
		t.Errorf("detection %s, recovery %s of 5s × 2000000000: want the largest duration, not a wrapped one", n.Detection(), n.Recovery())
	}
}

// The in-house LB binds balancer.listen, balancer.admin, balancer.tls.listen and
// balancer.tls.redirect_http in one process: two on one port of one address (or of an address
// and every interface) cannot both be bound, so the LB would not start. Such a config is
// refused naming the second listener, its value and the first; the same port on two different
// addresses, and port 0 (any free port) twice, are fine.
func TestTheInHouseLBsListenersEachHaveTheirOwnPort(t *testing.T) {
	const certs = "    certificates: [{cert: /etc/ssl/a.crt, key: /etc/ssl/a.key}]\n"
	for _, tc := range []struct{ body, want string }{
		{"balancer:\n  listen: 127.0.0.1:8080\n  admin: 127.0.0.1:8080\n",
			`balancer.admin: "127.0.0.1:8080": is on the port of balancer.listen "127.0.0.1:8080"`},
		{"balancer:\n  listen: 0.0.0.0:8080\n  admin: 127.0.0.1:8080\n",
			`balancer.admin: "127.0.0.1:8080": is on the port of balancer.listen "0.0.0.0:8080"`},
		{"balancer:\n  listen: :8443\n  tls:\n    listen: 0.0.0.0:8443\n" + certs,
			`balancer.tls.listen: "0.0.0.0:8443": is on the port of balancer.listen ":8443"`},
		{"balancer:\n  listen: 127.0.0.1:8080\n  tls:\n    listen: 127.0.0.1:8443\n    redirect_http: '[::]:8080'\n" + certs,
			`balancer.tls.redirect_http: "[::]:8080": is on the port of balancer.listen "127.0.0.1:8080"`},
	} {
		_, err := Load(writeConfig(t, tc.body))
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%q: %v, want %q", tc.body, err, tc.want)
		}
	}
	// A listener on a port another holds cannot be bound: what the LB would meet at start.
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	if second, err := net.Listen("tcp", ln.Addr().String()); err == nil {
		second.Close()
		t.Fatalf("a second listener on %s was bound", ln.Addr())
	}
	for _, body := range []string{
		"balancer:\n  listen: 10.0.0.5:8080\n  admin: 127.0.0.1:8080\n",
		"balancer:\n  listen: 127.0.0.1:0\n  admin: 127.0.0.1:8081\n  tls:\n    listen: 127.0.0.1:0\n" + certs,
		"balancer:\n  listen: 0.0.0.0:8080\n  admin: '[::1]:8080'\n",
	} {
		if _, err := Load(writeConfig(t, body)); err != nil {
			t.Errorf("%q: %v", body, err)
		}
	}
}

// balancer.service is the service behind the balancer: its port on every host is the balancer's
// target, so a service without one (a worker) is refused there, naming it, instead of becoming
// the target host:0 that the LB refuses with no word of the config key.
func TestTheBalancedServiceHasAPort(t *testing.T) {
	mustRefuse(t, "balancer: {service: worker}\nservices:\n  - {name: web, image: x, port: 8080}\n  - {name: worker, image: x}\nhosts: [{name: a}]\n",
		`balancer.service: "worker": names services[1], which has no port`)
	if _, err := Load(writeConfig(t, "balancer: {service: web}\nservices:\n  - {name: worker, image: x}\n  - {name: web, image: x, port: 8080}\nhosts: [{name: a}]\n")); err != nil {
		t.Fatalf("balancer.service naming the service with a port: %v", err)
	}
}

// balancer.max_header_bytes has the in-house LB's upper bound: a config past it loads, then
// zero502 lb --config refuses it naming --max-header-bytes, a flag nobody gave.
func TestMaxHeaderBytesHasTheLBsBound(t *testing.T) {
	mustRefuse(t, "balancer: {max_header_bytes: 2000000}\n", "balancer.max_header_bytes: 2000000: must be at most 1048576")
	if _, err := Load(writeConfig(t, "balancer: {max_header_bytes: 1048576}\n")); err != nil {
		t.Fatalf("max_header_bytes 1 MiB: %v", err)
	}
}
