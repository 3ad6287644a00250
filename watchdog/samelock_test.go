package watchdog_test

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"testing"

	"github.com/zero502/zero502/infra/config"
	"github.com/zero502/zero502/infra/spec"
	"github.com/zero502/zero502/watchdog"
)

// A spec published under another name of the watchdog's own lock (a link, /var/run and /run) is
// not a second lock: the tick flocked the one file twice, its second flock conflicted with its
// first, and every tick was skipped as "the host lock is held", by the watchdog itself.
func TestTwoNamesOfOneLockDoNotSkipEveryTick(t *testing.T) {
	state, locks := t.TempDir(), t.TempDir()
	link := filepath.Join(t.TempDir(), "run")
	if err := os.Symlink(locks, link); err != nil {
		t.Fatal(err)
	}
	cfg, err := config.LoadBytes(fmt.Appendf(nil, `
rollout: {runtime: process}
watchdog: {state_dir: %s, lock_path: %s/h1.lock}
services: [{name: worker, command: [/bin/true]}]
hosts: [{name: h1, address: 127.0.0.1}]
`, state, locks), "config")
	if err != nil {
		t.Fatal(err)
	}
	h := cfg.Hosts[0]
	published := spec.Render(cfg, h, "v1", "")
	published.LockPath = filepath.Join(link, "h1.lock") // the deployer's config names it through the link
	if err := spec.Publish(spec.Path(cfg.HostStateDir(h)), published); err != nil {
		t.Fatal(err)
	}
	w, err := watchdog.New(cfg, h, watchdog.Options{Runtime: &recordingRuntime{}})
	if err != nil {
		t.Fatal(err)
	}
	rep, err := w.Tick(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	if rep.Skipped {
		t.Fatalf("no one holds the lock, yet the tick was skipped, held by %q: the watchdog locked one file under two names "+
			"and conflicts with itself on every tick", rep.HeldBy)
	}
}
