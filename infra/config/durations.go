package config

import (
	"math"
	"math/bits"
	"time"
)

// MaxThreshold is the largest count of checks in a row a threshold (balancer.*_threshold,
// edge.*_threshold, watchdog.heal_after) may be: more would leave a failing target in rotation
// for hours, and is always a mistake.
const MaxThreshold = 1000

// MulDuration is d × n, saturated at the largest (or smallest) time.Duration where the product
// does not fit: a detection time (interval × threshold) that overflows is "longer than anything",
// never a wrapped-around negative that an invariant would take for a short one. Every product
// of a duration and a count the invariants relate goes through it.
func MulDuration(d time.Duration, n int) time.Duration {
	neg := (d < 0) != (n < 0)
	hi, lo := bits.Mul64(absU64(int64(d)), absU64(int64(n)))
	switch {
	case neg && (hi != 0 || lo > 1<<63):
		return math.MinInt64
	case neg:
		return time.Duration(-lo) // two's complement: -(1<<63) is math.MinInt64
	case hi != 0 || lo > math.MaxInt64:
		return math.MaxInt64
	}
	return time.Duration(lo)
}

// AddDurations is the sum of ds, each step saturated at the largest (or smallest)
// time.Duration instead of wrapping around (see MulDuration).
func AddDurations(ds ...time.Duration) time.Duration {
	var s time.Duration
	for _, d := range ds {
		switch {
		case d > 0 && s > math.MaxInt64-d:
			s = math.MaxInt64
		case d < 0 && s < math.MinInt64-d:
			s = math.MinInt64
		default:
			s += d
		}
	}
	return s
}

func absU64(x int64) uint64 {
	if x < 0 {
		return uint64(-x) // -math.MinInt64 wraps to itself, which is 1<<63 as uint64
	}
	return uint64(x)
}
