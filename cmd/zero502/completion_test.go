package main

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// completions asks the real completion entry point (what the shell scripts call) for the
// candidates of the last argument, and returns them with the directive line.
func completions(t *testing.T, args ...string) []string {
	t.Helper()
	out, code := runCLI(t, append([]string{"__complete"}, args...)...)
	if code != 0 {
		t.Fatalf("__complete %s: exit %d\n%s", strings.Join(args, " "), code, out)
	}
	var lines []string
	for _, l := range strings.Split(out, "\n") {
		if l != "" && !strings.HasPrefix(l, "Completion ended") {
			lines = append(lines, l)
		}
	}
	return lines
}

func TestCompletionOfFlagValues(t *testing.T) {
	dir := t.TempDir()
	cfg := filepath.Join(dir, "fleet.yaml")
	yaml := fmt.Sprintf(`
rollout: {runtime: process}
watchdog: {state_dir: %[1]s}
services:
  - {name: web, port: 19101, command: [sleep, "60"]}
  - {name: worker, command: [sleep, "60"]}
hosts:
  - {name: app-1, state_dir: %[1]s/a}
  - {name: app-2, state_dir: %[1]s/b, port_offset: 1}
`, dir)
	if err := os.WriteFile(cfg, []byte(yaml), 0o644); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"lb", "--log-format", ""}, "json text :4"},
		{[]string{"mesh", "serve", "--log-level", ""}, "debug info warn error :4"},
		{[]string{"demo", "--runtime", ""}, "process docker :4"},
		{[]string{"demo", "--service", ""}, "app python :4"},
		{[]string{"deploy", "--config", ""}, "yaml yml :8"}, // :8 filters files by extension
		{[]string{"watchdog", "--config", cfg, "--host", ""}, "app-1 app-2 :4"},
		{[]string{"watchdog", "--config", filepath.Join(dir, "missing.yaml"), "--host", ""}, ":4"},
		{[]string{"app", "--host", ""}, ":0"}, // an address, not a host of a config
	} {
		if got := strings.Join(completions(t, tc.args...), " "); got != tc.want {
			t.Errorf("complete %s: %q, want %q", strings.Join(tc.args, " "), got, tc.want)
		}
	}
}
