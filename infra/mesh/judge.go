package mesh

import (
	"fmt"
	"strings"
	"time"
)

// judge derives the verdict of server t at now from the reports and streaks held. The rules, in
// order:
//  1. No fresh report: NoData (stays in rotation: silence is not a verdict). A fresh report
//     saying unhealthy: Unavailable (Down).
//  2. Every witness with a fresh streak against t votes. An unreliable witness's vote is ignored;
//     so is an ordinary server's vote about a checker ("means nothing").
//  3. Quorum or more reliable witnesses failing: Unreachable (Down).
//  4. Otherwise a reliable checker failing an ordinary server: Unreachable (Down), its address is
//     likely blocked.
//  5. Otherwise every failing pair left (the ignored unreliable ones included, but not ordinary
//     servers judging a checker) marks t's entry point: Marked, nothing leaves rotation.
func (e *Evaluator) judge(t string, now time.Time) Verdict {
	v := Verdict{Server: t, Checker: e.checker[t], Quorum: e.th.Quorum}
	var reasons []string

	r, fresh := e.freshReport(t, now)
	if last, ok := e.reports[t]; ok {
		v.LastReport, v.Service, v.Metrics = last.At, last.Service, last.Metrics
		if last.Metrics != nil {
			v.MetricsAge = now.Sub(last.At).Seconds()
		}
	}
	switch {
	case !fresh && v.LastReport.IsZero():
		v.Conditions = append(v.Conditions, NoData)
		reasons = append(reasons, "no data: no report received yet")
	case !fresh:
		v.Conditions = append(v.Conditions, NoData)
		reasons = append(reasons, fmt.Sprintf("no data: last report %s ago, older than %s",
			now.Sub(v.LastReport).Round(time.Millisecond), e.th.ReportStaleAfter))
	case !r.Healthy:
		v.Conditions = append(v.Conditions, Unavailable)
		detail := r.Detail
		if detail == "" {
			detail = "no detail"
		}
		reasons = append(reasons, fmt.Sprintf("unavailable: its report %s ago says unhealthy (%s)",
			now.Sub(r.At).Round(time.Millisecond), detail))
	}

	var failing, checkers, marks []Vote
	var ignored []string
	for _, w := range e.servers {
		if w == t {
			continue
		}
		s, ok := e.freshStreak(w, t, now)
		if !ok {
			continue // silence: no opinion
		}
		vote := Vote{Witness: w, Failing: s.failing, Fails: s.fails, Checker: e.checker[w]}
		if s.fails > 0 {
			vote.LastErr = s.lastErr
		}
		switch {
		case v.Checker && !vote.Checker:
			vote.Ignored = "an ordinary server failing to see a checker means nothing"
		default:
			vote.Ignored = e.unreliable(w, t, now)
		}
		v.Votes = append(v.Votes, vote)
		if vote.Ignored != "" {
			if vote.Failing {
				ignored = append(ignored, fmt.Sprintf("%s (%s)", w, vote.Ignored))
				if !(v.Checker && !vote.Checker) {
					marks = append(marks, vote)
				}
			}
			continue
		}
		if !vote.Failing {
			v.Seeing = append(v.Seeing, w)
			continue
		}
		v.Failing = append(v.Failing, w)
		failing = append(failing, vote)
		marks = append(marks, vote)
		if vote.Checker && !v.Checker {
			checkers = append(checkers, vote)
		}
	}

	switch {
	case len(failing) >= e.th.Quorum:
		v.Conditions = append(v.Conditions, Unreachable)
		reasons = append(reasons, fmt.Sprintf("unreachable from %d of your servers (%s; quorum %d, %d seeing it)",
			len(failing), streaks(failing, e.th), e.th.Quorum, len(v.Seeing)))
	case len(checkers) > 0:
		v.Conditions = append(v.Conditions, Unreachable)
		v.BlockedBy = checkers[0].Witness
		reasons = append(reasons, fmt.Sprintf("unreachable from checker %s: its address is likely blocked, consider "+
			"changing its IP (%s; quorum %d not met: %d failing)", v.BlockedBy, streaks(checkers, e.th), e.th.Quorum, len(failing)))
	case len(marks) > 0:
		v.Conditions = append(v.Conditions, Marked)
		for _, m := range marks {
			back, ok := e.freshStreak(t, m.Witness, now)
			v.Marks = append(v.Marks, mark{Witness: m.Witness, Target: t, Both: ok && back.failing, Fails: m.Fails})
		}
		reasons = append(reasons, fmt.Sprintf("entry point marked, kept in rotation: %s (quorum %d not met, no checker "+
			"failing it; one pair alone cannot tell whose address is blocked)", pairs(v.Marks, e.th), e.th.Quorum))
	}
	if len(ignored) > 0 {
		reasons = append(reasons, "ignored: "+strings.Join(ignored, "; "))
	}

	switch {
	case v.Has(Unavailable) || v.Has(Unreachable):
		v.State = Down
	case v.Has(NoData):
		v.State = Unknown
	default:
		v.State = Up
	}
	v.InRotation = v.State != Down
	if v.State == Up {
		up := fmt.Sprintf("up: healthy report %s ago", now.Sub(r.At).Round(time.Millisecond))
		if len(v.Seeing) > 0 {
			up += "; seen by " + strings.Join(v.Seeing, ", ")
		}
		reasons = append([]string{up}, reasons...)
	}
	v.Reason = strings.Join(reasons, "; ")
	return v
}

// streaks names each witness with its streak: "a: 3 failed probes in a row (need 3, last: refused)".
func streaks(votes []Vote, th Thresholds) string {
	parts := make([]string, 0, len(votes))
	for _, v := range votes {
		p := fmt.Sprintf("%s: %d failed probes in a row, streak %d", v.Witness, v.Fails, th.FailStreak)
		if v.Fails == 0 {
			p = fmt.Sprintf("%s: still failing, healing (heal streak %d)", v.Witness, th.HealStreak)
		}
		if v.LastErr != "" {
			p += ", last: " + v.LastErr
		}
		parts = append(parts, p)
	}
	return strings.Join(parts, "; ")
}

// pairs names each failing pair: "a cannot reach b (3 in a row)" or "... in both directions".
func pairs(marks []mark, th Thresholds) string {
	parts := make([]string, 0, len(marks))
	for _, m := range marks {
		p := fmt.Sprintf("%s cannot reach %s (%d failed probes in a row, streak %d)", m.Witness, m.Target, m.Fails, th.FailStreak)
		if m.Both {
			p += ", in both directions"
		}
		parts = append(parts, p)
	}
	return strings.Join(parts, "; ")
}
