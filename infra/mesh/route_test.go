package mesh

import (
	"slices"
	"testing"
)

func TestRouteIsNeverEmpty(t *testing.T) {
	up := func(s string) Verdict { return Verdict{Server: s, State: Up, InRotation: true} }
	marked := func(s string) Verdict {
		return Verdict{Server: s, State: Up, InRotation: true, Conditions: []Condition{Marked}}
	}
	silent := func(s string) Verdict {
		return Verdict{Server: s, State: Unknown, InRotation: true, Conditions: []Condition{NoData}}
	}
	unreachable := func(s string, failing ...string) Verdict {
		return Verdict{Server: s, State: Down, Conditions: []Condition{Unreachable}, Failing: failing}
	}
	unavailable := func(s string) Verdict {
		return Verdict{Server: s, State: Down, Conditions: []Condition{Unavailable}}
	}
	for _, tc := range []struct {
		name     string
		route    []string
		verdicts []Verdict
		want     []string
		fallback bool
	}{
		{"all up, in route order", []string{"b", "a"}, []Verdict{up("a"), up("b")}, []string{"b", "a"}, false},
		{"down servers leave", []string{"a", "b", "c"}, []Verdict{up("a"), unreachable("b", "x", "y"), unavailable("c")}, []string{"a"}, false},
		{"healthy first, then marked, then silent", []string{"s", "m", "u"}, []Verdict{silent("s"), marked("m"), up("u")}, []string{"u", "m", "s"}, false},
		{"silence keeps a server in rotation", []string{"a", "b"}, []Verdict{unavailable("a"), silent("b")}, []string{"b"}, false},
		{"no verdict is silence", []string{"a", "new"}, []Verdict{unreachable("a", "x", "y")}, []string{"new"}, false},
		{"all down: only-unreachable beats unavailable", []string{"a", "b", "c"},
			[]Verdict{unavailable("a"), unreachable("b", "x", "y", "z"), unavailable("c")}, []string{"b"}, true},
		{"all down: fewer failing witnesses is better", []string{"a", "b"},
			[]Verdict{unreachable("a", "x", "y", "z"), unreachable("b", "x", "y")}, []string{"b"}, true},
		{"all down and tied: every tied server is kept", []string{"a", "b"},
			[]Verdict{unavailable("a"), unavailable("b")}, []string{"a", "b"}, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			sel := Route(tc.route, tc.verdicts)
			if !slices.Equal(sel.Servers, tc.want) || sel.Fallback != tc.fallback {
				t.Errorf("servers %v fallback %v, want %v %v (%s)", sel.Servers, sel.Fallback, tc.want, tc.fallback, sel.Reason)
			}
		})
	}
}

func TestAllTargetsFailingStillLeavesARoute(t *testing.T) {
	f := newFixture(t, DefaultThresholds(), "a", "b", "c")
	f.healthy()
	for _, s := range f.e.Servers() {
		f.report(s, false)
	}
	sel := Route(f.e.Servers(), f.e.Verdicts())
	if len(sel.Servers) == 0 || !sel.Fallback {
		t.Fatalf("route %+v, want the best of the down servers", sel)
	}
	if len(sel.Left) != 3 {
		t.Errorf("left %v, want all three", sel.Left)
	}
}
