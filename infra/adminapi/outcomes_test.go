package adminapi

import (
	"errors"
	"testing"
	"time"
)

var testBounds = []float64{.001, .01, .1, 1}

func snapshot(addr string, answered, serverErrors, health uint64, f Failures, own LBAnswers, counts ...uint64) BackendStatus {
	return BackendStatus{Address: addr, Outcomes: Outcomes{
		Answered: answered, ServerErrors: serverErrors, HealthUnavailable: health, Failures: f, LBAnswers: own,
		Latency: Histogram{Bounds: testBounds, Counts: counts},
	}}
}

func TestWindowIsTheDiffOfTwoSnapshots(t *testing.T) {
	before := snapshot("10.0.0.1:80", 100, 1, 5, Failures{Connect: 1}, LBAnswers{}, 90, 10, 0, 0, 0)
	// in the window: 200 answers (4 of them 5xx, 3 health 503s), a reset and a timeout (the
	// latter answered 504), latency: 100 under 1ms, 97 under 10ms, 3 under 100ms
	after := snapshot("10.0.0.1:80", 300, 5, 8, Failures{Connect: 1, Reset: 1, Timeout: 1}, LBAnswers{GatewayTimeout: 1}, 190, 107, 3, 0, 0)
	w, err := Window(before, after)
	if err != nil {
		t.Fatal(err)
	}
	if w.Requests != 202 || w.Errors != 6 || w.ServerErrors != 4 || w.HealthUnavailable != 3 {
		t.Fatalf("window %+v, want 202 requests, 6 errors (4 5xx + 2 failures), 3 health 503s apart", w)
	}
	if want := 6.0 / 202; w.ErrorRate != want {
		t.Errorf("error rate %v, want %v", w.ErrorRate, want)
	}
	if w.Failures != (Failures{Reset: 1, Timeout: 1}) || w.LBAnswers != (LBAnswers{GatewayTimeout: 1}) {
		t.Errorf("failures %+v lb answers %+v", w.Failures, w.LBAnswers)
	}
	// 200 observations: the 50th percentile is the 100th, the end of the first bucket; the
	// 99th is the 198th: the first of the third bucket's 3 (10ms..100ms), 1/3 of the way
	if w.P50 != time.Millisecond {
		t.Errorf("p50 %v, want 1ms", w.P50)
	}
	if want := 10*time.Millisecond + 30*time.Millisecond; w.P99 != want {
		t.Errorf("p99 %v, want %v", w.P99, want)
	}
}

func TestWindowP99OfASlowTargetIsInItsBucket(t *testing.T) {
	before := snapshot("a", 0, 0, 0, Failures{}, LBAnswers{}, 0, 0, 0, 0, 0)
	after := snapshot("a", 100, 0, 0, Failures{}, LBAnswers{}, 0, 0, 100, 0, 0)
	w, err := Window(before, after)
	if err != nil {
		t.Fatal(err)
	}
	if w.P99 <= 10*time.Millisecond || w.P99 > 100*time.Millisecond || w.ErrorRate != 0 {
		t.Fatalf("every answer in (10ms, 100ms]: p99 %v error rate %v", w.P99, w.ErrorRate)
	}
	// above the last bound: reported as the last bound, the least the truth is
	after = snapshot("a", 100, 0, 0, Failures{}, LBAnswers{}, 0, 0, 0, 0, 100)
	if w, _ = Window(before, after); w.P99 != time.Second || !w.Latency.Beyond(0.99) {
		t.Fatalf("every answer above 1s: p99 %v (beyond the last bound: %v), want 1s and beyond", w.P99, w.Latency.Beyond(0.99))
	}
	// 98 in (10ms, 100ms], 2 above: the p99 is beyond the last bound, the p50 is not
	after = snapshot("a", 100, 0, 0, Failures{}, LBAnswers{}, 0, 0, 98, 0, 2)
	if w, _ = Window(before, after); !w.Latency.Beyond(0.99) || w.Latency.Beyond(0.5) {
		t.Fatalf("2 of 100 above the last bound: beyond at p99 %v, at p50 %v; want true, false", w.Latency.Beyond(0.99), w.Latency.Beyond(0.5))
	}
	after = snapshot("a", 100, 0, 0, Failures{}, LBAnswers{}, 0, 0, 100, 0, 0)
	if w, _ = Window(before, after); w.Latency.Beyond(0.99) {
		t.Fatal("every answer in (10ms, 100ms]: p99 said beyond the last bound")
	}
}

func TestWindowOfNoRequestsHasNoErrorRate(t *testing.T) {
	s := snapshot("a", 7, 1, 0, Failures{Reset: 1}, LBAnswers{}, 7, 0, 0, 0, 0)
	w, err := Window(s, s)
	if err != nil || w.Requests != 0 || w.ErrorRate != 0 || w.P99 != 0 {
		t.Fatalf("empty window: %+v %v", w, err)
	}
}

func TestWindowRefusesSnapshotsOfDifferentRuns(t *testing.T) {
	a := snapshot("a", 10, 0, 0, Failures{}, LBAnswers{}, 10, 0, 0, 0, 0)
	for name, after := range map[string]BackendStatus{
		"another target":     snapshot("b", 20, 0, 0, Failures{}, LBAnswers{}, 20, 0, 0, 0, 0),
		"counters restarted": snapshot("a", 3, 0, 0, Failures{}, LBAnswers{}, 3, 0, 0, 0, 0),
		"other buckets":      {Address: "a", Outcomes: Outcomes{Answered: 20, Latency: Histogram{Bounds: []float64{1}, Counts: []uint64{20, 0}}}},
	} {
		if _, err := Window(a, after); !errors.Is(err, ErrNotOneWindow) {
			t.Errorf("%s: %v, want ErrNotOneWindow", name, err)
		}
	}
	// A restart whose counters since already exceed the ones before it: only the start tells.
	began := time.Date(2026, 12, 7, 1, 0, 0, 0, time.UTC)
	a.Outcomes.CountingSince = began
	for name, after := range map[string]BackendStatus{
		"restarted, every counter up":  snapshotSince(began.Add(time.Minute), "a", 30, 30),
		"restarted in the same second": snapshotSince(began.Add(time.Nanosecond), "a", 30, 30),
	} {
		if _, err := Window(a, after); !errors.Is(err, ErrNotOneWindow) {
			t.Errorf("%s: %v, want ErrNotOneWindow", name, err)
		}
	}
}

// snapshotSince is a snapshot of addr counting since since: answered answers, errs of them 5xx.
func snapshotSince(since time.Time, addr string, answered, errs uint64) BackendStatus {
	st := snapshot(addr, answered, errs, 0, Failures{}, LBAnswers{}, answered, 0, 0, 0, 0)
	st.Outcomes.CountingSince = since
	return st
}

// Snapshots of one run (the same start, or one side from an LB that predates it) are diffed.
func TestWindowOfOneRunAcrossItsStart(t *testing.T) {
	began := time.Date(2026, 12, 7, 1, 0, 0, 0, time.UTC)
	before, after := snapshotSince(began, "a", 10, 0), snapshotSince(began, "a", 30, 5)
	older := before
	older.Outcomes.CountingSince = time.Time{}
	for name, b := range map[string]BackendStatus{"same start": before, "before from an older LB": older} {
		w, err := Window(b, after)
		if err != nil || w.Requests != 20 || w.Errors != 5 {
			t.Errorf("%s: window %+v, %v; want 20 requests, 5 errors", name, w, err)
		}
	}
}
