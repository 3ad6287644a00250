package edge

import "sync/atomic"

// Counts is what a Forwarder, an origin.Listener or a Relay has seen since it started. A field a
// component has nothing to count in stays zero.
type Counts struct {
	// Accepted is every connection accepted.
	Accepted uint64 `json:"accepted"`
	// Empty is connections closed without the client sending a byte (health checks): counted
	// here, never logged.
	Empty uint64 `json:"empty"`
	// Unreachable is connections closed because the origin (Forwarder) or the backend (Relay)
	// could not be reached or refused the PROXY header.
	Unreachable uint64 `json:"unreachable"`
	// Headers is PROXY headers parsed and stripped (origin.Listener, Relay).
	Headers uint64 `json:"headers"`
	// PassedThrough is connections that opened with anything but a PROXY header, passed on
	// untouched (origin.Listener, Relay).
	PassedThrough uint64 `json:"passed_through"`
	// Malformed is connections closed because their header had the signature but a bad body.
	Malformed uint64 `json:"malformed"`
	// Untrusted is connections closed because a peer outside the trusted edge ranges sent a
	// header.
	Untrusted uint64 `json:"untrusted"`
	// OverCap is connections closed at once because MaxConns were open (Forwarder, Relay).
	OverCap uint64 `json:"over_cap"`
}

// counters are the live atomics behind Counts.
type counters struct {
	accepted, empty, unreachable                 atomic.Uint64
	headers, passedThrough, malformed, untrusted atomic.Uint64
	overCap                                      atomic.Uint64
}

func (c *counters) snapshot() Counts {
	return Counts{
		Accepted:      c.accepted.Load(),
		Empty:         c.empty.Load(),
		Unreachable:   c.unreachable.Load(),
		Headers:       c.headers.Load(),
		PassedThrough: c.passedThrough.Load(),
		Malformed:     c.malformed.Load(),
		Untrusted:     c.untrusted.Load(),
		OverCap:       c.overCap.Load(),
	}
}
