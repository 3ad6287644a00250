package main

import (
	"context"
	"net/http/httptest"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/zero502/zero502/infra/dnsset/route53double"
	"github.com/zero502/zero502/infra/dnsset/zonefile"
)

func TestDNSCommandRefusesBadInputNamingFlagValueAndRule(t *testing.T) {
	zone := filepath.Join(t.TempDir(), "edge.zone")
	for _, tc := range []struct {
		name string
		args []string
		code int
		want []string
	}{
		{"missing zone", []string{"dns", "add", "--name", "edge.example.test", "192.0.2.1"}, 2, []string{"--zone is required"}},
		{"missing name", []string{"dns", "list", "--zone", zone}, 2, []string{"--name is required"}},
		{"not an address", []string{"dns", "add", "--zone", zone, "--name", "edge.example.test", "edge-1"}, 2,
			[]string{"ADDR", `"edge-1"`, "IPv4"}},
		{"IPv6 in an A set", []string{"dns", "remove", "--zone", zone, "--name", "edge.example.test", "2001:db8::1"}, 2,
			[]string{"ADDR", "2001:db8::1", "A record holds IPv4"}},
		{"ttl not whole seconds", []string{"dns", "add", "--zone", zone, "--name", "edge.example.test", "--ttl", "1500ms", "192.0.2.1"}, 2,
			[]string{"ttl", "1.5s", "whole seconds"}},
		{"bad name", []string{"dns", "add", "--zone", zone, "--name", "edge example", "192.0.2.1"}, 2,
			[]string{"name", `"edge example"`, "letters, digits"}},
		{"no address", []string{"dns", "add", "--zone", zone, "--name", "edge.example.test"}, 2, []string{"accepts 1 arg"}},
		{"list of a missing file", []string{"dns", "list", "--zone", zone, "--name", "edge.example.test"}, 1, []string{zone}},
		{"serve without listen", []string{"dns", "serve", "--zone", zone}, 2, []string{"--listen is required"}},
		{"both providers", []string{"dns", "list", "--zone", zone, "--route53-zone", "Z1", "--name", "edge.example.test"}, 2,
			[]string{"--zone", "--route53-zone Z1", "give one of them"}},
		{"serve with an unknown log level", []string{"dns", "serve", "--zone", zone, "--listen", "127.0.0.1:0", "--log-level", "loud"}, 2,
			[]string{`--log-level "loud": must be one of`}},
		{"serve on a bad address", []string{"dns", "serve", "--zone", zone, "--listen", "localhost"}, 1,
			[]string{`"localhost"`, "host:port"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			out, code := runCLI(t, tc.args...)
			if code != tc.code {
				t.Fatalf("exit %d, want %d\n%s", code, tc.code, out)
			}
			for _, w := range tc.want {
				if !strings.Contains(out, w) {
					t.Fatalf("output does not say %q:\n%s", w, out)
				}
			}
		})
	}
}

func TestDNSAddRemoveListRoundTrip(t *testing.T) {
	zone := filepath.Join(t.TempDir(), "edge.zone")
	set := []string{"--zone", zone, "--name", "edge.example.test"}
	for _, a := range []string{"192.0.2.2", "192.0.2.1", "192.0.2.1"} {
		if out, code := runCLI(t, append(append([]string{"dns", "add"}, set...), a)...); code != 0 {
			t.Fatalf("add %s: exit %d\n%s", a, code, out)
		}
	}
	if out, code := runCLI(t, append(append([]string{"dns", "remove"}, set...), "192.0.2.2")...); code != 0 {
		t.Fatalf("remove: exit %d\n%s", code, out)
	}
	out, code := runCLI(t, append(append([]string{"dns", "list"}, set...), "--json")...)
	if code != 0 || strings.TrimSpace(out) != `{"name":"edge.example.test.","addresses":["192.0.2.1"]}` {
		t.Fatalf("list --json: exit %d\n%s", code, out)
	}
}

// An add never lowers the TTL resolvers may hold: with --ttl 30s to a set served at 300s it says
// the 300s the set carries, and why, not the --ttl it was given. In a zone file and in Route 53.
func TestDNSAddSaysTheTTLTheSetCarries(t *testing.T) {
	zone := filepath.Join(t.TempDir(), "edge.zone")
	for _, tc := range []struct {
		name string
		set  func(t *testing.T) []string
	}{
		{"zone file", func(*testing.T) []string { return []string{"--zone", zone} }},
		{"route 53", func(t *testing.T) []string { _, flags := route53Double(t); return flags }},
	} {
		t.Run(tc.name, func(t *testing.T) {
			add := append(append([]string{"dns", "add", "--name", "edge.example.test"}, tc.set(t)...), "--ttl")
			out, code := runCLI(t, append(add, "300s", "192.0.2.1")...)
			if code != 0 || !strings.Contains(out, "1 addresses, TTL 300s: ") {
				t.Fatalf("add with --ttl 300s to an empty set: exit %d, want it to say TTL 300s\n%s", code, out)
			}
			out, code = runCLI(t, append(add, "30s", "192.0.2.2")...)
			if code != 0 || !strings.Contains(out, "2 addresses, TTL 300s (longer than --ttl 30s: ") || strings.Contains(out, "TTL 30s") {
				t.Fatalf("add with --ttl 30s to a set served at 300s: exit %d, want it to say TTL 300s, longer than --ttl 30s\n%s", code, out)
			}
		})
	}
	s, err := zonefile.NewSet(zone, "edge.example.test", zonefile.Options{TTL: 30 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	if addrs, ttl, err := s.Records(context.Background()); err != nil || len(addrs) != 2 || ttl != 300*time.Second {
		t.Fatalf("the zone file holds %v at TTL %s, %v; want two addresses at 300s", addrs, ttl, err)
	}
}

// route53Double runs a Route 53 double with one hosted zone and returns it with the flags that
// keep the set there.
func route53Double(t *testing.T) (*route53double.Server, []string) {
	t.Helper()
	d := route53double.New(route53double.Options{})
	srv := httptest.NewServer(d)
	t.Cleanup(srv.Close)
	zone := d.AddHostedZone("example.test")
	t.Setenv("AWS_ACCESS_KEY_ID", "AKIDTEST")
	t.Setenv("AWS_SECRET_ACCESS_KEY", "secret")
	t.Setenv("AWS_CONFIG_FILE", filepath.Join(t.TempDir(), "none"))
	t.Setenv("AWS_SHARED_CREDENTIALS_FILE", filepath.Join(t.TempDir(), "none"))
	return d, []string{"--route53-zone", zone, "--route53-endpoint", srv.URL}
}

func TestDNSCommandsKeepTheSetInRoute53(t *testing.T) {
	d, flags := route53Double(t)
	set := append(flags, "--name", "edge.example.test", "--ttl", "30s")
	for _, a := range []string{"192.0.2.1", "192.0.2.2"} {
		if out, code := runCLI(t, append(append([]string{"dns", "add"}, set...), a)...); code != 0 {
			t.Fatalf("add %s: exit %d\n%s", a, code, out)
		}
	}
	if out, code := runCLI(t, append(append([]string{"dns", "remove"}, set...), "192.0.2.1")...); code != 0 {
		t.Fatalf("remove: exit %d\n%s", code, out)
	}
	if out, code := runCLI(t, append(append([]string{"dns", "remove"}, set...), "192.0.2.2")...); code != 1 ||
		!strings.Contains(out, "last address") {
		t.Fatalf("remove of the last address: exit %d\n%s", code, out)
	}
	out, code := runCLI(t, append(append([]string{"dns", "list"}, set...), "--json")...)
	if code != 0 || strings.TrimSpace(out) != `{"name":"edge.example.test.","addresses":["192.0.2.2"]}` {
		t.Fatalf("list --json: exit %d\n%s", code, out)
	}
	if d.Calls("GetChange") < 3 {
		t.Fatalf("GetChange called %d times for 3 changes: the commands did not wait for INSYNC", d.Calls("GetChange"))
	}
}
