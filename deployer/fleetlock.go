package deployer

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"strings"
	"time"

	"github.com/zero502/zero502/infra/config"
	"github.com/zero502/zero502/infra/hostlock"
	"github.com/zero502/zero502/infra/spec"
)

// The fleet lock: one deploy of a fleet at a time, as Kamal keeps it on its primary server.
// Without it two deploys started together both pass preflight, take the host locks in turn,
// leapfrog and drain hosts together. It is a flock(2) file (rollout.lock_path, default
// fleet.lock in the state dir of rollout.lock_host, default the first host) taken before
// preflight and held until the report is read back, with its holder recorded beside it; a
// flock(1) script can take it too. On a host reached over SSH it is held there by a
// `zero502 host fleet-lock` process for as long as the deployer's session lives
// (fleetlock_remote.go), so deploys from different machines meet at one lock. Beside it, a
// maintenance record (`zero502 lock acquire`) keeps every deploy out until it is released.

// fleetHold is a held fleet lock.
type fleetHold interface {
	Release() error
}

// fleetLock takes the fleet lock, on the lock host. When another deploy holds it, it waits up
// to the lock timeout (or not at all with Options.NoLockWait) and then refuses, naming the
// holder (the refusal wraps hostlock.ErrHeld): nothing has been changed on any host by then.
func (d *Deployer) fleetLock(ctx context.Context, version string) (fleetHold, error) {
	if h, ok := d.cfg.FleetLockHost(); ok && h.SSH != "" {
		return d.remoteFleetLock(ctx, h, version)
	}
	path := d.cfg.FleetLockPath()
	l, err := takeFleetLock(ctx, path, "on this machine", d.holder(version), d.opts.NoLockWait, d.opts.LockTimeout,
		func(holder hostlock.Holder) {
			d.emit(Event{Step: stepLockWait, Version: version, Message: fmt.Sprintf(
				"waiting for the fleet deploy lock held by %s (lock %s; giving up after %s)", holder, path, d.opts.LockTimeout)})
		})
	if err != nil {
		return nil, err
	}
	d.emit(Event{Step: StepLocked, Version: version, Message: "fleet deploy lock " + path})
	return l, nil
}

// takeFleetLock takes the flock at path (where: "on host-a", "on this machine"), waiting up to
// wait unless noWait, then refuses while a maintenance record stands beside it.
func takeFleetLock(ctx context.Context, path, where string, me hostlock.Holder, noWait bool, wait time.Duration, waiting func(hostlock.Holder)) (*hostlock.Lock, error) {
	l, err := hostlock.TryAcquire(path, me)
	switch {
	case err == nil:
	case !errors.Is(err, hostlock.ErrHeld):
		return nil, &refusedError{Reasons: []string{fmt.Sprintf("fleet deploy lock %s %s (rollout.lock_path): %v; "+
			"make its directory writable or set rollout.lock_path", path, where, err)}}
	case noWait:
		return nil, &refusedError{Cause: hostlock.ErrHeld, Reasons: []string{fmt.Sprintf("another deploy of this fleet is running: fleet lock %s %s is held by %s; "+
			"wait for it to finish, or pass --lock-timeout D to wait up to D", path, where, hostlock.ReadHolder(path))}}
	default:
		lctx, cancel := context.WithTimeout(ctx, wait)
		defer cancel()
		// Said again whenever the holder changes: a holder that just took the lock may not have
		// written its record yet, and a third deploy may take it before us.
		l, err = hostlock.Acquire(lctx, path, me, 100*time.Millisecond, waiting)
		if err != nil {
			return nil, &refusedError{Cause: hostlock.ErrHeld, Reasons: []string{fmt.Sprintf("gave up waiting for the fleet deploy lock %s %s after --lock-timeout %s: %v; "+
				"nothing was changed on any host", path, where, wait, err)}}
		}
	}
	if m, ok := readMaintenance(path); ok {
		_ = l.Release()
		return nil, &refusedError{Reasons: []string{fmt.Sprintf("the fleet is locked for maintenance %s by %s: %q; "+
			"`zero502 lock release --config FILE` lifts it", where, m.Holder, m.Message)}}
	}
	return l, nil
}

// holder names this deploy in lock records.
func (d *Deployer) holder(version string) hostlock.Holder {
	command := "zero502 deploy --version " + version
	if d.action != "" {
		command = d.action
	}
	return Holder(command)
}

// Maintenance is a lock on the fleet taken by hand (`zero502 lock acquire -m MSG`), as `kamal
// lock acquire` has: it outlives the command, and every deploy is refused until it is released.
type Maintenance struct {
	Holder  hostlock.Holder `json:"holder"`
	Message string          `json:"message"`
}

// maintenancePath is the maintenance record beside the fleet lock at lockPath.
func maintenancePath(lockPath string) string { return lockPath + ".maintenance" }

func readMaintenance(lockPath string) (Maintenance, bool) {
	data, err := os.ReadFile(maintenancePath(lockPath))
	switch {
	case errors.Is(err, fs.ErrNotExist):
		return Maintenance{}, false
	case err != nil: // there, but not read (its mode, a directory): locked, as a corrupt one is
		return Maintenance{Message: fmt.Sprintf("(a maintenance record zero502 cannot read: %v)", err)}, true
	}
	var m Maintenance
	if json.Unmarshal(data, &m) != nil {
		m.Message = "(an unreadable maintenance record: " + maintenancePath(lockPath) + ")"
	}
	return m, true
}

// lockStatus is the fleet lock's state: where it is, the deploy holding it now, the
// maintenance lock taken by hand.
type lockStatus struct {
	Host        string           `json:"host"`
	Path        string           `json:"path"`
	Deploy      *hostlock.Holder `json:"deploy,omitempty"`
	Maintenance *Maintenance     `json:"maintenance,omitempty"`
	// Lifted is the maintenance lock a release just lifted, whoever took it.
	Lifted *Maintenance `json:"lifted,omitempty"`
}

func (s lockStatus) String() string {
	var b strings.Builder
	fmt.Fprintf(&b, "fleet lock %s on %s: ", s.Path, s.Host)
	switch {
	case s.Deploy == nil && s.Maintenance == nil:
		b.WriteString("free")
	case s.Deploy != nil:
		fmt.Fprintf(&b, "held by a running deploy, %s", s.Deploy)
		if s.Maintenance != nil {
			b.WriteString("; and ")
		}
	}
	if s.Maintenance != nil {
		fmt.Fprintf(&b, "locked for maintenance by %s: %q (zero502 lock release lifts it)", s.Maintenance.Holder, s.Maintenance.Message)
	}
	if s.Lifted != nil {
		fmt.Fprintf(&b, "; lifted the maintenance lock of %s: %q", s.Lifted.Holder, s.Lifted.Message)
	}
	return b.String()
}

// Lock operations (zero502 lock …).
const (
	LockStatusOp  = "status"
	LockAcquireOp = "acquire"
	LockReleaseOp = "release"
)

// LockOp runs a `zero502 lock` operation on cfg's fleet lock, on its lock host (over SSH when
// it has ssh): status reads it; acquire takes the maintenance lock with message (refused while
// a deploy holds the fleet lock or the fleet is already locked); release lifts it.
func LockOp(ctx context.Context, cfg *config.Config, op, message string, opts Options) (lockStatus, error) {
	h, ok := cfg.FleetLockHost()
	if !ok {
		return lockStatus{}, errors.New("the config has no hosts: the fleet lock lives on rollout.lock_host")
	}
	if h.SSH != "" {
		return New(cfg, opts).remoteLockOp(ctx, h, op, message)
	}
	return HostLockOp(cfg, h.Name, op, message, Holder("zero502 lock "+op))
}

// lockForMaintenance writes the maintenance record of the fleet lock at path, which the caller
// holds, unless there is one.
func lockForMaintenance(path string, me hostlock.Holder, message string) error {
	if m, ok := readMaintenance(path); ok {
		return fmt.Errorf("the fleet is already locked for maintenance by %s: %q", m.Holder, m.Message)
	}
	data, _ := json.Marshal(Maintenance{Holder: me, Message: message})
	if err := spec.WriteAtomic(maintenancePath(path), data); err != nil {
		return fmt.Errorf("write the maintenance lock %s: %w", maintenancePath(path), err)
	}
	return nil
}

// Holder is who runs this process, doing command, for lock records.
func Holder(command string) hostlock.Holder {
	return hostlock.Holder{Who: whoDeploys(), Command: command, PID: os.Getpid(), Since: time.Now()}
}

// whoDeploys is the user@machine this process runs as.
func whoDeploys() string {
	who, _, _ := strings.Cut(spec.Holder(), " pid ")
	return who
}

// HostLockOp is LockOp on this machine, the lock host name; me is who asks.
func HostLockOp(cfg *config.Config, name, op, message string, me hostlock.Holder) (lockStatus, error) {
	path := cfg.FleetLockPath()
	var lookErr error // why the lock could not be looked at: then no status says it is free
	st := func() lockStatus {
		s := lockStatus{Host: name, Path: path}
		// Looked at, not taken: a deploy starting meanwhile must not find it held by a status.
		held, h, err := hostlock.Held(path)
		switch {
		case err != nil:
			lookErr = fmt.Errorf("fleet lock on host %s: could not tell whether a deploy holds it: %w; no deploy can take it either: "+
				"fix what stands at %s (one that is not a regular file can be removed: the next deploy makes the lock again)", name, err, path)
		case held:
			s.Deploy = &h
		}
		if m, ok := readMaintenance(path); ok {
			s.Maintenance = &m
		}
		return s
	}
	switch op {
	case LockStatusOp:
		if s := st(); lookErr == nil {
			return s, nil
		}
		return lockStatus{}, lookErr // no status: it would say free
	case LockAcquireOp:
		if strings.TrimSpace(message) == "" {
			return lockStatus{}, errors.New("--message: required: say why the fleet is locked, e.g. -m \"DB migration until 18:00\"")
		}
		l, err := hostlock.TryAcquire(path, me)
		switch {
		case errors.Is(err, hostlock.ErrHeld):
			return st(), fmt.Errorf("fleet lock %s on %s: %w; wait for the deploy to end, then lock", path, name, err)
		case err != nil: // not held: the lock itself is wrong, and its error says what to fix
			return st(), fmt.Errorf("fleet lock %s on %s: %w", path, name, err)
		}
		err = lockForMaintenance(path, me, message)
		_ = l.Release() // before the status: it would say this operation holds the lock
		return st(), err
	case LockReleaseOp:
		m, ok := readMaintenance(path)
		if !ok {
			return st(), fmt.Errorf("the fleet is not locked for maintenance (%s does not exist)", maintenancePath(path))
		}
		if err := os.Remove(maintenancePath(path)); err != nil {
			return st(), fmt.Errorf("lift the maintenance lock: %w", err)
		}
		s := st()
		s.Lifted = &m
		return s, nil
	}
	return lockStatus{}, fmt.Errorf("lock operation %q: must be status, acquire or release", op)
}
