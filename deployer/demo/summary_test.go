package demo

import (
	"strings"
	"testing"
	"time"

	"github.com/zero502/zero502/deployer/measure"
)

func sampleResult(naive bool, failed int) *Result {
	series := []measure.Point{
		{At: 0, Counts: map[measure.Class]int{measure.OK: 100}, Versions: map[string]int{"v1": 100}},
		{At: 250 * time.Millisecond, Counts: map[measure.Class]int{measure.OK: 90, measure.C502: failed, measure.Health503: 2}, Versions: map[string]int{"v1": 50, "v2": 40}},
		{At: 500 * time.Millisecond, Counts: map[measure.Class]int{measure.OK: 100}, Versions: map[string]int{"v2": 100}},
	}
	load := &measure.Result{Rate: 400, Sent: 292 + failed, Failures: failed, Bucket: 250 * time.Millisecond, Series: series,
		Counts: map[measure.Class]int{measure.OK: 290, measure.Health503: 2, measure.C502: failed}}
	return &Result{
		Naive: naive, Took: 12 * time.Second, Load: load, DeployFrom: 100 * time.Millisecond, DeployTo: 600 * time.Millisecond,
		Marks: []HostMarks{{Host: "host-a", Duration: 2100 * time.Millisecond, Floor: 2 * time.Second, Ratio: 1.05,
			Marks: map[string]time.Duration{MarkDrain: 100 * time.Millisecond, MarkLeft: 300 * time.Millisecond, MarkBack: 600 * time.Millisecond}}},
		Versions: map[string]string{"host-a": "v2"},
	}
}

func TestSummarySaysCleanOnlyWithoutFailedRequests(t *testing.T) {
	var b strings.Builder
	WriteSummary(&b, sampleResult(false, 0))
	if out := b.String(); !strings.Contains(out, "RESULT: clean: 0 of 292") || !strings.Contains(out, "1.05×") ||
		!strings.Contains(out, "all on v2") {
		t.Fatalf("clean summary:\n%s", out)
	}
	b.Reset()
	r := sampleResult(true, 7)
	WriteSummary(&b, r)
	if out := b.String(); !strings.Contains(out, "7 of 299 requests FAILED (7 502)") || r.Clean() {
		t.Fatalf("failed summary (clean=%v):\n%s", r.Clean(), out)
	}
}

func TestCompareShowsBothRunsSideBySide(t *testing.T) {
	var b strings.Builder
	WriteCompare(&b, sampleResult(false, 0), sampleResult(true, 9))
	out := b.String()
	for _, want := range []string{"drain handshake", "naive (no drain)", "FAILED                        0                  9"} {
		if !strings.Contains(out, want) {
			t.Fatalf("compare output lacks %q:\n%s", want, out)
		}
	}
}

func TestHTMLReportIsSelfContainedWithAnSVGTimeline(t *testing.T) {
	var b strings.Builder
	if err := WriteHTML(&b, sampleResult(false, 0), sampleResult(true, 5)); err != nil {
		t.Fatal(err)
	}
	page := b.String()
	if strings.Count(page, "<svg") != 2 || !strings.Contains(page, "host-a drain +0.10s") ||
		!strings.Contains(page, "+0.25s 502: 5") {
		t.Fatalf("report lacks the timelines, the marks or the failures:\n%s", page)
	}
	if strings.Contains(page, "<script") || strings.Contains(page, "src=") || strings.Contains(page, "href=") {
		t.Fatal("report must be self-contained: no scripts or external resources")
	}
}
