package edgepick

import (
	"context"
	"math/rand/v2"
	"net/netip"
	"slices"
	"time"
)

// Rand is the jitter source: *rand.Rand of math/rand/v2 implements it; tests seed one.
type Rand interface {
	Int64N(n int64) int64
}

// Watcher runs beside an active session and does two things only: each round it probes the
// edges ranked above the current one with the same full handshake (failback), or, when the last
// measurement is stale (older than the Picker's MaxAge, or the set changed), measures everything
// again. It switches when a candidate passes the Hysteresis, by ending the session on purpose
// (SwitchReason), never by an error.
type Watcher struct {
	// Picker gives the candidate set, the probe, the state file, the clock and the logger.
	Picker *Picker
	// Interval bounds each round's wait: the wait is drawn uniformly from [0, Interval] (full
	// jitter). 0 is DefaultInterval.
	Interval time.Duration
	// Hysteresis is the switch rule; zero fields take defaultHysteresis's.
	Hysteresis Hysteresis
	// Rand draws the jitter; nil is math/rand/v2's global source.
	Rand Rand
}

// watch is one session's view: the ranking it compares against, and each edge's run of
// successful probes with its latest handshake time.
type watch struct {
	current    netip.AddrPort
	set        Set
	ranking    Ranking
	measuredAt time.Time
	streak     map[netip.AddrPort]int
	// recent is each edge's handshake times over its current streak of successful probes, the
	// last keptHandshakes of them
	recent map[netip.AddrPort][]time.Duration
}

// keptHandshakes bounds an edge's recent handshake times; currentSamples is how many of the
// current edge's the comparison takes the best of.
const (
	keptHandshakes = 8
	currentSamples = 3
)

// Run watches the session on current.Addr until ctx ends or it decides to switch: then it saves
// the new choice to the state file, calls onSwitch once with the reason and returns. The caller
// ends the session cleanly, as a planned end, and reconnects to the reason's To. With no choice
// (Choose returned false), or no Picker.Probe, there is nothing to watch and Run returns at once.
//
// A current edge that failed its last full measurement, or left the set, is slower than any
// healthy edge: the watcher moves off it once a candidate has its streak, instead of waiting for
// the edge's drain to cut the session. A DNS failure keeps the last set.
func (w *Watcher) Run(ctx context.Context, current Choice, onSwitch func(SwitchReason)) {
	p := w.Picker
	if !current.Addr.IsValid() || len(current.Ranking) < 2 {
		p.logger().Info("edgepick watcher: nothing to watch (no choice, or fewer than two candidates)")
		return
	}
	if p.Probe == nil {
		// A choice read from the state file needs no probe; watching it does.
		p.logger().Warn("edgepick watcher: no probe configured (Picker.Probe is nil); not watching, " +
			"the session stays on its edge")
		return
	}
	s := &watch{
		current:    current.Addr,
		set:        current.Ranking.Set(),
		ranking:    current.Ranking,
		measuredAt: current.MeasuredAt,
		streak:     map[netip.AddrPort]int{},
		recent:     map[netip.AddrPort][]time.Duration{},
	}
	for {
		select {
		case <-ctx.Done():
			return
		case <-p.clock().After(w.wait()):
		}
		if r, ok := w.round(ctx, s); ok {
			p.save(Choice{Addr: r.To, Set: s.set, Ranking: s.ranking, MeasuredAt: s.measuredAt})
			p.logger().Info("edgepick watcher: switching edge", "reason", r.String())
			onSwitch(r)
			return
		}
	}
}

// round is one round: re-measure when stale, else probe the edges above the current one; then
// the switch decision.
func (w *Watcher) round(ctx context.Context, s *watch) (SwitchReason, bool) {
	p, log := w.Picker, w.Picker.logger()
	now := p.clock().Now()
	set, err := p.candidates(ctx)
	if err != nil {
		log.Warn("edgepick watcher: candidate list unknown; keeping the last set", "err", err)
		set = s.set
	}
	kind := Failback
	last := State{Set: s.set, MeasuredAt: s.measuredAt}
	if why := last.Stale(set, now, p.maxAge()); why != "" {
		if len(set) < 2 {
			log.Info("edgepick watcher: fewer than two candidates; nothing to measure", "set", set)
			return SwitchReason{}, false
		}
		log.Info("edgepick watcher: measuring every edge again", "why", why)
		kind = Remeasured
		s.ranking, s.set, s.measuredAt = Measure(ctx, set, p.Probe), set, now
		s.record(s.ranking)
		if best, ok := s.ranking.Best(); ok {
			chosen := s.current
			if m, ok := s.ranking.Find(chosen); !ok || !m.Healthy() {
				chosen = best.Addr // a restart should not come back to an edge that failed its probe
			}
			p.save(Choice{Addr: chosen, Set: s.set, Ranking: s.ranking, MeasuredAt: s.measuredAt})
		}
	} else {
		above := s.ranking.Above(s.current)
		if len(above) == 0 {
			return SwitchReason{}, false // already on the best edge
		}
		s.record(Measure(ctx, above, p.Probe))
	}

	cur, curOK := s.ranking.Find(s.current)
	curOK = curOK && cur.Healthy()
	current := cur.Handshake
	if rec := s.recent[s.current]; curOK && len(rec) > 0 {
		current = slices.Min(rec[max(0, len(rec)-currentSamples):])
	}
	h := w.hysteresis()
	for _, a := range s.ranking.Above(s.current) {
		n := s.streak[a]
		if n == 0 {
			continue
		}
		// the gain must hold on each of the streak's last h.Streak probes (its slowest of them
		// against the current edge's best of its last few): one slow sample on the current edge,
		// or one fast one on a candidate, is jitter, not a better path
		rec := s.recent[a]
		candidate := slices.Max(rec[max(0, len(rec)-h.Streak):])
		if h.shouldSwitch(current, curOK, candidate, n) {
			r := SwitchReason{Kind: kind, From: s.current, To: a, ToHandshake: candidate, Streak: n}
			if curOK {
				r.FromHandshake = current
			}
			return r, true
		}
	}
	return SwitchReason{}, false
}

// record counts each probe into its edge's streak: a success extends it (and its recent
// handshake times), a failure resets it.
func (s *watch) record(r Ranking) {
	for _, m := range r {
		if m.Healthy() {
			s.streak[m.Addr]++
			rec := append(s.recent[m.Addr], m.Handshake)
			s.recent[m.Addr] = rec[max(0, len(rec)-keptHandshakes):]
		} else {
			delete(s.streak, m.Addr)
			delete(s.recent, m.Addr)
		}
	}
}

// wait is one round's wait, uniform in [0, Interval] (full jitter).
func (w *Watcher) wait() time.Duration {
	iv := w.Interval
	if iv <= 0 {
		iv = DefaultInterval
	}
	var r Rand = globalRand{}
	if w.Rand != nil {
		r = w.Rand
	}
	return time.Duration(r.Int64N(int64(iv) + 1))
}

func (w *Watcher) hysteresis() Hysteresis {
	h := w.Hysteresis
	if h.Streak <= 0 {
		h.Streak = DefaultStreak
	}
	if h.MinGain <= 0 {
		h.MinGain = DefaultMinGain
	}
	if h.MinGainRatio <= 0 {
		h.MinGainRatio = DefaultMinGainRatio
	}
	return h
}

// globalRand is math/rand/v2's global source, safe for concurrent use.
type globalRand struct{}

func (globalRand) Int64N(n int64) int64 { return rand.Int64N(n) }
