// Package hostlock owns the one lock per host that the deployer, the watchdog and a server's
// bootstrap script share: flock(2) exclusive on a file (gofrs/flock), compatible with flock(1).
// The kernel releases it when the holder dies, so there is no stale lock to clean up. The holder
// writes who and since when beside the lock (LOCK.holder), so a blocked command can say who
// holds it. The lock file is spec.PrivateMode (0600): flock(2) needs only read access, so a lock
// another user could read, another user could hold for ever, turning the watchdog off and
// refusing every deploy; only its owner and root may take it. The holder record is
// spec.FileMode (0644): a status reader running as another user can say who holds the lock.
package hostlock

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"time"

	"github.com/gofrs/flock"

	"github.com/zero502/zero502/infra/spec"
	"github.com/zero502/zero502/infra/trust"
)

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
	fl   *flock.Flock
	path string
}

// holderPath is the file beside the lock that names its holder.
func holderPath(lockPath string) string { return lockPath + ".holder" }

// TryAcquire takes the lock without waiting. When it is held it returns an error wrapping
// ErrHeld that names the holder.
func TryAcquire(path string, me Holder) (*Lock, error) {
	if err := trust.MkdirAll(filepath.Dir(path), spec.DirMode, os.Getuid()); err != nil {
		return nil, fmt.Errorf("lock %s: %w", path, err)
	}
	// A lock in a directory, or a lock file, another user could write is refused: they could hold
	// it for ever, or swap it so two deploys each hold "the" lock (infra/trust).
	if err := trust.Check(filepath.Dir(path), os.Getuid()); err != nil {
		return nil, fmt.Errorf("lock %s: refused: %w", path, err)
	}
	fl := flock.New(path, flock.SetPermissions(spec.PrivateMode))
	ok, err := fl.TryLock()
	if err != nil {
		return nil, fmt.Errorf("lock %s: %w", path, err)
	}
	if err := trust.Check(path, os.Getuid()); err != nil {
		if ok {
			_ = fl.Unlock()
		}
		return nil, fmt.Errorf("lock %s: refused: %w", path, err)
	}
	if !ok {
		return nil, fmt.Errorf("lock %s: %w by %s", path, ErrHeld, ReadHolder(path))
	}
	if me.Since.IsZero() {
		me.Since = time.Now().UTC()
	}
	if me.PID == 0 {
		me.PID = os.Getpid()
	}
	// A lock file an earlier version made 0644 is narrowed (a lock file of another user, which
	// trust.Check refused above unless root owns it, stays as it is).
	_ = os.Chmod(path, spec.PrivateMode)
	data, _ := json.Marshal(me)
	// The holder record is informative: a failure to write it must not fail the lock. Written
	// atomically, a reader never sees half of it.
	_ = spec.WriteAtomic(holderPath(path), data)
	return &Lock{fl: fl, path: path}, nil
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
// show it while they find the lock held.
func ReadHolder(path string) Holder {
	var h Holder
	data, err := os.ReadFile(holderPath(path))
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
	return l.fl.Unlock()
}

// Path is the lock file.
func (l *Lock) Path() string { return l.path }
