package mesh

import "time"

// streak is one witness's running opinion of one target: consecutive failures and successes,
// and whether its vote is currently "cannot reach".
type streak struct {
	fails, oks int
	failing    bool
	last       time.Time
	lastErr    string
}

// apply counts one probe result. A gap longer than th.ProbeStaleAfter since the previous result
// starts afresh: old failures glued to new ones are not a sustained streak. A failing streak
// ends after th.HealStreak consecutive successes.
func (s *streak) apply(p Probe, th Thresholds) {
	if !s.last.IsZero() && p.At.Sub(s.last) > th.ProbeStaleAfter {
		*s = streak{}
	}
	s.last = p.At
	if p.OK {
		s.oks++
		s.fails = 0
		if s.failing && s.oks >= th.HealStreak {
			s.failing = false
		}
		return
	}
	s.lastErr = p.Err
	s.fails++
	s.oks = 0
	if s.fails >= th.FailStreak {
		s.failing = true
	}
}

// fresh reports whether the last result is recent enough to be an opinion at now.
func (s *streak) fresh(now time.Time, th Thresholds) bool {
	return !s.last.IsZero() && now.Sub(s.last) <= th.ProbeStaleAfter
}
