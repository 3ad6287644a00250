package edgepick

import (
	"cmp"
	"context"
	"net/netip"
	"slices"
	"sync"
)

// Ranking is a measurement of a set of edges, best first: healthy edges by handshake time
// (through the tunnel to the origin, which is what a session pays), ties by connect time and then
// address; failed edges last, by address.
type Ranking []Measurement

// Measure probes every address in parallel, each with its own budget (the probe's), and ranks
// the results. A silent edge costs its own budget and delays no other probe.
func Measure(ctx context.Context, addrs []netip.AddrPort, probe probeFunc) Ranking {
	r := make(Ranking, len(addrs))
	var wg sync.WaitGroup
	for i, a := range addrs {
		wg.Go(func() { r[i] = probe(ctx, a) })
	}
	wg.Wait()
	r.sort()
	return r
}

func (r Ranking) sort() {
	slices.SortStableFunc(r, func(a, b Measurement) int {
		if a.Healthy() != b.Healthy() {
			if a.Healthy() {
				return -1
			}
			return 1
		}
		if a.Healthy() {
			if c := cmp.Compare(a.Handshake, b.Handshake); c != 0 {
				return c
			}
			if c := cmp.Compare(a.Connect, b.Connect); c != 0 {
				return c
			}
		}
		return a.Addr.Compare(b.Addr)
	})
}

// Best is the best healthy edge; false when no edge finished a handshake.
func (r Ranking) Best() (Measurement, bool) {
	if len(r) == 0 || !r[0].Healthy() {
		return Measurement{}, false
	}
	return r[0], true
}

// Index is a's position in the ranking, or -1.
func (r Ranking) Index(a netip.AddrPort) int {
	return slices.IndexFunc(r, func(m Measurement) bool { return m.Addr == a })
}

// Find is a's measurement.
func (r Ranking) Find(a netip.AddrPort) (Measurement, bool) {
	if i := r.Index(a); i >= 0 {
		return r[i], true
	}
	return Measurement{}, false
}

// Above is the addresses ranked above a, best first: the failback candidates of a session on a.
// When a is not in the ranking, every address is above it.
func (r Ranking) Above(a netip.AddrPort) []netip.AddrPort {
	i := r.Index(a)
	if i < 0 {
		i = len(r)
	}
	out := make([]netip.AddrPort, 0, i)
	for _, m := range r[:i] {
		out = append(out, m.Addr)
	}
	return out
}

// Set is the set the ranking measured.
func (r Ranking) Set() Set {
	addrs := make([]netip.AddrPort, 0, len(r))
	for _, m := range r {
		addrs = append(addrs, m.Addr)
	}
	return setOf(addrs)
}
