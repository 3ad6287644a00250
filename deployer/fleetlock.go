package deployer

import (
	"context"
	"errors"
	"fmt"
	"os"
	"strings"
	"time"

	"github.com/zero502/zero502/infra/hostlock"
	"github.com/zero502/zero502/infra/spec"
)

// The fleet lock: one deploy of a fleet at a time, as CodeDeploy and Kamal keep it. Without it
// two deploys started together both pass preflight, take the host locks in turn, leapfrog and
// drain hosts together. It is a flock(2) file (rollout.lock_path, default fleet.lock in the
// first host's state dir) taken before preflight and held until the report is read back, with
// its holder recorded beside it; a flock(1) script can take it too.

// fleetLock takes the fleet lock. When another deploy holds it, it waits up to the lock timeout
// (or not at all with Options.NoLockWait) and then refuses, naming the holder: nothing has been
// changed on any host by then.
func (d *Deployer) fleetLock(ctx context.Context, version string) (*hostlock.Lock, error) {
	path := d.cfg.FleetLockPath()
	me := d.holder(version)
	l, err := hostlock.TryAcquire(path, me)
	if err == nil {
		d.emit(Event{Step: StepLocked, Version: version, Message: "fleet deploy lock " + path})
		return l, nil
	}
	if !errors.Is(err, hostlock.ErrHeld) {
		return nil, &RefusedError{Reasons: []string{fmt.Sprintf("fleet deploy lock %s (rollout.lock_path): %v; "+
			"make its directory writable or set rollout.lock_path", path, err)}}
	}
	if d.opts.NoLockWait {
		return nil, &RefusedError{Reasons: []string{fmt.Sprintf("another deploy of this fleet is running: fleet lock %s is held by %s; "+
			"wait for it to finish, or pass --lock-timeout D to wait up to D", path, hostlock.ReadHolder(path))}}
	}
	lctx, cancel := context.WithTimeout(ctx, d.opts.LockTimeout)
	defer cancel()
	// Said again whenever the holder changes: a holder that just took the lock may not have
	// written its record yet, and a third deploy may take it before us.
	l, err = hostlock.Acquire(lctx, path, me, 100*time.Millisecond, func(holder hostlock.Holder) {
		d.emit(Event{Step: StepLockWait, Version: version, Message: fmt.Sprintf(
			"waiting for the fleet deploy lock held by %s (lock %s; giving up after %s)", holder, path, d.opts.LockTimeout)})
	})
	if err != nil {
		return nil, &RefusedError{Reasons: []string{fmt.Sprintf("gave up waiting for the fleet deploy lock after --lock-timeout %s: %v; "+
			"nothing was changed on any host", d.opts.LockTimeout, err)}}
	}
	d.emit(Event{Step: StepLocked, Version: version, Message: "fleet deploy lock " + path + " (after waiting)"})
	return l, nil
}

// holder names this deploy in lock records.
func (d *Deployer) holder(version string) hostlock.Holder {
	who, _, _ := strings.Cut(spec.Holder(), " pid ")
	command := "zero502 deploy --version " + version
	if d.action != "" {
		command = d.action
	}
	return hostlock.Holder{Who: who, Command: command, PID: os.Getpid()}
}
