package mesh

import (
	"errors"
	"fmt"
	"time"
)

// Thresholds are every number the Evaluator decides with. The write-up gives the rules, not all
// the numbers; where it gives none, the default is ours and says so.
type Thresholds struct {
	// FailStreak is how many consecutive failed probes from one witness make its vote count
	// against a target. The write-up: "one failed probe means nothing, only a sustained streak
	// of failures counts", so at least 2. Default 3 (our number).
	FailStreak int
	// HealStreak is how many consecutive successful probes end a failing streak. The write-up:
	// "neighbours can reach it again: the failure streak is reset". Default 1 (a success resets).
	HealStreak int
	// Quorum is how many reliable witnesses must fail a target for it to be Unreachable. The
	// write-up: "several independent servers; one server's opinion is not a verdict", so at
	// least 2. Default 2.
	Quorum int
	// UnreliableShare is the share of its other neighbours a witness must fail to see to be
	// unreliable. The write-up: "a server that claims it cannot see half its neighbours: the
	// problem is most likely its own". Default 0.5; must be above 0 and at most 1.
	UnreliableShare float64
	// ReportStaleAfter is how old a self-report may be and still count. The write-up: servers
	// report "every few minutes". Default 6m (three missed 2-minute reports; our number).
	ReportStaleAfter time.Duration
	// ProbeStaleAfter is how old a witness's last probe of a target may be and still count;
	// a gap this long between two probes also starts the streak afresh. Default 3m (our number).
	ProbeStaleAfter time.Duration
}

// DefaultThresholds are the write-up's rules with the numbers documented on each field.
func DefaultThresholds() Thresholds {
	return Thresholds{
		FailStreak:       3,
		HealStreak:       1,
		Quorum:           2,
		UnreliableShare:  0.5,
		ReportStaleAfter: 6 * time.Minute,
		ProbeStaleAfter:  3 * time.Minute,
	}
}

// Validate returns every violated rule, each naming the field, its value and the rule.
func (t Thresholds) Validate() error {
	return t.ValidateNamed(func(field string) string { return "threshold " + field })
}

// ValidateNamed is Validate with each field named as its caller knows it: name gets the field
// (FailStreak, Quorum…) and returns the word the message starts with (the CLI's --quorum).
func (t Thresholds) ValidateNamed(name func(field string) string) error {
	var errs []error
	if t.FailStreak < 2 {
		errs = append(errs, fmt.Errorf("%s %d: must be 2 or more (one failed probe means nothing; only a streak counts)", name("FailStreak"), t.FailStreak))
	}
	if t.HealStreak < 1 {
		errs = append(errs, fmt.Errorf("%s %d: must be 1 or more (a failing streak must be able to heal)", name("HealStreak"), t.HealStreak))
	}
	if t.Quorum < 2 {
		errs = append(errs, fmt.Errorf("%s %d: must be 2 or more (one server's opinion is not a verdict)", name("Quorum"), t.Quorum))
	}
	if !(t.UnreliableShare > 0 && t.UnreliableShare <= 1) {
		errs = append(errs, fmt.Errorf("%s %g: must be above 0 and at most 1 (0.5: failing half of its neighbours makes a witness unreliable)", name("UnreliableShare"), t.UnreliableShare))
	}
	if t.ReportStaleAfter <= 0 {
		errs = append(errs, fmt.Errorf("%s %s: must be above 0 (longer than the report interval)", name("ReportStaleAfter"), t.ReportStaleAfter))
	}
	if t.ProbeStaleAfter <= 0 {
		errs = append(errs, fmt.Errorf("%s %s: must be above 0 (longer than the probe interval)", name("ProbeStaleAfter"), t.ProbeStaleAfter))
	}
	return errors.Join(errs...)
}
