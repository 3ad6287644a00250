package mesh

import "time"

// State is what a verdict means for rotation.
type State string

const (
	// Up: a fresh healthy report and no verdict against it. In rotation.
	Up State = "up"
	// Down: Unavailable or Unreachable. Out of rotation (Route still keeps the best of a route
	// whose every server is down).
	Down State = "down"
	// Unknown: no fresh report and no verdict against it. Silence is not a verdict: it stays in
	// rotation.
	Unknown State = "unknown"
)

// Condition is one finding behind a verdict, in the write-up's words.
type Condition string

const (
	// Unavailable: the server's own fresh report says it is unhealthy ("Server unavailable").
	Unavailable Condition = "unavailable"
	// Unreachable: a quorum of reliable witnesses, or a reliable checker, consistently fail to
	// reach it ("Unreachable from your servers").
	Unreachable Condition = "unreachable"
	// NoData: no fresh report ("No data from the server"). Not a reason to leave rotation.
	NoData Condition = "no-data"
	// Marked: some witness consistently fails to reach it, without a quorum and without a
	// checker: its entry point is marked, nothing is taken out of rotation.
	Marked Condition = "marked"
)

// Vote is one witness's fresh opinion of a target.
type Vote struct {
	Witness string `json:"witness"`
	// Failing is true once the witness has failed FailStreak times in a row (and not healed).
	Failing bool `json:"failing"`
	// Fails is the current run of consecutive failures (0 after a success).
	Fails int `json:"fails"`
	// LastErr is why the last failed probe failed.
	LastErr string `json:"last_err,omitempty"`
	// Checker: the witness is a checker in the judging server's --checkers (never a claim).
	Checker bool `json:"checker,omitempty"`
	// Ignored says why this vote does not count (an unreliable witness, or an ordinary server
	// judging a checker); empty when it counts.
	Ignored string `json:"ignored,omitempty"`
}

// mark is a failing pair without a verdict: Witness consistently fails to reach Target. Both is
// true when Target also fails to reach Witness. Nobody is accused and nothing leaves rotation:
// from "A does not see B" alone nobody can tell whose address is blocked.
type mark struct {
	Witness string `json:"witness"`
	Target  string `json:"target"`
	Both    bool   `json:"both"`
	Fails   int    `json:"fails"`
}

// Verdict is the Evaluator's judgement of one server at one instant.
type Verdict struct {
	Server     string      `json:"server"`
	State      State       `json:"state"`
	Conditions []Condition `json:"conditions,omitempty"`
	InRotation bool        `json:"in_rotation"`
	// Checker: the server is a checker in the judging server's --checkers (never a claim).
	Checker bool `json:"checker,omitempty"`
	// Quorum is the quorum this verdict was judged with.
	Quorum int `json:"quorum"`
	// Failing are the reliable witnesses whose votes say "cannot reach" ("how many of your
	// servers cannot see it"); Seeing those that reach it.
	Failing []string `json:"failing,omitempty"`
	Seeing  []string `json:"seeing,omitempty"`
	// BlockedBy is the checker whose failing streak made it Unreachable, if that was the cause.
	BlockedBy string `json:"blocked_by,omitempty"`
	Votes     []Vote `json:"votes,omitempty"`
	Marks     []mark `json:"marks,omitempty"`
	// LastReport is when its last report (fresh or not) was received; zero when never.
	LastReport time.Time `json:"last_report,omitzero"`
	// Service is the server's service URL as configured on the server judging (--service,
	// --peer-service): what a peer's bulletin claims is ignored.
	Service string `json:"service,omitempty"`
	// Metrics are from its last report (fresh or not); MetricsAge is that report's age in
	// seconds, and MetricsStale the panel's "stale" badge: the report missed two
	// rounds (set by the Node, which knows the round).
	Metrics      *Metrics `json:"metrics,omitempty"`
	MetricsAge   float64  `json:"metrics_age_seconds,omitempty"`
	MetricsStale bool     `json:"metrics_stale,omitempty"`
	// Reason says why, naming the witnesses, their streaks and the quorum.
	Reason string `json:"reason"`
}

// Has reports whether c is among the verdict's conditions.
func (v Verdict) Has(c Condition) bool {
	for _, have := range v.Conditions {
		if have == c {
			return true
		}
	}
	return false
}
