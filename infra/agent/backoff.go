package agent

import (
	"math/rand/v2"
	"time"
)

// Defaults of the reconnect Backoff.
const (
	DefaultBackoffBase = 500 * time.Millisecond
	DefaultBackoffCap  = time.Minute
)

// Backoff is the wait before a reconnect after a real failure: exponential with full jitter
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
		base = DefaultBackoffBase
	}
	if ceiling <= 0 {
		ceiling = DefaultBackoffCap
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
