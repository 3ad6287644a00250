package edge

import (
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/zero502/zero502/infra/config"
)

// With --config, the config's edge section is the flags' defaults: every setting whose flag was
// not given takes the config's value, a given flag keeps its own, and a config without an edge
// layer is refused unless --drain is given.
func TestForwarderApplyConfigTakesTheConfigUnderTheFlagsGiven(t *testing.T) {
	e := config.Edge{Drain: 30 * time.Second, Origins: []string{"10.0.0.5:443", "10.0.0.6:443"},
		UpstreamCheck: config.EdgeUpstreamCheck{Path: "/_lb/health", Interval: 3 * time.Second, Timeout: 2 * time.Second,
			HealthyThreshold: 4, UnhealthyThreshold: 5}}
	flags := func() *Forwarder {
		return &Forwarder{Listen: ":443", Drain: 7 * time.Second, Origins: []string{"10.9.9.9:443"},
			Check: UpstreamCheck{Path: "/flag", Interval: time.Second, Timeout: 500 * time.Millisecond, HealthyThreshold: 1, UnhealthyThreshold: 1}}
	}
	given := func(names ...string) func(string) bool {
		return func(flag string) bool {
			for _, n := range names {
				if n == flag {
					return true
				}
			}
			return false
		}
	}

	f := flags()
	if err := f.ApplyConfig(e, given()); err != nil {
		t.Fatal(err)
	}
	want := &Forwarder{Listen: ":443", Drain: e.Drain, Origins: e.Origins, Check: UpstreamCheck{Path: "/_lb/health",
		Interval: 3 * time.Second, Timeout: 2 * time.Second, HealthyThreshold: 4, UnhealthyThreshold: 5}}
	if f.Listen != want.Listen || f.Drain != want.Drain || !reflect.DeepEqual(f.Origins, want.Origins) || f.Check != want.Check {
		t.Errorf("no flag given: %+v %v %+v, want the config's %+v %v %+v", f.Drain, f.Origins, f.Check, want.Drain, want.Origins, want.Check)
	}

	all := []string{"drain", "origin", "check-path", "check-interval", "check-timeout", "healthy-threshold", "unhealthy-threshold"}
	f = flags()
	if err := f.ApplyConfig(e, given(all...)); err != nil {
		t.Fatal(err)
	}
	if g := flags(); f.Drain != g.Drain || !reflect.DeepEqual(f.Origins, g.Origins) || f.Check != g.Check {
		t.Errorf("every flag given: %v %v %+v, want the flags' %v %v %+v", f.Drain, f.Origins, f.Check, g.Drain, g.Origins, g.Check)
	}

	f = flags()
	if err := f.ApplyConfig(e, given("check-interval", "origin")); err != nil {
		t.Fatal(err)
	}
	if f.Check.Interval != time.Second || f.Origins[0] != "10.9.9.9:443" || f.Check.Timeout != 2*time.Second || f.Drain != e.Drain {
		t.Errorf("--check-interval and --origin given: %v %v %+v, want those two the flags', the rest the config's", f.Drain, f.Origins, f.Check)
	}

	noEdge := config.Edge{Origins: e.Origins}
	if err := flags().ApplyConfig(noEdge, given()); err == nil || !strings.Contains(err.Error(), "edge.drain is 0s, which means no edge layer") ||
		!strings.Contains(err.Error(), "or pass --drain") {
		t.Errorf("no edge layer, no --drain: %v, want the edge.drain error", err)
	}
	f = flags()
	if err := f.ApplyConfig(noEdge, given("drain")); err != nil || f.Drain != 7*time.Second {
		t.Errorf("no edge layer, --drain 7s: %v, drain %s; want no error and 7s", err, f.Drain)
	}
}
