package report

import (
	"fmt"
	"html"
	"io"
	"math"
	"strings"
	"time"

	"github.com/zero502/zero502/deployer/measure"
)

// HTMLRun is one run of the HTML report: a heading, a verdict, each host's handshake marks on a
// time axis, what a load through the balancer saw (when one ran), and a text summary.
type HTMLRun struct {
	Heading string
	Verdict string
	// Clean colours the verdict: green when true, red when not.
	Clean bool
	// Marks are each host's handshake marks, offsets from the time axis's zero.
	Marks []HostMarks
	// Load is what a load saw, its series starting at the axis's zero; nil: no load ran.
	Load *measure.Result
	// RolloutFrom and RolloutTo bound the rollout on the axis (both zero: not shown).
	RolloutFrom, RolloutTo time.Duration
	// Rollout names the shaded rollout span ("rollout v1 → v2").
	Rollout string
	// Summary is printed as preformatted text under the chart.
	Summary string
}

// ReportHTML is a real deploy's report as one HTMLRun: the axis starts when the deploy started.
func (r *Report) ReportHTML() HTMLRun {
	var text strings.Builder
	_ = r.WriteText(&text)
	verdict := fmt.Sprintf("RESULT: every host runs %s", r.Version)
	if !r.OK() {
		verdict = "RESULT: the deploy failed; see which host runs which version below"
	}
	return HTMLRun{
		Heading: fmt.Sprintf("deploy %s", r.Version), Verdict: verdict, Clean: r.OK(),
		Marks: r.Marks(r.Started), RolloutFrom: 0, RolloutTo: r.Duration, Rollout: "rollout to " + r.Version,
		Summary: text.String(),
	}
}

// classColour is each class's colour in the chart; failures are warm, the rest cool.
var classColour = map[measure.Class]string{
	measure.OK: "#43a047", measure.Health503: "#90a4ae", measure.C4xx: "#8d6e63",
	measure.C502: "#d32f2f", measure.C503: "#f57c00", measure.C504: "#7b1fa2", measure.C5xx: "#c2185b",
	measure.Refused: "#b71c1c", measure.Reset: "#e91e63", measure.Timeout: "#512da8", measure.ErrOther: "#212121",
}

// markColour is each handshake mark's colour.
var markColour = map[string]string{
	MarkDrain: "#f57c00", MarkLeft: "#1e88e5", MarkStopped: "#6d4c41",
	MarkStarted: "#8e24aa", MarkHealthy: "#00897b", MarkBack: "#2e7d32",
}

var markOrder = []string{MarkDrain, MarkLeft, MarkStopped, MarkStarted, MarkHealthy, MarkBack}

// WriteHTML writes a self-contained HTML page (no scripts, no external files): the title, the
// intro paragraph (HTML), then per run its verdict, an inline SVG timeline (requests per second
// by class when a load ran; each host's drain / left rotation / back in rotation marks) and its
// summary. zero502 demo --report and zero502 deploy --report both write it.
func WriteHTML(w io.Writer, title, intro string, runs ...HTMLRun) error {
	var b strings.Builder
	fmt.Fprintf(&b, `<!doctype html><html><head><meta charset="utf-8"><title>%s</title><style>
body{font:14px system-ui,sans-serif;margin:2em;color:#222;max-width:1000px}
pre{background:#f6f6f6;padding:1em;overflow-x:auto;font-size:12px}
h2{margin-top:2em}.clean{color:#2e7d32}.failed{color:#c62828}
</style></head><body><h1>%s</h1>
<p>%s</p>
`, html.EscapeString(title), html.EscapeString(title), intro)
	for _, r := range runs {
		cls := "clean"
		if !r.Clean {
			cls = "failed"
		}
		fmt.Fprintf(&b, "<h2>%s</h2>\n<p class=%q><b>%s</b></p>\n", html.EscapeString(r.Heading), cls, html.EscapeString(r.Verdict))
		b.WriteString(svg(r))
		fmt.Fprintf(&b, "<pre>%s</pre>\n", html.EscapeString(r.Summary))
	}
	b.WriteString("</body></html>\n")
	_, err := io.WriteString(w, b.String())
	return err
}

// svg draws one run's timeline: the load's stacked bars (when a load ran) over the host lanes.
func svg(r HTMLRun) string {
	const (
		width           = 960.0
		left, top, lane = 60.0, 20.0, 22.0
	)
	chartH := 260.0
	var span time.Duration
	var bucket time.Duration
	if r.Load != nil && len(r.Load.Series) > 0 {
		bucket = r.Load.Bucket
		span = time.Duration(len(r.Load.Series)) * bucket
	} else {
		chartH = 0
		span = r.RolloutTo
		for _, h := range r.Marks {
			for _, at := range h.Marks {
				span = max(span, at)
			}
		}
		span = max(span+span/10, time.Second)
	}
	if span <= 0 {
		return "<p>(nothing recorded)</p>\n"
	}
	plotW := width - left - 20
	x := func(d time.Duration) float64 { return left + plotW*float64(d)/float64(span) }
	peak := 1.0
	if r.Load != nil {
		for _, p := range r.Load.Series {
			total := 0
			for _, n := range p.Counts {
				total += n
			}
			peak = math.Max(peak, float64(total)/bucket.Seconds())
		}
	}
	peak = niceCeil(peak)
	y := func(rate float64) float64 { return top + chartH - chartH*rate/peak }
	height := top + chartH + 40 + lane*float64(len(r.Marks)) + 40
	var b strings.Builder
	fmt.Fprintf(&b, `<svg xmlns="http://www.w3.org/2000/svg" width="%.0f" height="%.0f" viewBox="0 0 %.0f %.0f" font-size="11" font-family="sans-serif">`+"\n",
		width, height, width, height)
	if chartH > 0 {
		for i := 0; i <= 4; i++ {
			v := peak * float64(i) / 4
			fmt.Fprintf(&b, `<line x1="%.1f" x2="%.1f" y1="%.1f" y2="%.1f" stroke="#e0e0e0"/><text x="%.1f" y="%.1f" text-anchor="end">%.0f/s</text>`+"\n",
				left, left+plotW, y(v), y(v), left-4, y(v)+4, v)
		}
	}
	step := time.Second
	for span/step > 20 {
		step *= 5
	}
	for s := time.Duration(0); s <= span; s += step {
		fmt.Fprintf(&b, `<text x="%.1f" y="%.1f" text-anchor="middle">%ds</text>`+"\n", x(s), top+chartH+14, int(s.Seconds()))
	}
	if r.RolloutTo > r.RolloutFrom {
		fmt.Fprintf(&b, `<rect x="%.1f" y="%.1f" width="%.1f" height="%.1f" fill="#fff8e1"><title>%s</title></rect>`+"\n",
			x(r.RolloutFrom), top, math.Max(1, x(r.RolloutTo)-x(r.RolloutFrom)), math.Max(chartH, 4), html.EscapeString(r.Rollout))
	}
	if chartH > 0 {
		// Stacked bars: ok at the bottom, failures on top so they catch the eye.
		bw := math.Max(1, plotW*float64(bucket)/float64(span)-1)
		for _, p := range r.Load.Series {
			base := 0.0
			for _, c := range measure.Classes {
				n := p.Counts[c]
				if n == 0 {
					continue
				}
				rate := float64(n) / bucket.Seconds()
				fmt.Fprintf(&b, `<rect x="%.1f" y="%.1f" width="%.1f" height="%.1f" fill="%s"><title>+%.2fs %s: %d</title></rect>`+"\n",
					x(p.At), y(base+rate), bw, y(base)-y(base+rate), classColour[c], p.At.Seconds(), c, n)
				base += rate
			}
		}
	}
	// Per host: vertical marks over the chart and a lane below it.
	laneTop := top + chartH + 30
	for i, h := range r.Marks {
		ly := laneTop + lane*float64(i)
		fmt.Fprintf(&b, `<text x="%.1f" y="%.1f" text-anchor="end">%s</text>`+"\n", left-4, ly+12, html.EscapeString(h.Host))
		from, ok := h.Marks[MarkDrain]
		if !ok {
			from, ok = h.Marks[MarkStopped]
		}
		if back, okBack := h.Marks[MarkBack]; ok && okBack {
			fmt.Fprintf(&b, `<rect x="%.1f" y="%.1f" width="%.1f" height="12" fill="#eceff1"/>`+"\n", x(from), ly+2, math.Max(1, x(back)-x(from)))
		}
		for _, name := range markOrder {
			at, ok := h.Marks[name]
			if !ok {
				continue
			}
			fmt.Fprintf(&b, `<line x1="%.1f" x2="%.1f" y1="%.1f" y2="%.1f" stroke="%s" stroke-width="2"><title>%s %s +%.2fs</title></line>`+"\n",
				x(at), x(at), ly, ly+16, markColour[name], html.EscapeString(h.Host), name, at.Seconds())
			if chartH > 0 && (name == MarkDrain || name == MarkLeft || name == MarkBack) {
				fmt.Fprintf(&b, `<line x1="%.1f" x2="%.1f" y1="%.1f" y2="%.1f" stroke="%s" stroke-dasharray="3,3" opacity="0.7"/>`+"\n",
					x(at), x(at), top, top+chartH, markColour[name])
			}
		}
	}
	// Legend.
	ly := laneTop + lane*float64(len(r.Marks)) + 12
	lx := left
	if chartH > 0 {
		for _, c := range measure.Classes {
			fmt.Fprintf(&b, `<rect x="%.1f" y="%.1f" width="10" height="10" fill="%s"/><text x="%.1f" y="%.1f">%s</text>`+"\n", lx, ly-9, classColour[c], lx+13, ly, c)
			lx += 13 + 7*float64(len(c)) + 12
		}
		lx, ly = left, ly+16
	}
	for _, name := range markOrder {
		fmt.Fprintf(&b, `<rect x="%.1f" y="%.1f" width="10" height="3" fill="%s"/><text x="%.1f" y="%.1f">%s</text>`+"\n", lx, ly-5, markColour[name], lx+13, ly, name)
		lx += 13 + 7*float64(len(name)) + 12
	}
	b.WriteString("</svg>\n")
	return b.String()
}

// niceCeil rounds v up to 1, 2 or 5 times a power of ten.
func niceCeil(v float64) float64 {
	p := math.Pow(10, math.Floor(math.Log10(v)))
	for _, m := range []float64{1, 2, 5, 10} {
		if m*p >= v {
			return m * p
		}
	}
	return 10 * p
}
