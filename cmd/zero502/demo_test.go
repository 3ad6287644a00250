package main

import (
	"errors"
	"strings"
	"testing"

	"github.com/zero502/zero502/deployer/demo"
	"github.com/zero502/zero502/deployer/measure"
)

// --bad-version is a mode of its own: with another mode, or off the embedded default, the
// demo refuses at once with exit 2 and names both flags.
func TestDemoBadVersionRefusesTheOtherModes(t *testing.T) {
	for _, c := range []struct {
		args []string
		want string
	}{
		{[]string{"--naive"}, "--bad-version and --naive: pick one"},
		{[]string{"--compare"}, "--bad-version and --compare: pick one"},
		{[]string{"--traffic-layer"}, "--bad-version and --traffic-layer: pick one"},
		{[]string{"--service", "python"}, "--bad-version runs the embedded default"},
		{[]string{"--runtime", "docker"}, "--bad-version runs the embedded default"},
	} {
		args := append([]string{"demo", "--bad-version"}, c.args...)
		out, code := runCLI(t, args...)
		if code != 2 || !strings.Contains(out, c.want) {
			t.Errorf("zero502 %s: exit %d, output %q; want exit 2 naming %q", strings.Join(args, " "), code, out, c.want)
		}
	}
}

// demo --traffic-layer exits 1 when requests failed, --naive too (as demo --naive), and 0 only
// for a clean run: a naive run that lost requests used to exit 0.
func TestDemoTrafficLayerExitsOneWhenRequestsFailed(t *testing.T) {
	clean := &demo.TrafficResult{Load: &measure.Result{Sent: 1407}, Versions: map[string]string{"host-a": demo.To}}
	failed := &demo.TrafficResult{Naive: true, Load: &measure.Result{Sent: 1407, Failures: 15}, Versions: map[string]string{"host-a": demo.To}}
	lost := &demo.TrafficResult{Naive: true, Load: &measure.Result{Sent: 1407, Sessions: &measure.SessionStats{Lost: 1}}, Versions: map[string]string{"host-a": demo.To}}
	stuck := &demo.TrafficResult{Load: &measure.Result{Sent: 1407}, Versions: map[string]string{"host-a": demo.From}}
	for _, c := range []struct {
		name string
		r    *demo.TrafficResult
		err  error
		want int
	}{
		{"clean", clean, nil, 0},
		{"naive with failed requests", failed, nil, 1},
		{"naive with a lost session", lost, nil, 1},
		{"a tier left on the old version", stuck, nil, 1},
		{"could not run", nil, errors.New("no port"), 1},
	} {
		code := 0
		var ex *exitError
		if err := trafficExit(c.r, c.err); errors.As(err, &ex) {
			code = ex.code
		} else if err != nil {
			code = -1
		}
		if code != c.want {
			t.Errorf("%s: exit %d, want %d", c.name, code, c.want)
		}
	}
}
