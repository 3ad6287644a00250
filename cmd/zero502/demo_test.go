package main

import (
	"strings"
	"testing"
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
