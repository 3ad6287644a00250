// Package hostlock owns the one lock per host that the deployer, the watchdog and a server's
// bootstrap script share: flock(2) exclusive on a file, compatible with flock(1) on the same path.
// The kernel releases it when the holder dies, so there is no stale lock to clean up. The holder
// writes who and since when beside the lock (LOCK.holder), so a blocked command can say who
// holds it. The holder record is spec.FileMode (0644): a status reader running as another user
// can say who holds the lock.
//
// It owns too where a lock may be, and whose it is (Rule). The lock file is spec.PrivateMode
// (0600): flock(2) needs only read access, so a lock another user could read, another user could
// hold for ever, turning the watchdog off and refusing every deploy; only its owner and root may
// take it. For the same reason its directory must be writable by its owner alone, even a sticky
// one such as /run/lock is refused: there any user could make the lock first. The lock is opened
// without following a symlink, made 0600 if it is not there (O_EXCL), and the open descriptor is
// judged (a regular file with one name, passing infra/trust's rule) before it is flocked, so
// nothing is ever made, locked, chmodded or chowned through a name another user could point
// elsewhere. Root shares the lock with the user who owns its directory (the deploy user's state
// dir): it judges that directory and the lock by trust's rule for that user, and a lock file root
// makes there is handed to that user (fchown), so a root watchdog tick or an operator never locks
// the deploy user out. A lock this user may not open is refused naming its owner and mode and
// what to do.
package hostlock

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"time"
)

// Rule is what a host lock must be, and where: the rule every refusal of this package names.
const Rule = "a host lock is a regular file with one name, never a symlink, owned by root, by the user taking it or by " +
	"the owner of its directory, writable by no one else, in a directory only its owner can write (owned by root or " +
	"the user taking it, or by the user root shares the lock with; no group or other write bit, sticky or not)"

// advice is what to do about a lock in the wrong place.
const advice = "set watchdog.lock_path (or hosts[].lock_path) to a file in a directory only root and the deploy user " +
	"can write, or leave it empty to use deploy.lock in the host's state dir (zero502 host lock-path --config FILE " +
	"prints each host's lock)"

// Holder says who holds a lock and since when.
type Holder struct {
	Who     string    `json:"who"`
	Command string    `json:"command"`
	PID     int       `json:"pid"`
	Since   time.Time `json:"since"`
}

func (h Holder) String() string {
	if h.Who == "" {
		return "an unknown process (no holder record: a flock(1) script?)"
	}
	return fmt.Sprintf("%s (%s, pid %d) since %s", h.Who, h.Command, h.PID, h.Since.Format(time.RFC3339))
}

// ErrHeld is returned when the lock is held by someone else.
var ErrHeld = errors.New("host lock is held")

// Lock is a held host lock.
type Lock struct {
	path    string
	release func() error // unlocks and closes the lock file
}

// holderPath is the file beside the lock that names its holder.
func holderPath(lockPath string) string { return lockPath + ".holder" }

// maxHolder bounds what ReadHolder reads: a record is a few hundred bytes.
const maxHolder = 64 << 10

// TryAcquire takes the lock without waiting. When it is held it returns an error wrapping
// ErrHeld that names the holder. A lock in the wrong place, or one this user may not take, is an
// error naming the path, the owner and mode at fault, Rule, and what to do; nothing is made,
// locked or changed through a symlink.
func TryAcquire(path string, me Holder) (*Lock, error) {
	if me.Since.IsZero() {
		me.Since = time.Now().UTC()
	}
	if me.PID == 0 {
		me.PID = os.Getpid()
	}
	// The holder record is informative: a failure to write it must not fail the lock.
	record, _ := json.Marshal(me)
	release, err := acquire(path, record)
	if err != nil {
		return nil, err
	}
	return &Lock{path: path, release: release}, nil
}

// Acquire waits for the lock until ctx ends, polling every poll. Each time it finds the lock
// held it calls waiting (if not nil) with the holder, once per distinct holder, so the caller
// can print "waiting for …".
func Acquire(ctx context.Context, path string, me Holder, poll time.Duration, waiting func(Holder)) (*Lock, error) {
	var last Holder
	told := false
	for {
		l, err := TryAcquire(path, me)
		if err == nil {
			return l, nil
		}
		if !errors.Is(err, ErrHeld) {
			return nil, err
		}
		if h := ReadHolder(path); waiting != nil && (!told || h != last) {
			last, told = h, true
			waiting(h)
		}
		select {
		case <-ctx.Done():
			return nil, fmt.Errorf("lock %s: still held by %s: %w", path, ReadHolder(path), ctx.Err())
		case <-time.After(poll):
		}
	}
}

// ReadHolder returns the last holder record of the lock at path. The record may be stale when
// the lock is free or held by a process that does not write records (flock(1)): callers only
// show it while they find the lock held. A record that is not a small regular file (a symlink
// another user planted, a FIFO) is no record.
func ReadHolder(path string) Holder {
	var h Holder
	data, err := readHolder(holderPath(path))
	if err != nil {
		return h
	}
	_ = json.Unmarshal(data, &h)
	if h.PID != 0 && !alive(h.PID) {
		return Holder{}
	}
	return h
}

// Release frees the lock and clears the holder record.
func (l *Lock) Release() error {
	_ = os.Remove(holderPath(l.path))
	return l.release()
}

// Path is the lock file.
func (l *Lock) Path() string { return l.path }
