package mesh

import (
	"errors"
	"slices"
	"strings"
	"testing"
	"time"
)

func TestOnlyASustainedStreakCountsAsAFailure(t *testing.T) {
	for _, tc := range []struct {
		name       string
		failStreak int
		fails      int
		want       State
	}{
		{"one failed probe means nothing", 3, 1, Up},
		{"streak N-1", 3, 2, Up},
		{"streak N", 3, 3, Down},
		{"past the streak", 3, 7, Down},
		{"longer streak, N-1", 5, 4, Up},
		{"longer streak, N", 5, 5, Down},
	} {
		t.Run(tc.name, func(t *testing.T) {
			f := newFixture(t, withThresholds(func(th *Thresholds) { th.FailStreak = tc.failStreak }), "a", "b", "c", "t")
			f.healthy()
			f.probe("a", "t", false, tc.fails)
			f.probe("b", "t", false, tc.fails)
			v := f.verdict("t")
			if tc.want == Down {
				expect(t, v, Down, "unreachable from 2 of your servers", "a: ", " failed probes in a row, streak ", "quorum 2")
			} else {
				expect(t, v, Up)
				if len(v.Failing) != 0 || v.Has(Marked) {
					t.Errorf("a short run of failures left a trace: failing %v, reason %s", v.Failing, v.Reason)
				}
			}
		})
	}
}

// One bulletin is one round: FailStreak copies of a failing probe in it are refused, not a
// streak; two witnesses sending one each do not take the target Down by quorum.
func TestOneBulletinIsNotAFailureStreak(t *testing.T) {
	f := newFixture(t, DefaultThresholds(), "a", "b", "c")
	f.healthy()
	for _, w := range []string{"b", "c"} {
		b := Bulletin{Report: Report{Server: w, Healthy: true}}
		for range DefaultThresholds().FailStreak {
			b.Probes = append(b.Probes, Probe{Prober: w, Target: "a", OK: false, Err: "x"})
		}
		if err := f.e.Record(b); !errors.Is(err, errProbedTwice) {
			t.Errorf("a bulletin of %s with %d probes of a: %v, want %v", w, len(b.Probes), err, errProbedTwice)
		}
	}
	expect(t, f.verdict("a"), Up)
}

func TestUnreachableNeedsAQuorumOfWitnesses(t *testing.T) {
	for _, tc := range []struct {
		name      string
		quorum    int
		witnesses []string
		want      State
	}{
		{"one server's opinion is not a verdict", 2, []string{"a"}, Up},
		{"quorum 2 met", 2, []string{"a", "b"}, Down},
		{"quorum 3, two witnesses", 3, []string{"a", "b"}, Up},
		{"quorum 3 met", 3, []string{"a", "b", "c"}, Down},
	} {
		t.Run(tc.name, func(t *testing.T) {
			f := newFixture(t, withThresholds(func(th *Thresholds) { th.Quorum = tc.quorum }), "a", "b", "c", "d", "t")
			f.healthy()
			for _, w := range tc.witnesses {
				f.probe(w, "t", false, 3)
			}
			v := f.verdict("t")
			if !slices.Equal(v.Failing, tc.witnesses) {
				t.Errorf("failing %v, want %v", v.Failing, tc.witnesses)
			}
			if tc.want == Down {
				expect(t, v, Down, "unreachable from", "quorum")
				return
			}
			// Below quorum: the entry point is marked, nothing leaves rotation.
			expect(t, v, Up, "entry point marked, kept in rotation", "quorum")
			if !v.Has(Marked) || len(v.Marks) != len(tc.witnesses) {
				t.Errorf("marks %+v, want one per failing witness", v.Marks)
			}
		})
	}
}

func TestSilenceIsNoVerdict(t *testing.T) {
	th := DefaultThresholds()
	for _, tc := range []struct {
		name string
		// after a healthy mesh and t's quorum of failures, advance by this and keep everyone
		// but t reporting.
		reportAge time.Duration
		want      State
		says      string
	}{
		{"report exactly at the staleness window counts", th.ReportStaleAfter, Up, "up: healthy report"},
		{"report just past the window is silence", th.ReportStaleAfter + time.Millisecond, Unknown, "no data: last report"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			f := newFixture(t, th, "a", "b", "t")
			f.healthy()
			f.clk.Advance(tc.reportAge)
			v := f.verdict("t")
			expect(t, v, tc.want, tc.says)
			if tc.want == Unknown && !v.Has(NoData) {
				t.Errorf("conditions %v, want no-data", v.Conditions)
			}
		})
	}
	t.Run("never reported", func(t *testing.T) {
		f := newFixture(t, th, "a", "b")
		expect(t, f.verdict("a"), Unknown, "no data: no report received yet")
	})
	t.Run("a stale failing streak is silence, not failure", func(t *testing.T) {
		for _, age := range []time.Duration{th.ProbeStaleAfter, th.ProbeStaleAfter + time.Millisecond} {
			f := newFixture(t, th, "a", "b", "c", "t")
			f.healthy()
			f.probe("a", "t", false, 3)
			f.probe("b", "t", false, 3)
			expect(t, f.verdict("t"), Down)
			f.clk.Advance(age)
			for _, s := range f.e.Servers() {
				f.report(s, true)
			}
			v := f.verdict("t")
			if age == th.ProbeStaleAfter {
				expect(t, v, Down, "unreachable")
			} else {
				expect(t, v, Up)
				if len(v.Votes) != 0 {
					t.Errorf("stale probes still vote: %+v", v.Votes)
				}
			}
		}
	})
	t.Run("a gap in probing starts the streak afresh", func(t *testing.T) {
		for _, gap := range []time.Duration{th.ProbeStaleAfter, th.ProbeStaleAfter + time.Millisecond} {
			f := newFixture(t, th, "a", "b", "c", "t")
			f.healthy()
			f.probe("a", "t", false, 2)
			f.probe("b", "t", false, 2)
			f.clk.Advance(gap)
			for _, s := range f.e.Servers() {
				f.report(s, true)
			}
			f.probe("a", "t", false, 1)
			f.probe("b", "t", false, 1)
			want := Down
			if gap > th.ProbeStaleAfter {
				want = Up
			}
			expect(t, f.verdict("t"), want)
		}
	})
	t.Run("silent but unreachable is down: probes are data", func(t *testing.T) {
		f := newFixture(t, th, "a", "b", "t")
		f.healthy()
		f.clk.Advance(th.ReportStaleAfter + time.Second)
		f.report("a", true)
		f.report("b", true)
		f.probe("a", "t", false, 3)
		f.probe("b", "t", false, 3)
		v := f.verdict("t")
		expect(t, v, Down, "no data", "unreachable from 2")
	})
}

func TestUnreliableWitnessesAreIgnored(t *testing.T) {
	// w's other neighbours when judging t: r, o1, o2, o3.
	others := []string{"o1", "o2", "o3"}
	for _, tc := range []struct {
		name        string
		wFails      int  // how many of o1..o3 w consistently fails
		wUnhealthy  bool // w's own report says unhealthy
		othersSilly bool // the neighbours w fails report themselves unhealthy
		want        State
		says        string
	}{
		{"fails 1 of 4 other neighbours: reliable", 1, false, false, Down, "unreachable from 2"},
		{"fails 2 of 4, exactly half: unreliable", 2, false, false, Up, "ignored: w (w fails to reach 2 of 4 other neighbours"},
		{"fails 3 of 4: unreliable", 3, false, false, Up, "ignored: w"},
		{"reports itself unhealthy: unreliable", 0, true, false, Up, "w reports itself unhealthy"},
		{"the neighbours it fails say they are unhealthy: no evidence against w", 2, false, true, Down, "unreachable from 2"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			f := newFixture(t, DefaultThresholds(), append([]string{"r", "w", "t"}, others...)...)
			f.healthy()
			f.probe("r", "t", false, 3)
			f.probe("w", "t", false, 3)
			for _, o := range others[:tc.wFails] {
				f.probe("w", o, false, 3)
				if tc.othersSilly {
					f.report(o, false)
				}
			}
			if tc.wUnhealthy {
				f.report("w", false)
			}
			v := f.verdict("t")
			expect(t, v, tc.want, tc.says)
			if tc.want == Up {
				if slices.Contains(v.Failing, "w") {
					t.Errorf("an ignored vote is counted: failing %v", v.Failing)
				}
				if !v.Has(Marked) {
					t.Errorf("the failing pairs are not even marked: %v", v.Conditions)
				}
			}
		})
	}
}

func TestCheckerServers(t *testing.T) {
	t.Run("a checker's failing streak makes an ordinary server unreachable", func(t *testing.T) {
		for _, fails := range []int{2, 3} {
			f := newCheckersFixture(t, DefaultThresholds(), []string{"k"}, "k", "a", "b", "c")
			f.healthy()
			f.probe("k", "a", false, fails)
			v := f.verdict("a")
			if fails < 3 {
				expect(t, v, Up)
				continue
			}
			expect(t, v, Down, "unreachable from checker k", "consider changing its IP", "k: 3 failed probes in a row")
			if v.BlockedBy != "k" {
				t.Errorf("blocked by %q, want k", v.BlockedBy)
			}
		}
	})
	t.Run("an ordinary server not seeing a checker means nothing", func(t *testing.T) {
		f := newCheckersFixture(t, DefaultThresholds(), []string{"k"}, "k", "a", "b", "c")
		f.healthy()
		f.probe("a", "k", false, 5)
		f.probe("b", "k", false, 5)
		v := f.verdict("k")
		expect(t, v, Up)
		if len(v.Marks) != 0 || len(v.Failing) != 0 {
			t.Errorf("marks %+v failing %v, want none", v.Marks, v.Failing)
		}
	})
	t.Run("an unreliable checker is ignored too", func(t *testing.T) {
		f := newCheckersFixture(t, DefaultThresholds(), []string{"k"}, "k", "a", "b", "c")
		f.healthy()
		f.probe("k", "a", false, 3)
		f.probe("k", "b", false, 3)
		v := f.verdict("a")
		expect(t, v, Up, "entry point marked", "ignored: k (k fails to reach 1 of 2")
	})
}

// The checker role is the receiving server's configuration, never what a report claims: in a
// mesh of three, a peer whose report claims the role (any key holder can write one) cannot take
// a server down alone, nor make the others' votes about it mean nothing; a configured checker
// keeps the role even when its report does not claim it.
func TestTheCheckerRoleIsConfiguredNotClaimed(t *testing.T) {
	t.Run("a claimed role is not believed: the target is only marked", func(t *testing.T) {
		f := newFixture(t, DefaultThresholds(), "a", "b", "k")
		f.healthy()
		f.claimChecker("k")
		f.probe("k", "a", false, 5)
		v := f.verdict("a")
		expect(t, v, Up, "entry point marked", "quorum 2 not met, no checker failing it")
		if v.BlockedBy != "" || v.Checker {
			t.Errorf("a's verdict blocked by %q (checker %v); k claimed the role, nobody listed it", v.BlockedBy, v.Checker)
		}
		if k := f.verdict("k"); k.Checker {
			t.Errorf("k's verdict says checker: its claim was believed")
		}
		if r := f.e.reports["k"]; r.Checker {
			t.Errorf("k's recorded report keeps the claimed role: %+v", r)
		}
	})
	t.Run("a claimed role does not silence the others' votes", func(t *testing.T) {
		f := newFixture(t, DefaultThresholds(), "a", "b", "k")
		f.healthy()
		f.claimChecker("k")
		f.probe("a", "k", false, 3)
		f.probe("b", "k", false, 3)
		expect(t, f.verdict("k"), Down, "unreachable from 2 of your servers")
	})
	t.Run("a listed checker is one even when its report does not say so", func(t *testing.T) {
		f := newCheckersFixture(t, DefaultThresholds(), []string{"k"}, "a", "b", "k")
		f.healthy() // every report says Checker: false
		f.probe("k", "a", false, 3)
		v := f.verdict("a")
		expect(t, v, Down, "unreachable from checker k", "consider changing its IP")
		if v.BlockedBy != "k" || !f.verdict("k").Checker {
			t.Errorf("blocked by %q, k checker %v; want blocked by the listed checker k", v.BlockedBy, f.verdict("k").Checker)
		}
	})
}

func TestAFailingPairAccusesNobody(t *testing.T) {
	for _, tc := range []struct {
		name        string
		bothWays    bool
		wantAMarked bool
	}{
		{"one way: only the side not reached is marked", false, false},
		{"both ways: both sides are marked", true, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			f := newFixture(t, DefaultThresholds(), "a", "b", "c", "d")
			f.healthy()
			f.probe("a", "b", false, 3)
			if tc.bothWays {
				f.probe("b", "a", false, 3)
			}
			b := f.verdict("b")
			expect(t, b, Up, "entry point marked, kept in rotation", "a cannot reach b", "quorum 2 not met")
			if len(b.Marks) != 1 || b.Marks[0] != (mark{Witness: "a", Target: "b", Both: tc.bothWays, Fails: 3}) {
				t.Errorf("marks %+v", b.Marks)
			}
			a := f.verdict("a")
			expect(t, a, Up)
			if a.Has(Marked) != tc.wantAMarked {
				t.Errorf("a marked %v, want %v: %s", a.Has(Marked), tc.wantAMarked, a.Reason)
			}
			if tc.bothWays && !strings.Contains(a.Reason, "in both directions") {
				t.Errorf("a's reason does not say both directions: %s", a.Reason)
			}
		})
	}
}

func TestEverythingHealsByItself(t *testing.T) {
	for _, tc := range []struct {
		name       string
		healStreak int
		successes  int
		want       State
	}{
		{"no success yet", 1, 0, Down},
		{"heal streak 1: one success resets", 1, 1, Up},
		{"heal streak 2, N-1", 2, 1, Down},
		{"heal streak 2, N", 2, 2, Up},
	} {
		t.Run(tc.name, func(t *testing.T) {
			f := newFixture(t, withThresholds(func(th *Thresholds) { th.HealStreak = tc.healStreak }), "a", "b", "c", "t")
			f.healthy()
			f.probe("a", "t", false, 3)
			f.probe("b", "t", false, 3)
			expect(t, f.verdict("t"), Down)
			f.clk.Advance(time.Second)
			f.probe("a", "t", true, tc.successes)
			f.probe("b", "t", true, tc.successes)
			v := f.verdict("t")
			expect(t, v, tc.want)
			if tc.want == Down && tc.successes > 0 && !strings.Contains(v.Reason, "healing") {
				t.Errorf("a healing streak is not said: %s", v.Reason)
			}
		})
	}
	t.Run("a healthy report lifts unavailable", func(t *testing.T) {
		f := newFixture(t, DefaultThresholds(), "a", "b")
		f.healthy()
		if err := f.e.Report(Report{Server: "b", Healthy: false, Detail: "listener :443 refuses"}); err != nil {
			t.Fatal(err)
		}
		expect(t, f.verdict("b"), Down, "unavailable", "listener :443 refuses")
		f.clk.Advance(time.Second)
		f.report("b", true)
		expect(t, f.verdict("b"), Up)
	})
	t.Run("a report ends no data", func(t *testing.T) {
		f := newFixture(t, DefaultThresholds(), "a", "b")
		f.healthy()
		f.clk.Advance(time.Hour)
		expect(t, f.verdict("b"), Unknown, "no data")
		f.report("b", true)
		expect(t, f.verdict("b"), Up)
	})
}

func TestObservationsOutsideTheMeshAreRefused(t *testing.T) {
	f := newFixture(t, DefaultThresholds(), "a", "b")
	if err := f.e.Report(Report{Server: "z"}); !errors.Is(err, errUnknownServer) {
		t.Errorf("report from z: %v", err)
	}
	if err := f.e.Probe(Probe{Prober: "a", Target: "z"}); !errors.Is(err, errUnknownServer) {
		t.Errorf("probe of z: %v", err)
	}
	if err := f.e.Probe(Probe{Prober: "a", Target: "a"}); err == nil || !strings.Contains(err.Error(), "does not probe itself") {
		t.Errorf("self probe: %v", err)
	}
	now := f.clk.Now()
	if err := f.e.Probe(Probe{Prober: "a", Target: "b", At: now}); err != nil {
		t.Fatal(err)
	}
	if err := f.e.Probe(Probe{Prober: "a", Target: "b", At: now.Add(-time.Second)}); !errors.Is(err, errOutOfOrder) {
		t.Errorf("older probe: %v", err)
	}
	if err := f.e.Report(Report{Server: "a", At: now}); err != nil {
		t.Fatal(err)
	}
	if err := f.e.Report(Report{Server: "a", At: now.Add(-time.Second)}); !errors.Is(err, errOutOfOrder) {
		t.Errorf("older report: %v", err)
	}
}
