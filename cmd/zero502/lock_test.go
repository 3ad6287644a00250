package main

import (
	"bytes"
	"os"
	"strings"
	"testing"
)

// lock acquire without a message (none, or blank): a bad flag, exit 2 naming -m/--message,
// before anything is read or locked; nothing on stdout, with --json neither.
func TestLockAcquireWithoutMessageIsABadFlag(t *testing.T) {
	path, cfg := noneFleetIn(t, t.TempDir())
	for _, args := range [][]string{
		{"lock", "acquire", "--config", path},
		{"lock", "acquire", "--config", path, "--json"},
		{"lock", "acquire", "--config", path, "-m", "  "},
	} {
		var stdout, stderr bytes.Buffer
		code, err := execute(nil, &stdout, &stderr, args...)
		if code != 2 || err == nil || !strings.Contains(err.Error(), "-m/--message") {
			t.Errorf("%s: exit %d, error %v; want 2 naming -m/--message", strings.Join(args, " "), code, err)
		}
		if stdout.Len() > 0 {
			t.Errorf("%s: printed on stdout: %q", strings.Join(args, " "), stdout.String())
		}
	}
	if _, err := os.Stat(cfg.FleetLockPath()); err == nil {
		t.Errorf("lock acquire without a message touched the fleet lock %s", cfg.FleetLockPath())
	}
}
