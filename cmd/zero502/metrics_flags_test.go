package main

import (
	"strings"
	"testing"
)

// The metrics flags refuse a bad value with exit 2, naming the flag and the rule, before
// anything starts or changes.
func TestMetricsFlagsRefuseBadValues(t *testing.T) {
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"deploy", "--version", "v2", "--metrics-textfile", "/tmp/deploy.txt"}, `--metrics-textfile: metrics textfile "/tmp/deploy.txt": must end in .prom`},
		{[]string{"edge", "forward", "--listen", "127.0.0.1:0", "--origin", "127.0.0.1:1", "--metrics", "nonsense"}, `--metrics "nonsense": must be [host]:port`},
		{[]string{"edge", "origin", "--listen", "127.0.0.1:0", "--to", "127.0.0.1:1", "--metrics", "nonsense"}, `--metrics "nonsense": must be [host]:port`},
	} {
		out, code := runCLI(t, tc.args...)
		if code != 2 || !strings.Contains(out, tc.want) {
			t.Errorf("%s: exit %d, output:\n%s\nwant exit 2 and %q", strings.Join(tc.args, " "), code, out, tc.want)
		}
	}
}
