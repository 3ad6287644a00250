package main

import (
	"context"
	"errors"
	"os/exec"
	"strings"
	"testing"
	"time"
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

// A --rate the load cannot send is a bad flag in every mode: refused with exit 2, naming the
// flag, the value and the rule, before an LB or a host is started (not exit 1 once v1 is up).
// The real binary runs: a demo that got going would start the LB as `zero502 lb`.
func TestDemoRefusesARateTheLoadCannotSendBeforeStartingAnything(t *testing.T) {
	bin := buildZero502(t)
	for _, mode := range [][]string{nil, {"--traffic-layer"}, {"--bad-version"}} {
		args := append([]string{"demo", "--rate", "200000"}, mode...)
		ctx, cancel := context.WithTimeout(context.Background(), time.Minute) // a bound on a hang, not a timing claim
		out, err := exec.CommandContext(ctx, bin, args...).CombinedOutput()
		cancel()
		code := 0
		if ee := (*exec.ExitError)(nil); errors.As(err, &ee) {
			code = ee.ExitCode()
		} else if err != nil {
			t.Fatalf("zero502 %s: %v", strings.Join(args, " "), err)
		}
		if code != 2 || !strings.Contains(string(out), "--rate 200000: must be from 1 to 100000") || strings.Contains(string(out), "LB on") {
			t.Errorf("zero502 %s: exit %d, output %q; want exit 2 naming --rate, its value and the rule, nothing started",
				strings.Join(args, " "), code, out)
		}
	}
}
