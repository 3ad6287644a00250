package main

import (
	"strings"
	"testing"
)

// A bad value of an app flag is a bad flag: exit 2 (1 is the app's own failure, as --exit-after
// has it), the message naming the flag, the value and the rule, before anything listens.
func TestAppRefusesBadFlagValuesWithExitTwo(t *testing.T) {
	for _, c := range []struct {
		args []string
		want string
	}{
		{[]string{"--version", ""}, `--version "" must be a non-empty word`},
		{[]string{"--drain", "-1s"}, "--drain -1s is negative"},
		{[]string{"--shutdown", "-5s"}, "--shutdown -5s is negative"},
		{[]string{"--idle-timeout", "0s"}, "--idle-timeout 0s must be positive"},
		{[]string{"--fail-every", "-3"}, "--fail-every -3 is negative"},
		{[]string{"--delay", "-1s"}, "--delay -1s is negative"},
	} {
		args := append([]string{"app", "--version", "v1", "--port", "1"}, c.args...)
		out, code := runCLI(t, args...)
		if code != 2 || !strings.Contains(out, c.want) {
			t.Errorf("zero502 %s: exit %d, output %q; want exit 2 saying %q", strings.Join(args, " "), code, out, c.want)
		}
	}
}
