package demo

import (
	"errors"
	"strings"
	"testing"

	"github.com/zero502/zero502/deployer/measure"
)

// The mode matrix of `zero502 demo`: which flags go together, refused naming them, before
// anything runs (Validate runs no demo).
func TestModeValidateNamesTheFlagsThatDoNotGoTogether(t *testing.T) {
	base := Mode{Rate: DefaultRate, Runtime: RuntimeProcess, Service: ServiceApp}
	for _, c := range []struct {
		name string
		edit func(*Mode)
		want string // "" when valid
	}{
		{"the handshake run", func(*Mode) {}, ""},
		{"naive", func(m *Mode) { m.Naive = true }, ""},
		{"compare with a report", func(m *Mode) { m.Compare, m.Report = true, "demo.html" }, ""},
		{"docker with an image", func(m *Mode) { m.Runtime, m.Image, m.ImageSet = RuntimeDocker, "zero502/app:dev", true }, ""},
		{"python at its own rate", func(m *Mode) { m.Service = ServicePython }, ""},
		{"traffic layer, naive", func(m *Mode) { m.TrafficLayer, m.Naive = true, true }, ""},
		{"bad version with a rate", func(m *Mode) { m.BadVersion, m.Rate, m.RateSet, m.Keep = true, 100, true, true }, ""},
		{"bad version and naive", func(m *Mode) { m.BadVersion, m.Naive = true, true }, "--bad-version and --naive: pick one"},
		{"bad version and compare", func(m *Mode) { m.BadVersion, m.Compare = true, true }, "--bad-version and --compare: pick one"},
		{"bad version and traffic layer", func(m *Mode) { m.BadVersion, m.TrafficLayer = true, true }, "--bad-version and --traffic-layer: pick one"},
		{"bad version on docker", func(m *Mode) { m.BadVersion, m.Runtime = true, RuntimeDocker }, "--bad-version runs the embedded default"},
		{"bad version with python", func(m *Mode) { m.BadVersion, m.Service = true, ServicePython }, "--bad-version runs the embedded default"},
		{"bad version with a report", func(m *Mode) { m.BadVersion, m.Report = true, "r.html" }, "--bad-version runs the embedded default"},
		{"naive and compare", func(m *Mode) { m.Naive, m.Compare = true, true }, "--naive and --compare: pick one"},
		{"an unknown runtime", func(m *Mode) { m.Runtime = "vm" }, `--runtime "vm": must be process or docker`},
		{"an image without docker", func(m *Mode) { m.ImageSet = true }, "--image and --docker-host apply to --runtime docker only"},
		{"a docker host without docker", func(m *Mode) { m.DockerHost = "unix:///d.sock" }, "--image and --docker-host apply to --runtime docker only"},
		{"no load", func(m *Mode) { m.Rate = 0 }, "--rate 0: must be from 1 to 100000 requests per second"},
		{"traffic layer and compare", func(m *Mode) { m.TrafficLayer, m.Compare = true, true }, "--traffic-layer runs the process runtime and zero502 app alone"},
		{"traffic layer on docker", func(m *Mode) { m.TrafficLayer, m.Runtime = true, RuntimeDocker }, "--traffic-layer runs the process runtime"},
		{"traffic layer with python", func(m *Mode) { m.TrafficLayer, m.Service = true, ServicePython }, "--traffic-layer runs the process runtime"},
		{"traffic layer with a report", func(m *Mode) { m.TrafficLayer, m.Report = true, "r.html" }, "--traffic-layer runs the process runtime"},
		{"an unknown service", func(m *Mode) { m.Service = "nginx" }, `--service "nginx": must be app or python`},
		{"python on docker", func(m *Mode) { m.Service, m.Runtime = ServicePython, RuntimeDocker }, "--service python runs with --runtime process only"},
	} {
		m := base
		c.edit(&m)
		err := m.Validate()
		switch {
		case c.want == "" && err != nil:
			t.Errorf("%s: %v, want valid", c.name, err)
		case c.want != "" && (err == nil || !strings.Contains(err.Error(), c.want)):
			t.Errorf("%s: %v, want an error with %q", c.name, err, c.want)
		}
	}
}

// demo --traffic-layer fails (exit 1) when requests failed, --naive too (as demo --naive), and
// passes only a clean run: a naive run that lost requests used to exit 0.
func TestDemoTrafficLayerExitsOneWhenRequestsFailed(t *testing.T) {
	clean := &trafficResult{Load: &measure.Result{Sent: 1407}, Versions: map[string]string{"host-a": To}}
	failed := &trafficResult{Naive: true, Load: &measure.Result{Sent: 1407, Failures: 15}, Versions: map[string]string{"host-a": To}}
	lost := &trafficResult{Naive: true, Load: &measure.Result{Sent: 1407, Sessions: &measure.SessionStats{Lost: 1}}, Versions: map[string]string{"host-a": To}}
	stuck := &trafficResult{Load: &measure.Result{Sent: 1407}, Versions: map[string]string{"host-a": From}}
	for _, c := range []struct {
		name string
		r    *trafficResult
		err  error
		want int
	}{
		{"clean", clean, nil, 0},
		{"naive with failed requests", failed, nil, 1},
		{"naive with a lost session", lost, nil, 1},
		{"a tier left on the old version", stuck, nil, 1},
		{"could not run", nil, errors.New("no port"), 1},
	} {
		o := &Outcome{Mode: Mode{TrafficLayer: true, Naive: c.r != nil && c.r.Naive}, Traffic: c.r, Err: c.err}
		code := 0
		if failed, _ := o.Failure(); failed {
			code = 1
		}
		if code != c.want {
			t.Errorf("%s: exit %d, want %d", c.name, code, c.want)
		}
	}
}

// The handshake run passes when it was clean; --compare when the handshake run was clean and
// the naive run's failures were seen; --bad-version when the canary stopped it, saying why not.
func TestOutcomeFailureIsTheDemosPassRule(t *testing.T) {
	clean := &Result{Load: &measure.Result{Sent: 100}, Versions: map[string]string{"host-a": To}}
	failed := &Result{Naive: true, Load: &measure.Result{Sent: 100, Failures: 3}, Versions: map[string]string{"host-a": To}}
	for _, c := range []struct {
		name    string
		o       Outcome
		failed  bool
		message string
	}{
		{"clean", Outcome{Runs: []*Result{clean}}, false, ""},
		{"naive with failed requests", Outcome{Mode: Mode{Naive: true}, Runs: []*Result{failed}}, true, ""},
		{"compare: clean, then failures seen", Outcome{Mode: Mode{Compare: true}, Runs: []*Result{clean, failed}}, false, ""},
		{"compare: the naive run saw nothing", Outcome{Mode: Mode{Compare: true}, Runs: []*Result{clean, clean}}, true, ""},
		{"compare stopped after one run", Outcome{Mode: Mode{Compare: true}, Runs: []*Result{clean}, Err: errors.New("no port")}, true, "no port"},
		{"bad version stopped", Outcome{Mode: Mode{BadVersion: true}, Bad: &badResult{Stopped: true}}, false, ""},
		{"bad version went through", Outcome{Mode: Mode{BadVersion: true}, Bad: &badResult{Why: "the deploy went through"}}, true, "--bad-version: the deploy went through"},
	} {
		failed, err := c.o.Failure()
		msg := ""
		if err != nil {
			msg = err.Error()
		}
		if failed != c.failed || msg != c.message {
			t.Errorf("%s: failed %v (%q), want %v (%q)", c.name, failed, msg, c.failed, c.message)
		}
	}
}
