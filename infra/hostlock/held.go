package hostlock

import (
	"errors"
	"fmt"
	"os"
)

// Held reports whether someone holds the lock at path, and who when a holder record says so,
// without taking it: a shared lock is tried and dropped at once, which conflicts only with a
// holder. Nothing is written; a missing lock file is a free lock. A reader who may not open the
// lock (it is its owner's alone) goes by the holder record, readable by all: held while the
// process it names lives (ReadHolder drops a dead one's); a holder without a record (flock(1))
// is then not seen. The lock is opened as TryAcquire opens it: never through a symlink.
func Held(path string) (bool, Holder, error) {
	held, err := tryShared(path)
	switch {
	case errors.Is(err, os.ErrNotExist):
		return false, Holder{}, nil
	case errors.Is(err, os.ErrPermission):
		h := ReadHolder(path)
		return h.Who != "", h, nil
	case err != nil:
		return false, Holder{}, fmt.Errorf("look at lock %s: %w", path, err)
	case held:
		return true, ReadHolder(path), nil
	}
	return false, Holder{}, nil
}
