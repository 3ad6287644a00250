package origin

import "sync/atomic"

// Counts is what a Listener has seen since it started.
type Counts struct {
	// Accepted is every connection accepted.
	Accepted uint64 `json:"accepted"`
	// Headers is PROXY headers parsed and stripped.
	Headers uint64 `json:"headers"`
	// PassedThrough is connections that opened with anything but a PROXY header, passed on
	// untouched.
	PassedThrough uint64 `json:"passed_through"`
	// Malformed is connections closed because their header had the signature but a bad body.
	Malformed uint64 `json:"malformed"`
	// Untrusted is connections closed because a peer outside the trusted edge ranges sent a
	// header.
	Untrusted uint64 `json:"untrusted"`
}

// counters are the live atomics behind Counts.
type counters struct {
	accepted, headers, passedThrough, malformed, untrusted atomic.Uint64
}

func (c *counters) snapshot() Counts {
	return Counts{
		Accepted:      c.accepted.Load(),
		Headers:       c.headers.Load(),
		PassedThrough: c.passedThrough.Load(),
		Malformed:     c.malformed.Load(),
		Untrusted:     c.untrusted.Load(),
	}
}
