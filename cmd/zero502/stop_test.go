package main

import (
	"strings"
	"testing"

	"github.com/zero502/zero502/infra/spec"
)

// zero502 stop takes the fleet lock as a deploy does: with a deploy holding it, --lock-timeout 0
// refuses at once (exit 2, naming the holder and the lock, no spec touched); a maintenance lock
// refuses it too, naming who and why; once lifted, stop runs.
func TestStopRefusedByTheFleetLockAndTheMaintenanceLock(t *testing.T) {
	dir := t.TempDir()
	path, cfg := localConfigIn(t, dir)
	h := cfg.Hosts[len(cfg.Hosts)-1]
	published := func() bool {
		_, err := spec.Read(spec.Path(cfg.HostStateDir(h)))
		return err == nil
	}
	held, out, code := whileFleetLockHeld(t, cfg, "zero502 deploy --version v2", "stop", "--config", path, "--host", h.Name, "--lock-timeout", "0")
	if code != 2 || !strings.Contains(out, "stop refused before anything changed: another deploy of this fleet is running") ||
		!strings.Contains(out, "ops@test") || !strings.Contains(out, cfg.FleetLockPath()) || published() {
		t.Fatalf("stop --lock-timeout 0 with the fleet lock held: exit %d, spec published %v; want 2 naming the holder and the lock, nothing published\n%s",
			code, published(), out)
	}
	if err := held.Release(); err != nil {
		t.Fatal(err)
	}

	if out, code := runCLI(t, "lock", "acquire", "--config", path, "-m", "DB migration"); code != 0 {
		t.Fatalf("lock acquire: exit %d\n%s", code, out)
	}
	out, code = runCLI(t, "stop", "--config", path, "--host", h.Name, "--lock-timeout", "0")
	if code != 2 || !strings.Contains(out, "locked for maintenance") || !strings.Contains(out, `"DB migration"`) || published() {
		t.Fatalf("stop during the maintenance lock: exit %d, spec published %v; want 2 naming it, nothing published\n%s", code, published(), out)
	}
	if out, code := runCLI(t, "lock", "release", "--config", path); code != 0 {
		t.Fatalf("lock release: exit %d\n%s", code, out)
	}
	out, code = runCLI(t, "stop", "--config", path, "--host", h.Name)
	if code != 0 || !strings.Contains(out, "spec marks") || !published() {
		t.Fatalf("stop after lock release: exit %d, spec published %v; want 0 and the spec marking the services stopped\n%s", code, published(), out)
	}
}
