package edgepick

import (
	"context"
	"net/netip"
	"slices"
	"strings"
	"testing"
)

func TestParseTargetTakesANameOrAddressesAndTheServerName(t *testing.T) {
	for _, tc := range []struct {
		name       string
		edgeName   string
		addrs      []string
		serverName string
		insecure   bool
		want       target
	}{
		{"a name gives its host as the server name", "edge.example.test:443", nil, "", false,
			target{Name: "edge.example.test:443", ServerName: "edge.example.test"}},
		{"a given server name wins", "edge.example.test:443", nil, "origin.example.test", false,
			target{Name: "edge.example.test:443", ServerName: "origin.example.test"}},
		{"an IP name with a server name", "127.0.0.1:8443", nil, "localhost", false,
			target{Name: "127.0.0.1:8443", ServerName: "localhost"}},
		{"an IP name in a lab", "127.0.0.1:8443", nil, "", true, target{Name: "127.0.0.1:8443"}},
		{"addresses with a server name", "", []string{"127.0.0.1:8443", "[::1]:8444"}, "localhost", false,
			target{Addrs: []netip.AddrPort{netip.MustParseAddrPort("127.0.0.1:8443"), netip.MustParseAddrPort("[::1]:8444")},
				ServerName: "localhost"}},
		{"the highest port", "edge.example.test:65535", nil, "", false,
			target{Name: "edge.example.test:65535", ServerName: "edge.example.test"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, err := ParseTarget(tc.edgeName, tc.addrs, tc.serverName, tc.insecure)
			if err != nil {
				t.Fatal(err)
			}
			if got.Name != tc.want.Name || got.ServerName != tc.want.ServerName || !slices.Equal(got.Addrs, tc.want.Addrs) {
				t.Fatalf("got %+v, want %+v", got, tc.want)
			}
		})
	}
}

func TestParseTargetRefusesNamingTheFlagTheValueAndTheRule(t *testing.T) {
	for _, tc := range []struct {
		name     string
		edgeName string
		addrs    []string
		want     []string
	}{
		{"neither", "", nil, []string{"--name HOST:PORT", "--addrs IP:PORT"}},
		{"both", "edge.example.test:443", []string{"127.0.0.1:1"}, []string{"--name", "--addrs", "not both"}},
		{"a name without a port", "edge.example.test", nil, []string{`--name "edge.example.test"`, "host:port", "1 to 65535"}},
		{"a name without a host", ":443", nil, []string{`--name ":443"`, "no host"}},
		{"a name with port 0", "edge.example.test:0", nil, []string{`--name "edge.example.test:0"`, "1 to 65535"}},
		{"a name with port 65536", "edge.example.test:65536", nil, []string{`"65536"`, "1 to 65535"}},
		{"a name with a port by name", "edge.example.test:https", nil, []string{`"https"`, "1 to 65535"}},
		{"an address that is a name", "", []string{"edge:443"}, []string{`--addrs "edge:443"`, "IP:PORT"}},
		{"an address with port 0", "", []string{"127.0.0.1:0"}, []string{`--addrs "127.0.0.1:0"`, "port 0"}},
		{"an IP name without a server name", "127.0.0.1:443", nil, []string{"--server-name is empty", "--insecure-skip-verify"}},
		{"addresses without a server name", "", []string{"127.0.0.1:1", "127.0.0.1:2"}, []string{"--server-name is empty"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := ParseTarget(tc.edgeName, tc.addrs, "", false)
			if err == nil {
				t.Fatal("accepted")
			}
			for _, w := range tc.want {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("%q does not say %q", err, w)
				}
			}
		})
	}
}

// Resolve checks a name by the same rule as --name, before asking any resolver.
func TestResolveChecksTheNameAsTheFlagsDo(t *testing.T) {
	r := fixedResolver{ips: []netip.Addr{netip.MustParseAddr("192.0.2.1")}}
	for _, bad := range []string{"edge.example.test", ":443", "edge.example.test:0", "edge.example.test:65536"} {
		_, resolveErr := Resolve(context.Background(), r, bad)
		_, flagErr := ParseTarget(bad, nil, "", true)
		if resolveErr == nil || flagErr == nil {
			t.Fatalf("%q: Resolve %v, ParseTarget %v: want both to refuse it", bad, resolveErr, flagErr)
		}
		if got, want := strings.TrimPrefix(resolveErr.Error(), "edge name"), strings.TrimPrefix(flagErr.Error(), "--name"); got != want {
			t.Errorf("%q: Resolve says %q, ParseTarget %q: want one rule", bad, resolveErr, flagErr)
		}
	}
}
