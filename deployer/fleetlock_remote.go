package deployer

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"strings"
	"sync"
	"time"

	"github.com/zero502/zero502/infra/config"
	"github.com/zero502/zero502/infra/hostlock"
)

// The fleet lock on a lock host reached over SSH: the deployer runs `zero502 host fleet-lock`
// there (HoldFleetLock), which takes the flock on that host, says so in one JSON line
// (FleetLockLine), and holds it until its stdin ends, that is until the deployer releases it or
// its session dies; the kernel frees the flock when that process dies for any reason. A deploy
// whose lock session ended before its release stops before its next batch (Lost).

// FleetLockLine is one line `zero502 host fleet-lock` prints: waiting (the holder it waits
// for), then locked (the path it holds) or refused (why, and whether another deploy holds it);
// for status, acquire and release, the lock's state or the error.
type FleetLockLine struct {
	Waiting string `json:"waiting,omitempty"`
	Locked  string `json:"locked,omitempty"`
	Refused string `json:"refused,omitempty"`
	Expired string `json:"expired,omitempty"` // the lease ran out: the lock was freed
	Held    bool   `json:"held,omitempty"`
	// Paused, on the Locked line, is the pause record beside the lock as the lock was taken;
	// PauseRead says it was read (Paused nil: there is none).
	Paused    *Pause      `json:"paused,omitempty"`
	PauseRead bool        `json:"pause_read,omitempty"`
	Status    *lockStatus `json:"status,omitempty"`
	Error     string      `json:"error,omitempty"`
}

// leaseRenewal is the line the deployer sends on the lock's session, after the config, every
// cfg.LockRenewal() while it holds the fleet lock.
const leaseRenewal = "renew"

// HoldFleetLock takes the fleet lock of cfg on this machine, lock host name, for me (waiting up
// to wait unless noWait), says how it went through say, and holds it until ctx ends. With a
// deployer's session (renewals: the rest of its stdin, nil for none), it also ends when that
// stream ends (the deployer released the lock, or its session closed), and when no line has
// come on it for rollout.lock_lease (a deployer cut off by a silent partition): the lease.
func HoldFleetLock(ctx context.Context, cfg *config.Config, name string, me hostlock.Holder, noWait bool, wait time.Duration, renewals io.Reader, say func(FleetLockLine)) error {
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	renewed := make(chan struct{}, 1)
	if renewals != nil {
		go func() {
			defer cancel() // the deployer released the lock, or its session is gone
			sc := bufio.NewScanner(renewals)
			for sc.Scan() {
				select {
				case renewed <- struct{}{}:
				default:
				}
			}
		}()
	}
	path := cfg.FleetLockPath()
	l, err := takeFleetLock(ctx, path, "on host "+name+" (rollout.lock_host)", me, noWait, wait, func(h hostlock.Holder) {
		say(FleetLockLine{Waiting: h.String()})
	})
	if err != nil {
		var refused *refusedError
		if errors.As(err, &refused) {
			say(FleetLockLine{Refused: strings.Join(refused.Reasons, "; "), Held: errors.Is(err, hostlock.ErrHeld)})
		}
		return err
	}
	defer l.Release()
	locked := FleetLockLine{Locked: path, PauseRead: true}
	if p, err := readPause(cfg); err == nil {
		locked.Paused = &p
	} else if !errors.Is(err, ErrNotPaused) {
		locked.PauseRead = false // the deployer reads it itself, and says what is wrong
	}
	say(locked)
	lease := cfg.Rollout.LockLease
	if renewals == nil || lease <= 0 {
		<-ctx.Done()
		return nil
	}
	expiry := time.NewTimer(lease)
	defer expiry.Stop()
	for {
		select {
		case <-ctx.Done():
			return nil
		case <-renewed:
			expiry.Reset(lease)
		case <-expiry.C:
			err := fmt.Errorf("the fleet lock on host %s: no renewal from its deployer for rollout.lock_lease %s (a silent partition, "+
				"or a deployer that hangs): the lock is freed for the next deploy", name, lease)
			say(FleetLockLine{Expired: err.Error()})
			return err
		}
	}
}

// remoteHold is a fleet lock held through an ssh session to the lock host.
type remoteHold struct {
	host    string
	cancel  context.CancelFunc
	ended   chan struct{} // closed when the session ended
	mu      sync.Mutex
	err     error  // the session's end, once ended
	expired string // the lock host's expired line: why it freed the lock
	freed   bool   // Release was called
}

// Release ends the session: the host's process releases the flock and exits.
func (r *remoteHold) Release() error {
	r.mu.Lock()
	r.freed = true
	r.mu.Unlock()
	r.cancel()
	select {
	case <-r.ended:
	case <-time.After(15 * time.Second):
		return fmt.Errorf("the fleet lock's ssh session to %s did not end within 15s after its release", r.host)
	}
	return nil
}

// Lost is why the lock's session ended before its release (nil while it holds).
func (r *remoteHold) Lost() error {
	select {
	case <-r.ended:
	default:
		return nil
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.freed {
		return nil
	}
	why := r.err
	if r.expired != "" {
		why = errors.New(r.expired)
	}
	return fmt.Errorf("the fleet lock's ssh session to %s ended (%v): another deploy may take the lock now; "+
		"this one stops here, every host on a version its report says", r.host, why)
}

// remoteFleetLock takes the fleet lock on lock host h over ssh.
func (d *Deployer) remoteFleetLock(ctx context.Context, h config.Host, version string) (fleetHold, error) {
	me, err := json.Marshal(d.holder(version))
	if err != nil {
		return nil, err
	}
	args := []string{"host", "fleet-lock", "--config", "-", "--host", h.Name, "--holder", string(me), "--lock-timeout", d.remoteLockWait().String()}
	holdCtx, cancel := context.WithCancel(context.WithoutCancel(ctx)) // held through a rollback after an interrupt, until Release
	answer := make(chan FleetLockLine, 1)
	hold := &remoteHold{host: h.Name, cancel: cancel, ended: make(chan struct{})}
	go func() {
		err := d.runRemote(holdCtx, h, args, func(b []byte) {
			var l FleetLockLine
			if json.Unmarshal(b, &l) != nil {
				return
			}
			if l.Waiting != "" {
				d.emit(Event{Step: stepLockWait, Version: version, Message: fmt.Sprintf(
					"waiting for the fleet deploy lock on host %s, held by %s (giving up after %s)", h.Name, l.Waiting, d.remoteLockWait())})
				return
			}
			if l.Expired != "" { // the lease ran out there: the lock is freed, and this is why
				hold.mu.Lock()
				hold.expired = l.Expired
				hold.mu.Unlock()
				return
			}
			select {
			case answer <- l:
			default:
			}
		})
		hold.mu.Lock()
		hold.err = err
		hold.mu.Unlock()
		close(hold.ended)
	}()
	where := "on host " + h.Name + " (rollout.lock_host)"
	// The host answers within its --lock-timeout (locked, or refused); a lock host reached but
	// stuck (its zero502, its state dir's file system; keep-alives still pass) is given a look's
	// budget more, then the session is ended and the deploy refused: nothing was changed yet.
	bound := d.remoteLockWait() + d.lookWithin()
	stuck := time.NewTimer(bound)
	defer stuck.Stop()
	select {
	case l := <-answer:
		if l.Locked != "" {
			d.pausedAtLock, d.lockedSaidPause = l.Paused, l.PauseRead
			d.emit(Event{Step: StepLocked, Version: version, Message: fmt.Sprintf("fleet deploy lock %s %s, held through its ssh session", l.Locked, where)})
			return hold, nil
		}
		cancel()
		<-hold.ended
		r := &refusedError{Reasons: []string{l.Refused}}
		if l.Held {
			r.Cause = hostlock.ErrHeld
		}
		return nil, r
	case <-hold.ended:
		return nil, &refusedError{Reasons: []string{fmt.Sprintf("the fleet deploy lock %s: %v; nothing was changed on any host", where, hold.err)}}
	case <-ctx.Done():
		cancel()
		<-hold.ended
		return nil, &refusedError{Reasons: []string{fmt.Sprintf("stopped waiting for the fleet deploy lock %s: %v", where, ctx.Err())}}
	case <-stuck.C:
		cancel()
		<-hold.ended
		return nil, &refusedError{Reasons: []string{fmt.Sprintf("the fleet deploy lock %s: zero502 host fleet-lock there did not answer "+
			"within %s (--lock-timeout %s, and %s for its answer); nothing was changed on any host: look at host %s (is its zero502 "+
			"or the file system of its state dir stuck?), then deploy again", where, bound, d.remoteLockWait(), d.lookWithin(), h.Name)}}
	}
}

// fleetLost is why the deploy's fleet lock is no longer held (nil while it is).
func (d *Deployer) fleetLost() error {
	if l, ok := d.fleet.(interface{ Lost() error }); ok {
		return l.Lost()
	}
	return nil
}

// remoteLockOp runs a lock operation on lock host h over ssh.
func (d *Deployer) remoteLockOp(ctx context.Context, h config.Host, op, message string) (lockStatus, error) {
	me, err := json.Marshal(Holder("zero502 lock " + op))
	if err != nil {
		return lockStatus{}, err
	}
	var last FleetLockLine
	args := []string{"host", "fleet-lock", "--config", "-", "--host", h.Name, "--op", op, "--holder", string(me), "--message", message}
	// An operation waits for nothing on the lock host (acquire is refused while a deploy holds
	// the lock): one that does not answer within a look's budget is stuck, and said so.
	within := d.lookWithin()
	opCtx, cancel := context.WithTimeout(ctx, within)
	defer cancel()
	err = d.runRemote(opCtx, h, args, func(b []byte) {
		var l FleetLockLine
		if json.Unmarshal(b, &l) == nil {
			last = l
		}
	})
	if err != nil && ctx.Err() == nil && errors.Is(opCtx.Err(), context.DeadlineExceeded) {
		err = fmt.Errorf("lock host %s did not answer zero502 lock %s within %s (%w): look at it (ssh %s, its zero502), then run it again",
			h.Name, op, within, err, h.SSH)
	}
	var st lockStatus
	if last.Status != nil {
		st = *last.Status
	}
	switch {
	case last.Error != "":
		return st, errors.New(last.Error)
	case err != nil:
		return st, err
	case last.Status == nil:
		return st, fmt.Errorf("lock host %s: zero502 host fleet-lock --op %s printed no answer: nothing says it was done; check that the host "+
			"runs this zero502 version (zero502 host install --ssh %s, with --dest where --remote-binary points), then run it again", h.Name, op, h.SSH)
	}
	return st, nil
}

// HeldHereFor is the holder record of a fleet lock taken on this machine, the lock host, for
// who, a deployer on another machine: its user, machine and command, with its pid there named in
// the command, and this process's pid, which holds the lock here (a pid of another machine,
// looked up here, would make the record a dead process's and the holder "unknown").
func HeldHereFor(who hostlock.Holder) hostlock.Holder {
	if who.PID != 0 && who.PID != os.Getpid() {
		who.Command = fmt.Sprintf("%s, pid %d on its machine; held here by zero502 host fleet-lock", who.Command, who.PID)
	}
	who.PID = os.Getpid()
	return who
}
