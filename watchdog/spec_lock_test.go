package watchdog_test

import (
	"context"
	"fmt"
	"path/filepath"
	"testing"

	"github.com/zero502/zero502/infra/config"
	"github.com/zero502/zero502/infra/hostlock"
	"github.com/zero502/zero502/infra/spec"
	"github.com/zero502/zero502/watchdog"
)

// The watchdog reads the server's copy of the config; a deploy sends its own. When they name the
// host's lock differently (the deployer's gained hosts[].lock_path, the server's did not), the
// watchdog still never acts while the deploy holds its lock: the spec records the lock its
// publisher held, and the watchdog takes that one too.
func TestTheWatchdogTakesTheLockTheSpecWasPublishedUnder(t *testing.T) {
	state, locks := t.TempDir(), t.TempDir()
	load := func(hostLock string) *config.Config {
		t.Helper()
		cfg, err := config.LoadBytes(fmt.Appendf(nil, `
rollout: {runtime: process}
watchdog: {state_dir: %[1]s, lock_path: %[2]s/default.lock}
services: [{name: worker, command: [/bin/true]}]
hosts: [{name: h1, address: 127.0.0.1%[3]s}]
`, state, locks, hostLock), "config")
		if err != nil {
			t.Fatal(err)
		}
		return cfg
	}
	deployers := load(", lock_path: " + filepath.Join(locks, "h1.lock"))
	servers := load("")
	h := deployers.Hosts[0]
	published := spec.Render(deployers, h, "v2", "")
	published.LockPath = deployers.HostLockPath(h) // as the deployer publishes it
	if err := spec.Publish(spec.Path(deployers.HostStateDir(h)), published); err != nil {
		t.Fatal(err)
	}
	held, err := hostlock.TryAcquire(deployers.HostLockPath(h), hostlock.Holder{Who: "deployer", Command: "zero502 deploy"})
	if err != nil {
		t.Fatal(err)
	}
	rt := &recordingRuntime{}
	w, err := watchdog.New(servers, servers.Hosts[0], watchdog.Options{Runtime: rt})
	if err != nil {
		t.Fatal(err)
	}
	rep, err := w.Tick(context.Background())
	if err != nil || !rep.Skipped || len(rt.actions()) > 0 {
		t.Fatalf("tick while the deploy holds the spec's lock %s (the watchdog's config names %s): skipped %v, did %v, err %v; want skipped",
			deployers.HostLockPath(h), servers.HostLockPath(servers.Hosts[0]), rep.Skipped, rt.actions(), err)
	}
	if err := held.Release(); err != nil {
		t.Fatal(err)
	}
	if rep, err := w.Tick(context.Background()); err != nil || rep.Skipped {
		t.Fatalf("tick once the deploy released its lock: skipped %v, err %v; want it to watch", rep.Skipped, err)
	}
}
