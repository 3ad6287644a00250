// Package backoff is zero502's one retry wait: exponential, with full jitter and a cap. The agent
// session's reconnects and the alert webhook's retries both use it.
package backoff

import (
	"math/rand/v2"
	"time"
)

// Defaults of a Backoff's fields when they are zero.
const (
	DefaultBase = 500 * time.Millisecond
	DefaultCap  = time.Minute
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
		base = DefaultBase
	}
	if ceiling <= 0 {
		ceiling = DefaultCap
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
