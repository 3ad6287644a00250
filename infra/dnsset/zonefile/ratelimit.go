package zonefile

import (
	"net/netip"
	"sync"
	"time"
)

// Per-source limits of UDP answers: a spoofed source cannot turn the server into an amplifier
// beyond this, and a real resolver (which caches) never comes near it.
const (
	// defaultRate is the answers per second one source address gets over UDP.
	defaultRate = 50
	// defaultBurst is how many answers a source may get at once before defaultRate applies.
	defaultBurst = 100
	// maxSources bounds the sources remembered; beyond it, the ones full again are forgotten.
	maxSources = 1 << 16
)

// limiter is a token bucket per source address: each holds up to burst tokens, refilled at
// rate per second; an answer takes one.
type limiter struct {
	rate, burst float64

	mu      sync.Mutex
	buckets map[netip.Addr]*bucket
}

type bucket struct {
	tokens float64
	at     time.Time
}

func newLimiter(rate, burst int) *limiter {
	return &limiter{rate: float64(rate), burst: float64(burst), buckets: map[netip.Addr]*bucket{}}
}

// allow takes a token for src at now, or says it has none.
func (l *limiter) allow(src netip.Addr, now time.Time) bool {
	l.mu.Lock()
	defer l.mu.Unlock()
	b := l.buckets[src]
	if b == nil {
		if len(l.buckets) >= maxSources {
			l.forgetFull(now)
		}
		b = &bucket{tokens: l.burst, at: now}
		l.buckets[src] = b
	}
	b.tokens = min(l.burst, b.tokens+now.Sub(b.at).Seconds()*l.rate)
	b.at = now
	if b.tokens < 1 {
		return false
	}
	b.tokens--
	return true
}

// forgetFull drops the buckets that have refilled: forgetting them changes nothing.
func (l *limiter) forgetFull(now time.Time) {
	for a, b := range l.buckets {
		if b.tokens+now.Sub(b.at).Seconds()*l.rate >= l.burst {
			delete(l.buckets, a)
		}
	}
}
