// Package report owns what a deploy says when it ends: the Report (per host what it ran before
// and after, its outcome, the drain handshake's timeline against its floor), and its renderings:
// the text table (WriteText), the self-contained HTML page with an SVG timeline (WriteHTML), the
// marks a load's timeline shows (Marks), and node_exporter's textfile metrics
// (WriteMetricsTextfile). The rollout pipeline (package deployer) fills it in.
package report

import (
	"fmt"
	"io"
	"strings"
	"text/tabwriter"
	"time"
)

// Host outcomes.
const (
	OutcomeDeployed   = "deployed"    // the host runs the new version, verified
	OutcomeUnchanged  = "unchanged"   // the host already ran the new version, healthy: verified only
	OutcomeRolledBack = "rolled back" // the new version failed; the host runs its previous spec again
	OutcomeFailed     = "failed"      // the new version failed and so did the rollback: look at the host
	OutcomeNotReached = "not reached" // the rollout stopped (or was refused) before this host
	OutcomeUntouched  = "untouched"   // the step failed before it changed anything (an image pull)
	// OutcomeUnreachable: ssh never reached the host: nothing ran there, it runs what it ran.
	OutcomeUnreachable = "unreachable, not changed"
	// OutcomeUnknown: the connection to the host was lost after its step began: what it runs
	// was not seen (its step rolls back by itself; zero502 status tells).
	OutcomeUnknown = "unreachable after its step began: unknown"
)

// Report is the result of a deploy: per host what it ran before and after, how it went, and the
// handshake timeline of its balanced service.
type Report struct {
	Version  string        `json:"version"`
	Naive    bool          `json:"naive,omitempty"`
	Started  time.Time     `json:"started"`
	Duration time.Duration `json:"duration_ns"`
	// Error is the deploy's error, empty when it succeeded.
	Error string `json:"error,omitempty"`
	// Refused is true when preflight refused the deploy: no host was touched.
	Refused bool `json:"refused,omitempty"`
	// Floor is the least the deploy could have taken: per batch, its slowest host's floor plus
	// the window it was judged for; Judged is the sum of those windows (the canary's
	// rollout.canary.duration and each batch's rollout.analysis.window), what the verdicts cost.
	Floor  time.Duration `json:"floor_ns,omitempty"`
	Judged time.Duration `json:"judged_ns,omitempty"`
	Hosts  []HostReport  `json:"hosts"`
}

// HostReport is one host's part of a deploy.
type HostReport struct {
	Host string `json:"host"`
	// From is the version the host ran before ("" on a fresh host); To is the version deployed.
	From    string `json:"from"`
	To      string `json:"to"`
	Outcome string `json:"outcome"`
	// Running is the version the host runs at the end of the deploy, read back from its runtime
	// ("" when nothing runs).
	Running string `json:"running"`
	// Error says why the host failed or was rolled back.
	Error string `json:"error,omitempty"`
	// Target is the balanced service's address on the host once its step is done (the new
	// version's target), "" before.
	Target string `json:"target,omitempty"`
	// Verdict is the analysis of the host's batch with its numbers (rollout.analysis), "" when
	// it was not analysed.
	Verdict  string   `json:"verdict,omitempty"`
	Timeline Timeline `json:"timeline"`
	// Duration is the host's step from lock to verified; Floor is what the handshake itself
	// needs: the bake (rollout.bake, at least healthy_threshold × interval), plus drain.window when the
	// balanced service drains by the handshake (not on a fresh host, nor drained at the balancer).
	Duration time.Duration `json:"duration_ns"`
	Floor    time.Duration `json:"floor_ns"`
}

// Ratio is Duration / Floor (0 when there is no floor).
func (h HostReport) Ratio() float64 {
	if h.Floor <= 0 {
		return 0
	}
	return float64(h.Duration) / float64(h.Floor)
}

// Timeline is the drain handshake of a host's balanced service as the deployer saw it. A zero
// time is a mark that did not happen (a fresh host has no drain; a naive deploy has no watch).
type Timeline struct {
	DrainStarted   time.Time `json:"drain_started,omitzero"`
	LeftRotation   time.Time `json:"left_rotation,omitzero"`
	Stopped        time.Time `json:"stopped,omitzero"`
	NewStarted     time.Time `json:"new_started,omitzero"`
	HealthyDirect  time.Time `json:"healthy_direct,omitzero"`
	BackInRotation time.Time `json:"back_in_rotation,omitzero"`
}

// Origin is the timeline's zero: the drain start, else the new instance's start.
func (t Timeline) Origin() time.Time {
	if !t.DrainStarted.IsZero() {
		return t.DrainStarted
	}
	return t.NewStarted
}

// Versions says which host runs which version at the end of the deploy.
func (r *Report) Versions() map[string]string {
	out := make(map[string]string, len(r.Hosts))
	for _, h := range r.Hosts {
		out[h.Host] = h.Running
	}
	return out
}

// OK reports whether every host ends on the deployed version.
func (r *Report) OK() bool {
	if r.Error != "" {
		return false
	}
	for _, h := range r.Hosts {
		if h.Running != r.Version {
			return false
		}
	}
	return true
}

// floorText is " (floor F, of it J judging; R×)" when the deploy has a floor.
func (r *Report) floorText() string {
	if r.Floor <= 0 {
		return ""
	}
	judged := ""
	if r.Judged > 0 {
		judged = fmt.Sprintf(", of it %s judging by what users got (canary and analysis windows)", Round(r.Judged))
	}
	return fmt.Sprintf(" (floor %s%s; %.2f×)", Round(r.Floor), judged, float64(r.Duration)/float64(r.Floor))
}

// WriteText renders the report for people: a table (host, from → to, outcome, duration vs
// floor), then each host's handshake timeline.
func (r *Report) WriteText(w io.Writer) error {
	var b strings.Builder
	mode := ""
	if r.Naive {
		mode = " (naive: no drain, no balancer watch)"
	}
	fmt.Fprintf(&b, "deploy %s%s: %s%s\n", r.Version, mode, Round(r.Duration), r.floorText())
	tw := tabwriter.NewWriter(&b, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "HOST\tFROM → TO\tOUTCOME\tRUNS\tTOOK\tFLOOR\tRATIO")
	for _, h := range r.Hosts {
		ratio, took, floor := "-", "-", "-"
		if h.Floor > 0 {
			floor = Round(h.Floor).String()
		}
		if h.Duration > 0 {
			took = Round(h.Duration).String()
			if h.Floor > 0 {
				ratio = fmt.Sprintf("%.2f×", h.Ratio())
			}
		}
		fmt.Fprintf(tw, "%s\t%s → %s\t%s\t%s\t%s\t%s\t%s\n", h.Host, dash(h.From), h.To, h.Outcome,
			dash(h.Running), took, floor, ratio)
	}
	tw.Flush()
	for _, h := range r.Hosts {
		if line := h.Timeline.String(); line != "" {
			fmt.Fprintf(&b, "%s: %s\n", h.Host, line)
		}
		if h.Error != "" {
			fmt.Fprintf(&b, "%s: %s\n", h.Host, h.Error)
		}
	}
	if r.Error != "" {
		if r.Refused {
			fmt.Fprintln(&b, r.Error)
		} else {
			fmt.Fprintf(&b, "deploy failed: %s\n", r.Error)
		}
	}
	_, err := io.WriteString(w, b.String())
	return err
}

// String renders the timeline as offsets from its origin: "drain started 15:00:01.123, left
// rotation +0.51s, stopped +1.52s, new healthy +1.60s, back in rotation +2.10s".
func (t Timeline) String() string {
	o := t.Origin()
	if o.IsZero() {
		return ""
	}
	var parts []string
	if !t.DrainStarted.IsZero() {
		parts = append(parts, "drain started "+t.DrainStarted.Format("15:04:05.000"))
	} else {
		parts = append(parts, "fresh start "+t.NewStarted.Format("15:04:05.000"))
	}
	mark := func(name string, at time.Time) {
		if !at.IsZero() {
			parts = append(parts, fmt.Sprintf("%s +%.2fs", name, at.Sub(o).Seconds()))
		}
	}
	mark("left rotation", t.LeftRotation)
	mark("stopped", t.Stopped)
	if !t.DrainStarted.IsZero() {
		mark("new started", t.NewStarted)
	}
	mark("new healthy", t.HealthyDirect)
	mark("back in rotation", t.BackInRotation)
	return strings.Join(parts, ", ")
}

func dash(s string) string {
	if s == "" {
		return "-"
	}
	return s
}

// Round rounds a duration for output: to 10ms above a second, to the millisecond below.
func Round(d time.Duration) time.Duration {
	if d > time.Second {
		return d.Round(10 * time.Millisecond)
	}
	return d.Round(time.Millisecond)
}
