package demo

import (
	"fmt"
	"io"
	"strings"

	"github.com/zero502/zero502/deployer/report"
)

// WriteHTML writes the demo's self-contained HTML page: per run the summary and the SVG
// timeline of report.WriteHTML, with the load's requests per second by class.
func WriteHTML(w io.Writer, rs ...*Result) error {
	runs := make([]report.HTMLRun, 0, len(rs))
	for _, r := range rs {
		var t strings.Builder
		WriteSummary(&t, r)
		runs = append(runs, report.HTMLRun{
			Heading: mode(r), Verdict: verdict(r), Clean: r.Clean(), Marks: r.Marks, Load: r.Load,
			RolloutFrom: r.DeployFrom, RolloutTo: r.DeployTo, Rollout: fmt.Sprintf("rollout %s → %s", From, To),
			Summary: t.String(),
		})
	}
	intro := `A rolling deploy ` + From + ` → ` + To + ` of three local hosts behind the in-house LB, under a steady load.
Counted per request: what users feel. A 503 of the health endpoint is the drain at work, not a failure.`
	return report.WriteHTML(w, "zero502 demo", intro, runs...)
}
