//go:build linux

package watchdog_test

import (
	"fmt"
	"os"
	"strconv"
	"strings"
	"testing"

	"github.com/zero502/zero502/infra/config"
	"github.com/zero502/zero502/infra/runtime/process"
	"github.com/zero502/zero502/internal/testrig/osuser"
)

// A heal starts the service as the user the spec records (services[].user), although the
// watchdog runs as root: a service a deploy started as its user never comes back as root.
func TestAHealStartsTheServiceAsItsUserNotAsTheWatchdogs(t *testing.T) {
	u := osuser.Ensure(t, osuser.Service)
	dir := t.TempDir()
	cfg, err := config.LoadBytes([]byte(fmt.Sprintf(`
rollout: {runtime: process}
watchdog: {interval: 1s, heal_after: 4, check_timeout: 500ms, state_dir: %[1]s}
drain: {window: 1500ms, shutdown: 1s, stop_grace: 4s, max_recovery: 2s}
services:
  - {name: worker, command: [sleep, "600"], user: %[2]s}
hosts:
  - {name: h1, address: 127.0.0.1, state_dir: %[1]s}
`, dir, osuser.Service)), "test config")
	if err != nil {
		t.Fatal(err)
	}
	rt, err := process.New(dir)
	if err != nil {
		t.Fatal(err)
	}
	f := newFixture(t, cfg, rt)
	published := f.deploy("v1")
	if svc, _ := published.Service("worker"); svc.User != osuser.Service {
		t.Fatalf("rendered worker: user %q, want %q", svc.User, osuser.Service)
	}
	want := osuser.UID(t, u)
	if got := uidOfInstance(t, f, "worker"); got != want {
		t.Fatalf("the deploy started worker as uid %d, want %d (%s)", got, want, osuser.Service)
	}
	f.kill("worker")
	for range cfg.Watchdog.HealAfter {
		f.tick()
	}
	if got := uidOfInstance(t, f, "worker"); got != want {
		t.Fatalf("after the heal worker runs as uid %d, want %d (%s): the watchdog (uid %d) must start it as its user",
			got, want, osuser.Service, os.Geteuid())
	}
}

// uidOfInstance is the real uid of service's one running instance.
func uidOfInstance(t *testing.T, f *fixture, service string) int {
	t.Helper()
	insts := f.running(service)
	if len(insts) != 1 {
		t.Fatalf("%d instances of %s run, want 1", len(insts), service)
	}
	pid, err := strconv.Atoi(strings.TrimPrefix(insts[0].ID, "pid:"))
	if err != nil {
		t.Fatalf("instance id %q: %v", insts[0].ID, err)
	}
	return osuser.UIDOf(t, pid)
}
