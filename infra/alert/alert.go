package alert

import "time"

// Alert is the JSON document a person gets.
type Alert struct {
	// Source is what raised it: "edgepick survey", "mesh a".
	Source string `json:"source"`
	// Subject is what it is about: an edge address, a server name.
	Subject string `json:"subject"`
	// Kind is the state the subject entered, e.g. "backend-dead", "unreachable", "blocked",
	// "recovered".
	Kind string `json:"kind"`
	// From is the state it left.
	From string `json:"from,omitempty"`
	// Summary says what happened, in a sentence; Suggestion what to do, when there is something.
	Summary    string    `json:"summary"`
	Suggestion string    `json:"suggestion,omitempty"`
	At         time.Time `json:"at"`
}
