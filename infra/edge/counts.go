package edge

import (
	"sync/atomic"

	"github.com/zero502/zero502/infra/origin"
)

// Counts is what a Forwarder or a Relay has seen since it started: what its origin listener
// counts (the Relay's; a Forwarder counts only Accepted there), and what only the edge sees. A
// field a component has nothing to count in stays zero.
type Counts struct {
	origin.Counts
	// Empty is connections closed without the client sending a byte (health checks): counted
	// here, never logged.
	Empty uint64 `json:"empty"`
	// Unreachable is connections closed because the origin (Forwarder) or the backend (Relay)
	// could not be reached or refused the PROXY header.
	Unreachable uint64 `json:"unreachable"`
	// OverCap is connections closed at once because MaxConns were open (Forwarder, Relay).
	OverCap uint64 `json:"over_cap"`
	// LocalError is connections closed because the connect to an upstream failed for a reason
	// of the edge's own (out of descriptors, memory, buffers or local ports), which leaves the
	// upstream in rotation (Forwarder).
	LocalError uint64 `json:"local_error"`
}

// counters are the live atomics behind a Forwarder's Counts (a Relay's listener keeps its own).
type counters struct {
	accepted, empty, unreachable, overCap, localError atomic.Uint64
}

func (c *counters) snapshot() Counts {
	return Counts{
		Counts:      origin.Counts{Accepted: c.accepted.Load()},
		Empty:       c.empty.Load(),
		Unreachable: c.unreachable.Load(),
		OverCap:     c.overCap.Load(),
		LocalError:  c.localError.Load(),
	}
}
