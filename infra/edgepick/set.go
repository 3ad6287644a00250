package edgepick

import (
	"net/netip"
	"slices"
)

// Set is the set of candidate edges a measurement was taken from: sorted, without duplicates, so
// two sets compare equal exactly when they hold the same addresses. A measurement is valid only
// for the set it was taken from (invalidate by the set, not by the choice).
type Set []netip.AddrPort

// setOf is the set of addrs: sorted, duplicates and invalid addresses dropped.
func setOf(addrs []netip.AddrPort) Set {
	s := make(Set, 0, len(addrs))
	for _, a := range addrs {
		if a.IsValid() {
			s = append(s, a)
		}
	}
	slices.SortFunc(s, netip.AddrPort.Compare)
	return slices.Compact(s)
}

// Equal reports whether s and o hold the same addresses.
func (s Set) Equal(o Set) bool { return slices.Equal(s, o) }

// Contains reports whether a is in the set.
func (s Set) Contains(a netip.AddrPort) bool {
	_, found := slices.BinarySearchFunc(s, a, netip.AddrPort.Compare)
	return found
}
