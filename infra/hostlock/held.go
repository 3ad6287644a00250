package hostlock

import (
	"errors"
	"fmt"
	"os"

	"github.com/gofrs/flock"
)

// Held reports whether someone holds the lock at path, and who when a holder record says so,
// without taking it: a shared lock is tried and dropped at once, which conflicts only with a
// holder. Nothing is written; a missing lock file is a free lock. A reader who may not open the
// lock (it is its owner's alone) goes by the holder record, readable by all: held while the
// process it names lives (ReadHolder drops a dead one's); a holder without a record (flock(1))
// is then not seen.
func Held(path string) (bool, Holder, error) {
	if _, err := os.Stat(path); errors.Is(err, os.ErrNotExist) {
		return false, Holder{}, nil
	}
	fl := flock.New(path, flock.SetFlag(os.O_RDONLY))
	ok, err := fl.TryRLock()
	if errors.Is(err, os.ErrPermission) {
		h := ReadHolder(path)
		return h.Who != "", h, nil
	}
	if err != nil {
		return false, Holder{}, fmt.Errorf("look at lock %s: %w", path, err)
	}
	if ok {
		_ = fl.Unlock()
		return false, Holder{}, nil
	}
	return true, ReadHolder(path), nil
}
