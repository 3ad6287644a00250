package main

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// Every long-running command takes --log-level, and refuses a level it does not know with exit
// 2, naming the flag, the value and the choices, before it starts anything.
func TestLongRunningCommandsRefuseAnUnknownLogLevel(t *testing.T) {
	for _, args := range [][]string{
		{"lb", "0", "127.0.0.1:1"},
		{"app", "--version", "v1", "--port", "1"},
		{"edge", "forward", "--listen", "127.0.0.1:0", "--origin", "127.0.0.1:1"},
		{"edge", "origin", "--listen", "127.0.0.1:0", "--to", "127.0.0.1:1"},
		{"mesh", "serve", "--name", "a", "--listen", "127.0.0.1:0", "--peers", "b=127.0.0.1:1,c=127.0.0.1:2"},
		{"watchdog", "--config", "does-not-matter.yaml"},
		{"agent", "--addrs", "127.0.0.1:1", "--server-name", "localhost", "--state", "does-not-matter.json"},
		{"agent-server", "--listen", "127.0.0.1:0", "--cert", "does-not-matter.pem", "--key", "does-not-matter.pem", "--no-client-cert"},
		{"edgepick", "survey", "--name", "127.0.0.1:1", "--insecure-skip-verify", "--rounds", "1"},
		{"mesh", "lb-sync", "--from", "http://127.0.0.1:1", "--admin", "http://127.0.0.1:2", "--once"},
	} {
		out, code := runCLI(t, append(args, "--log-level", "loud")...)
		if code != 2 || !strings.Contains(out, `--log-level "loud": must be one of [debug info warn error]`) {
			t.Errorf("%s --log-level loud: exit %d, output:\n%s\nwant exit 2 naming the flag, the value and the levels",
				strings.Join(args, " "), code, out)
		}
	}
}

// --log-level warn drops the info lines: a watchdog tick on a host with nothing published logs
// that at info, and nothing at warn (its report on stdout stays).
func TestLogLevelWarnDropsInfoLines(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "zero502.yaml")
	yaml := fmt.Sprintf(`
rollout: {runtime: process}
watchdog: {state_dir: %[1]s}
services:
  - {name: worker, command: [sleep, "60"]}
hosts:
  - {name: h1, state_dir: %[1]s}
`, dir)
	if err := os.WriteFile(path, []byte(yaml), 0o644); err != nil {
		t.Fatal(err)
	}
	const line = `"level":"INFO","msg":"no published spec yet`
	if out, code := runCLI(t, "watchdog", "--config", path, "--host", "h1"); code != 0 || !strings.Contains(out, line) {
		t.Fatalf("watchdog at the default level: exit %d, output:\n%s\nwant the info line %q", code, out, line)
	}
	if out, code := runCLI(t, "watchdog", "--config", path, "--host", "h1", "--log-level", "warn"); code != 0 || strings.Contains(out, line) {
		t.Fatalf("watchdog --log-level warn: exit %d, output:\n%s\nwant no info line", code, out)
	}
}
