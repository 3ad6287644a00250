package dnsset_test

import (
	"context"
	"errors"
	"net/netip"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/zero502/zero502/infra/dnsset"
	"github.com/zero502/zero502/infra/dnsset/route53set"
	"github.com/zero502/zero502/infra/dnsset/zonefile"
)

// rotation is what the deployer needs of an A set provider (its RecordSet); every provider
// must fit it.
type rotation interface {
	List(context.Context) ([]netip.Addr, error)
	Add(context.Context, netip.Addr) error
	Remove(context.Context, netip.Addr) error
	TTL() time.Duration
}

var (
	_ rotation = (*route53set.Set)(nil)
	_ rotation = (*zonefile.Set)(nil)
)

func TestNameIsFullyQualifiedLowerCaseAndAHostName(t *testing.T) {
	for _, tc := range []struct {
		in, want, err string
	}{
		{"Edge.Example.Test", "edge.example.test.", ""},
		{"edge.example.test.", "edge.example.test.", ""},
		{"", "", "is empty"},
		{".", "", "is the root"},
		{"edge..test", "", "empty label"},
		{"edge example.test", "", `character ' '`},
		{strings.Repeat("a", 63) + ".test", strings.Repeat("a", 63) + ".test.", ""},
		{strings.Repeat("a", 64) + ".test", "", "at most 63"},
		{strings.Repeat("abcdefghi.", 25) + "abc", strings.Repeat("abcdefghi.", 25) + "abc.", ""}, // 253 characters
		{strings.Repeat("abcdefghi.", 25) + "abcd", "", "at most 253"},
	} {
		got, err := dnsset.Name("name", tc.in)
		switch {
		case tc.err == "" && (err != nil || got != tc.want):
			t.Errorf("Name(%q) = %q, %v; want %q", tc.in, got, err, tc.want)
		case tc.err != "" && (err == nil || !strings.Contains(err.Error(), tc.err)):
			t.Errorf("Name(%q): %v, want an error saying %q", tc.in, err, tc.err)
		}
	}
}

// An edge address enters the A set only when a client handed it can open a TCP connection to it:
// IPv4, and not the unspecified, broadcast, multicast or link-local address; a refusal names the
// field, the value and the rule.
func TestAddrIsAUsableIPv4Address(t *testing.T) {
	for _, tc := range []struct{ in, want, err string }{
		{"192.0.2.1", "192.0.2.1", ""},
		{"::ffff:192.0.2.1", "192.0.2.1", ""},
		{"2001:db8::1", "", "not IPv4"},
		{"0.0.0.0", "", "unspecified"},
		{"255.255.255.255", "", "the broadcast address"},
		{"224.0.0.1", "", "multicast"},
		{"239.1.2.3", "", "multicast"},
		{"::ffff:224.0.0.1", "", "multicast"},
		{"169.254.10.20", "", "link-local"},
		{"edge-1", "", "not an IP address"},
	} {
		got, err := dnsset.Addr("ADDR", tc.in)
		switch {
		case tc.err == "" && (err != nil || got.String() != tc.want):
			t.Errorf("Addr(%q) = %s, %v; want %s", tc.in, got, err, tc.want)
		case tc.err != "" && (err == nil || !strings.Contains(err.Error(), tc.err) || !strings.Contains(err.Error(), "ADDR")):
			t.Errorf("Addr(%q): %v, want an error naming ADDR and saying %q", tc.in, err, tc.err)
		}
	}
}

func TestTTLBounds(t *testing.T) {
	for _, tc := range []struct {
		in, want time.Duration
		ok       bool
	}{
		{0, dnsset.DefaultTTL, true},
		{time.Second, time.Second, true},
		{999 * time.Millisecond, 0, false},
		{24 * time.Hour, 24 * time.Hour, true},
		{24*time.Hour + time.Second, 0, false},
		{1500 * time.Millisecond, 0, false},
		{-time.Second, 0, false},
	} {
		got, err := dnsset.TTL("ttl", tc.in)
		if (err == nil) != tc.ok || got != tc.want {
			t.Errorf("TTL(%s) = %s, %v; want %s ok=%v", tc.in, got, err, tc.want, tc.ok)
		}
	}
}

func TestRemoveNeverEmptiesTheSet(t *testing.T) {
	a, b := netip.MustParseAddr("192.0.2.1"), netip.MustParseAddr("192.0.2.2")
	for _, tc := range []struct {
		name     string
		current  []netip.Addr
		remove   netip.Addr
		change   bool
		lastAddr bool
	}{
		{"one of two", []netip.Addr{a, b}, a, true, false},
		{"the only one", []netip.Addr{a}, a, false, true},
		{"not in the set", []netip.Addr{b}, a, false, false},
		{"an empty set", nil, a, false, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			change, err := dnsset.CheckRemove("edge.example.test.", tc.current, tc.remove)
			if change != tc.change || errors.Is(err, dnsset.ErrLastAddress) != tc.lastAddr {
				t.Fatalf("CheckRemove = %v, %v; want change=%v last=%v", change, err, tc.change, tc.lastAddr)
			}
		})
	}
}

func TestARecordCachedLongerThanTheWaitIsNotRemoved(t *testing.T) {
	a := netip.MustParseAddr("192.0.2.1")
	if err := dnsset.CheckCachedTTL("e.", a, 60*time.Second, 60*time.Second); err != nil {
		t.Fatalf("equal TTLs: %v", err)
	}
	if err := dnsset.CheckCachedTTL("e.", a, 61*time.Second, 60*time.Second); err == nil ||
		!strings.Contains(err.Error(), "TTL 1m1s, longer than the 1m0s") {
		t.Fatalf("a longer TTL: %v", err)
	}
}

func TestSortedDropsDuplicates(t *testing.T) {
	in := []netip.Addr{netip.MustParseAddr("192.0.2.2"), netip.MustParseAddr("192.0.2.1"), netip.MustParseAddr("192.0.2.2")}
	if got := dnsset.Sorted(in); !slices.Equal(got, []netip.Addr{in[1], in[0]}) {
		t.Fatalf("Sorted = %v", got)
	}
}
