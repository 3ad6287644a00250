package report

import "time"

// Mark names of a host's handshake timeline, in timeline order (the HTML report's marks).
const (
	MarkDrain   = "drain"
	MarkLeft    = "left"
	MarkStopped = "stopped"
	MarkStarted = "started"
	MarkHealthy = "healthy"
	MarkBack    = "back"
)

// HostMarks are one host's handshake marks as offsets from an origin (absent marks are not in
// the map) and its deploy duration against its floor.
type HostMarks struct {
	Host     string                   `json:"host"`
	Marks    map[string]time.Duration `json:"marks_ns"`
	Duration time.Duration            `json:"duration_ns"`
	Floor    time.Duration            `json:"floor_ns"`
	Ratio    float64                  `json:"ratio"`
}

// Marks turns a report's timelines into offsets from origin, one HostMarks per host.
func (r *Report) Marks(origin time.Time) []HostMarks {
	if r == nil {
		return nil
	}
	var out []HostMarks
	for _, h := range r.Hosts {
		m := HostMarks{Host: h.Host, Marks: map[string]time.Duration{}, Duration: h.Duration, Floor: h.Floor, Ratio: h.Ratio()}
		tl := h.Timeline
		for name, at := range map[string]time.Time{
			MarkDrain: tl.DrainStarted, MarkLeft: tl.LeftRotation, MarkStopped: tl.Stopped,
			MarkStarted: tl.NewStarted, MarkHealthy: tl.HealthyDirect, MarkBack: tl.BackInRotation,
		} {
			if !at.IsZero() {
				m.Marks[name] = at.Sub(origin)
			}
		}
		out = append(out, m)
	}
	return out
}
