// Package dnsset owns the rules of an edge rotation published as a DNS A set: one record name
// (edge.example.test.) whose addresses are the edges in rotation, changed one address at a
// time while the traffic layer rolls. It holds what every provider shares: the record name and
// address rules, the TTL bounds, and the one rule a provider must keep on Remove (never empty
// the set). The providers live in sub-packages:
//
//   - route53set: an Amazon Route 53 hosted zone, one multivalue answer record per address,
//     changed with ChangeResourceRecordSets and visible once GetChange reports INSYNC;
//   - zonefile: an RFC 1035 zone file on disk, changed atomically under a flock, served by a
//     small authoritative DNS server that answers from the file's newest content;
//   - route53double: a local Route 53 API for tests, driven by the real aws-sdk-go-v2 client.
//
// Every provider has these four methods, so the deployer's small interface fits them all:
//
//	List(ctx) ([]netip.Addr, error)   the addresses in the set, sorted
//	Add(ctx, addr) error              idempotent; returns once the change is visible
//	Remove(ctx, addr) error           idempotent; refuses to remove the last address
//	TTL() time.Duration               how long resolvers may keep a removed address
//
// and Records(ctx) ([]netip.Addr, time.Duration, error): List with the TTL the records carry,
// longer than TTL when the set already served a longer one, which Add keeps (zero502 dns add
// prints it).
//
// "Visible" is each provider's strongest promise: Route 53 once the change is INSYNC on all of
// its authoritative servers; the zone file at the next query after the write. Resolvers that
// cached the old answer keep it for up to TTL more, which the deployer waits out. That holds
// because Add never lowers a record's TTL and Remove refuses a record whose TTL is longer than
// TTL (CheckCachedTTL): a removed address was never handed out with a longer one.
package dnsset

import (
	"errors"
	"fmt"
	"net/netip"
	"slices"
	"strings"
	"time"
)

// TTL bounds. One second is the least a resolver honours; a day is far beyond any rotation.
const (
	minTTL     = time.Second
	maxTTL     = 24 * time.Hour
	DefaultTTL = 60 * time.Second
)

// ErrLastAddress is returned (wrapped) by Remove when the address is the only one left: an
// empty A set is NXDOMAIN/NODATA for every client, the whole edge tier gone at once.
var ErrLastAddress = errors.New("refusing to remove the last address of the A set")

// Name checks a record name and returns it fully qualified and lower case (a trailing dot
// added). field names the flag or key it came from, for the error.
func Name(field, name string) (string, error) {
	n := strings.ToLower(strings.TrimSpace(name))
	if n == "" {
		return "", fmt.Errorf("%s is empty: give the A set's record name, e.g. edge.example.test", field)
	}
	if !strings.HasSuffix(n, ".") {
		n += "."
	}
	if n == "." {
		return "", fmt.Errorf("%s %q is the root: give the A set's record name, e.g. edge.example.test", field, name)
	}
	if len(n) > 254 {
		return "", fmt.Errorf("%s %q is %d characters; a DNS name has at most 253", field, name, len(n)-1)
	}
	for _, label := range strings.Split(strings.TrimSuffix(n, "."), ".") {
		if label == "" {
			return "", fmt.Errorf("%s %q has an empty label (two dots in a row)", field, name)
		}
		if len(label) > 63 {
			return "", fmt.Errorf("%s %q has label %q of %d characters; a label has at most 63", field, name, label, len(label))
		}
		for _, c := range label {
			if !(c >= 'a' && c <= 'z' || c >= '0' && c <= '9' || c == '-' || c == '_') {
				return "", fmt.Errorf("%s %q has character %q in label %q; a host name uses letters, digits and '-'",
					field, name, c, label)
			}
		}
	}
	return n, nil
}

// Addr parses an edge address for an A record: IPv4 only (an AAAA set is another record set),
// and one a client can connect to: not the unspecified, broadcast, multicast or link-local
// address. An error names field, the value and the rule.
func Addr(field, s string) (netip.Addr, error) {
	a, err := netip.ParseAddr(strings.TrimSpace(s))
	if err != nil {
		return netip.Addr{}, fmt.Errorf("%s %q is not an IP address (want IPv4, e.g. 192.0.2.10)", field, s)
	}
	a = a.Unmap()
	if !a.Is4() {
		return netip.Addr{}, fmt.Errorf("%s %q is not IPv4: an A record holds IPv4 addresses only", field, s)
	}
	var what string
	switch {
	case a.IsUnspecified():
		what = "the unspecified address"
	case a == netip.AddrFrom4([4]byte{255, 255, 255, 255}):
		what = "the broadcast address"
	case a.IsMulticast():
		what = "a multicast address (224.0.0.0/4)"
	case a.IsLinkLocalUnicast():
		what = "a link-local address (169.254.0.0/16), reachable from its own link only"
	default:
		return a, nil
	}
	return netip.Addr{}, fmt.Errorf("%s %q is %s: no client handed it can open a connection to it; "+
		"an edge address is the unicast IPv4 address clients reach the edge at, e.g. 192.0.2.10", field, s, what)
}

// CheckAddr is Addr's rule for an already parsed address.
func CheckAddr(field string, a netip.Addr) error {
	_, err := Addr(field, a.String())
	return err
}

// TTL checks a record TTL: whole seconds within [minTTL, maxTTL]; zero means DefaultTTL.
func TTL(field string, ttl time.Duration) (time.Duration, error) {
	if ttl == 0 {
		return DefaultTTL, nil
	}
	if ttl%time.Second != 0 {
		return 0, fmt.Errorf("%s %s is not whole seconds: DNS TTLs are counted in seconds", field, ttl)
	}
	if ttl < minTTL || ttl > maxTTL {
		return 0, fmt.Errorf("%s %s is outside [%s, %s]", field, ttl, minTTL, maxTTL)
	}
	return ttl, nil
}

// CheckRemove is the rule every provider keeps before removing addr from the set that now
// holds current: removing the only address left is refused with an error wrapping
// ErrLastAddress. It returns false (nothing to do) when addr is not in the set.
func CheckRemove(name string, current []netip.Addr, addr netip.Addr) (bool, error) {
	if !slices.Contains(current, addr) {
		return false, nil
	}
	if len(current) == 1 {
		return false, fmt.Errorf("%s: %s is its only address: %w; add the replacement edge first, "+
			"then remove this one", name, addr, ErrLastAddress)
	}
	return true, nil
}

// CheckCachedTTL is the other rule of Remove: the record about to go must not carry a TTL
// longer than the one the rollout waits out (want), or resolvers could keep sending clients to
// the removed edge after the deployer thinks it has left the set. have must be the longest TTL
// resolvers may have been handed: the providers' Add never lowers a TTL, so the TTL on file is
// it. (Lowering it would make this check pass at once while resolvers still hold the answer
// they got at the old TTL.)
func CheckCachedTTL(name string, addr netip.Addr, have, want time.Duration) error {
	if have > want {
		return fmt.Errorf("%s: the record of %s has TTL %s, longer than the %s the rollout waits for; "+
			"resolvers could still send clients to it after the wait. Roll with a TTL of at least %s "+
			"(--ttl, edge.dns_ttl), or lower the records' TTL to %s yourself (zero502's add never lowers "+
			"a TTL), wait %s for the answers already handed out to expire, then remove it",
			name, addr, have, want, have, want, have)
	}
	return nil
}

// Sorted returns addrs sorted and without duplicates.
func Sorted(addrs []netip.Addr) []netip.Addr {
	out := slices.Clone(addrs)
	slices.SortFunc(out, func(a, b netip.Addr) int { return a.Compare(b) })
	return slices.Compact(out)
}
