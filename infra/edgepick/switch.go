package edgepick

import (
	"fmt"
	"net/netip"
	"time"
)

// Defaults of the Watcher's numbers, from the write-up.
const (
	// DefaultInterval is the failback round's interval; each wait is drawn uniformly from
	// [0, DefaultInterval] (full jitter) so a fleet's probes do not synchronise. A shorter one
	// costs more and gains nothing: the streak makes every return take two rounds anyway.
	DefaultInterval = 5 * time.Minute
	// DefaultStreak is how many consecutive successful probes an edge needs before the agent goes
	// (back) to it: one success is an edge that just restarted.
	DefaultStreak = 2
	// DefaultMinGain and DefaultMinGainRatio are the two thresholds a faster edge must both beat:
	// absolute alone would approve 100 → 79 ms, relative alone 4 → 3 ms.
	DefaultMinGain      = 20 * time.Millisecond
	DefaultMinGainRatio = 0.25
)

// Hysteresis is what a candidate must show before the agent leaves a working session for it.
type Hysteresis struct {
	// Streak is the consecutive successful probes the candidate needs.
	Streak int
	// MinGain is the handshake time it must save, at least (absolute threshold).
	MinGain time.Duration
	// MinGainRatio is the fraction of the current handshake time it must save, at least
	// (relative threshold).
	MinGainRatio float64
}

// defaultHysteresis is the write-up's numbers: a streak of two, 20 ms and 25 %.
func defaultHysteresis() Hysteresis {
	return Hysteresis{Streak: DefaultStreak, MinGain: DefaultMinGain, MinGainRatio: DefaultMinGainRatio}
}

// shouldSwitch is the switch decision, pure: leave the current edge (handshake current; currentOK
// false when its last probe failed, so any healthy candidate is faster) for a candidate with
// handshake candidate and a streak of consecutive successes, only when the streak is long enough
// AND the gain meets both thresholds. Two edges in one data centre differ by under a millisecond;
// without both thresholds they would swap daily.
func (h Hysteresis) shouldSwitch(current time.Duration, currentOK bool, candidate time.Duration, streak int) bool {
	if streak < h.Streak {
		return false
	}
	if !currentOK {
		return true
	}
	gain := current - candidate
	return gain >= h.MinGain && float64(gain) >= h.MinGainRatio*float64(current)
}

// switchKind is which of the Watcher's two jobs decided a switch.
type switchKind string

const (
	// Failback: an edge ranked above the current one answered Streak probes in a row.
	Failback switchKind = "failback"
	// Remeasured: the periodic full measurement found a faster edge past both thresholds.
	Remeasured switchKind = "remeasured"
)

// SwitchReason is why the Watcher ends the session on purpose: a clean reconnect to To. It is a
// planned session end, like a deploy's drain, and deliberately not an error (it does not
// implement error): an error would feed the reconnect backoff ladder and punish the agent with a
// growing delay for doing the right thing.
type SwitchReason struct {
	Kind switchKind
	// From is the current edge, To the edge to reconnect to.
	From, To netip.AddrPort
	// FromHandshake and ToHandshake are the handshake times compared (FromHandshake is 0 when the
	// current edge failed its last probe).
	FromHandshake, ToHandshake time.Duration
	// Streak is To's run of consecutive successful probes.
	Streak int
}

// String is the reason for a log line or a session-end record.
func (r SwitchReason) String() string {
	return fmt.Sprintf("planned reconnect (%s): %s (handshake %s) → %s (handshake %s, %d successful probes in a row)",
		r.Kind, r.From, r.FromHandshake.Round(time.Microsecond), r.To, r.ToHandshake.Round(time.Microsecond), r.Streak)
}
