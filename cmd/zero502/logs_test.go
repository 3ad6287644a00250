package main

import (
	"strings"
	"testing"
)

// logs with a host or service the config does not name: a bad flag, exit 2 (as its help and
// stop say), the message listing the valid names.
func TestLogsUnknownHostOrServiceIsABadFlag(t *testing.T) {
	path, _ := noneFleetIn(t, t.TempDir())
	for _, c := range []struct {
		host, service, want string
	}{
		{"nope", "web", `--host "nope": no such host in the config (hosts: host-a, host-b)`},
		{"host-a", "nope", `--service "nope": no such service in the config (services: web)`},
	} {
		out, code := runCLI(t, "logs", "--config", path, "--host", c.host, "--service", c.service)
		if code != 2 || !strings.Contains(out, c.want) {
			t.Errorf("logs --host %s --service %s: exit %d, %q; want 2 and %q", c.host, c.service, code, out, c.want)
		}
	}
}
