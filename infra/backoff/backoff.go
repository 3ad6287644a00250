// Package backoff is zero502's one retry wait: exponential, with full jitter and a cap (the agent
// session's reconnects, the alert webhook's retries), and the one pause of its accept loops after
// a failed accept (AcceptPause).
package backoff

import (
	"math/rand/v2"
	"time"
)

// Defaults of a Backoff's fields when they are zero.
const (
	defaultBase = 500 * time.Millisecond
	defaultCap  = time.Minute
)

// Backoff is the wait before a retry after a real failure: exponential with full jitter
// and a cap. The n-th failure in a row (n from 0) waits a duration drawn uniformly from
// [0, min(Cap, Base·2ⁿ)], so a fleet cut off at once does not come back at once.
type Backoff struct {
	Base, Cap time.Duration
	// Rand draws the jitter; nil is math/rand/v2's global source.
	Rand interface{ Int64N(n int64) int64 }
}

// Delay is the wait after the failure-th failure in a row (0 is the first).
func (b Backoff) Delay(failure int) time.Duration {
	base, ceiling := b.Base, b.Cap
	if base <= 0 {
		base = defaultBase
	}
	if ceiling <= 0 {
		ceiling = defaultCap
	}
	limit := base
	for i := 0; i < failure && limit < ceiling; i++ {
		limit *= 2
	}
	limit = min(limit, ceiling)
	if b.Rand != nil {
		return time.Duration(b.Rand.Int64N(int64(limit) + 1))
	}
	return time.Duration(rand.Int64N(int64(limit) + 1))
}

// AcceptPause is the wait after an Accept that failed without the listener being closed (out
// of file descriptors, an aborted handshake): 5 ms, doubling up to a second while the failures
// go on, as net/http's Server waits. Every accept loop of zero502 waits with it; Reset after an
// accept that succeeded.
type AcceptPause struct{ last time.Duration }

// Next is the wait after one more failure in a row.
func (p *AcceptPause) Next() time.Duration {
	p.last = min(max(2*p.last, 5*time.Millisecond), time.Second)
	return p.last
}

// Reset starts the next failure's wait from 5 ms again.
func (p *AcceptPause) Reset() { p.last = 0 }
