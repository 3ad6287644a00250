package deployer

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/zero502/zero502/deployer/balancer"
	"github.com/zero502/zero502/infra/config"
	"github.com/zero502/zero502/infra/hostlock"
	"github.com/zero502/zero502/internal/testrig/poll"
)

// oneLockHost is a config of one local host, host-a, whose fleet lock is in a fresh state dir.
func oneLockHost(t *testing.T) *config.Config {
	t.Helper()
	cfg := config.Defaults()
	cfg.Hosts = []config.Host{{Name: "host-a", StateDir: t.TempDir()}}
	return cfg
}

// zero502 lock status that cannot look at the fleet lock (here a symlink stands at its name,
// which every deploy refuses to lock through) says so, and fails: it never answers "free" for a
// lock no deploy can take.
func TestLockStatusThatCannotLookAtTheLockSaysSo(t *testing.T) {
	t.Parallel()
	cfg := oneLockHost(t)
	path := cfg.FleetLockPath()
	if err := os.Symlink(filepath.Join(t.TempDir(), "elsewhere"), path); err != nil {
		t.Fatal(err)
	}
	if _, err := takeFleetLock(context.Background(), path, "on this machine", Holder("test deploy"), true, 0, nil); err == nil {
		t.Fatalf("a deploy took the fleet lock %s through a symlink", path)
	}
	st, err := LockOp(context.Background(), cfg, LockStatusOp, "", Options{})
	if err == nil || !strings.Contains(err.Error(), path) || !strings.Contains(err.Error(), "host-a") {
		t.Errorf("lock status of a fleet lock no deploy can take: %q, error %v; want an error naming the lock %s and host-a", st, err, path)
	}
}

// zero502 lock release lifts the maintenance lock whoever took it, as kamal lock release does,
// and says whose it lifted and why it was there: a release must not silently end another
// operator's maintenance window.
func TestLockReleaseSaysWhoseMaintenanceLockItLifted(t *testing.T) {
	t.Parallel()
	cfg := oneLockHost(t)
	alice := hostlock.Holder{Who: "alice@laptop", Command: "zero502 lock acquire", PID: 1, Since: time.Now()}
	if _, err := HostLockOp(cfg, "host-a", LockAcquireOp, "DB migration until 18:00", alice); err != nil {
		t.Fatalf("lock acquire: %v", err)
	}
	st, err := LockOp(context.Background(), cfg, LockReleaseOp, "", Options{})
	if err != nil {
		t.Fatalf("lock release: %v", err)
	}
	if s := st.String(); !strings.Contains(s, "alice@laptop") || !strings.Contains(s, "DB migration until 18:00") {
		t.Errorf("lock release says %q; want it to name the maintenance lock it lifted (alice@laptop's, \"DB migration until 18:00\")", s)
	}
	if st, err := LockOp(context.Background(), cfg, LockStatusOp, "", Options{}); err != nil || st.Maintenance != nil {
		t.Errorf("lock status after the release: %q, %v; want free", st, err)
	}
}

// A lock operation over ssh whose lock host answers nothing (a --remote-binary that is not
// zero502 and exits 0) is not done: zero502 lock acquire must not exit 0 without the lock host
// saying the fleet is locked.
func TestALockOpWithoutAnAnswerFromTheLockHostFails(t *testing.T) {
	t.Parallel()
	f, cfg := fakeSSHFleet(t, "silent-op.yaml", 0)
	fake := filepath.Join(f.dir, "fake-ssh")
	if err := os.WriteFile(fake, []byte("#!/bin/sh\nexit 0\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	for _, op := range []string{LockStatusOp, LockAcquireOp, LockReleaseOp} {
		_, err := LockOp(context.Background(), cfg, op, "DB migration", Options{RemoteBinary: bin, SSH: fake, lookBudget: 10 * time.Second})
		if err == nil || !strings.Contains(err.Error(), cfg.Hosts[0].Name) || errors.Is(err, context.DeadlineExceeded) {
			t.Errorf("lock %s, the lock host answering nothing: %v; want an error naming lock host %s", op, err, cfg.Hosts[0].Name)
		}
	}
}

// A fleet lock whose lease ran out on the lock host (its renewals lost on the way: a silent
// partition) ends its session there with an expired line: the deployer's Lost says that is why
// it lost the lock (no renewal within rollout.lock_lease), not only that the session ended. The
// fake ssh client plays the lock host: it takes the lock, hears one renewal, and says the lease
// expired, as `zero502 host fleet-lock` does when the renewals stop reaching it.
func TestALostLeaseSaysWhyTheFleetLockWasLost(t *testing.T) {
	t.Parallel()
	f, cfg := fakeSSHFleet(t, "lease.yaml", 0)
	cfg.Rollout.LockLease = 300 * time.Millisecond
	fake := filepath.Join(f.dir, "fake-ssh")
	script := `#!/bin/sh
case "$*" in *" host fleet-lock "*) ;; *) exit 255 ;; esac
while IFS= read -r line; do [ "$line" = '` + ConfigEnd + `' ] && break; done
echo '{"locked":"/state/fleet.lock","pause_read":true}'
IFS= read -r line
echo '{"expired":"the fleet lock on host host-a: no renewal from its deployer for rollout.lock_lease 300ms (a silent partition, or a deployer that hangs): the lock is freed for the next deploy"}'
exit 1
`
	if err := os.WriteFile(fake, []byte(script), 0o755); err != nil {
		t.Fatal(err)
	}
	d := f.deployer(cfg, nil, Options{RemoteBinary: bin, SSH: fake, Balancer: balancer.None{}})
	hold, err := d.fleetLock(context.Background(), "v2")
	if err != nil {
		t.Fatalf("fleet lock: %v", err)
	}
	defer hold.Release()
	lost := hold.(interface{ Lost() error })
	poll.Until(t, 30*time.Second, "the fleet lock lost once its lease expired", func() bool { return lost.Lost() != nil })
	if err := lost.Lost(); !strings.Contains(err.Error(), "rollout.lock_lease") || !strings.Contains(err.Error(), "host-a") {
		t.Errorf("the lost fleet lock says %q; want why: no renewal reached host-a within rollout.lock_lease", err)
	}
}

// A maintenance record zero502 cannot read (here a directory stands at its name) still locks the
// fleet: a deploy is refused naming it, as for a record it cannot parse, rather than going ahead
// as though no one had locked the fleet.
func TestAMaintenanceRecordThatCannotBeReadStillLocksTheFleet(t *testing.T) {
	t.Parallel()
	cfg := oneLockHost(t)
	path := cfg.FleetLockPath()
	if err := os.MkdirAll(maintenancePath(path), 0o700); err != nil {
		t.Fatal(err)
	}
	l, err := takeFleetLock(context.Background(), path, "on this machine", Holder("test deploy"), true, 0, nil)
	if err == nil {
		_ = l.Release()
		t.Fatalf("a deploy took the fleet lock beside a maintenance record it cannot read (%s)", maintenancePath(path))
	}
	if !strings.Contains(err.Error(), "locked for maintenance") || !strings.Contains(err.Error(), "cannot read") {
		t.Errorf("refused with %v; want it locked for maintenance, saying the record cannot be read", err)
	}
}

// lock acquire on a lock no one holds but no one can take (a symlink at its name) says what is
// wrong with it, not "wait for the deploy to end": there is no deploy to wait for.
func TestLockAcquireOnABrokenLockSaysWhatIsWrongNotToWait(t *testing.T) {
	t.Parallel()
	cfg := oneLockHost(t)
	path := cfg.FleetLockPath()
	if err := os.Symlink(filepath.Join(t.TempDir(), "elsewhere"), path); err != nil {
		t.Fatal(err)
	}
	_, err := LockOp(context.Background(), cfg, LockAcquireOp, "DB migration", Options{})
	if err == nil || strings.Contains(err.Error(), "wait for the deploy") || !strings.Contains(err.Error(), "symlink") {
		t.Errorf("lock acquire through a symlink: %v; want the lock's own fault (a symlink), not advice to wait for a deploy", err)
	}
}
