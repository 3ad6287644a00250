//go:build !unix

package hostlock

import (
	"fmt"
	"io"
	"os"
	"path/filepath"

	"github.com/gofrs/flock"

	"github.com/zero502/zero502/infra/spec"
	"github.com/zero502/zero502/infra/trust"
)

// acquire takes the lock where files have no owner and flock(2) does not exist (Windows):
// gofrs/flock's LockFileEx, the directory and the file judged by infra/trust's mode bits.
func acquire(path string, record []byte) (func() error, error) {
	if err := trust.MkdirAll(filepath.Dir(path), spec.DirMode, os.Getuid()); err != nil {
		return nil, fmt.Errorf("lock %s: %w", path, err)
	}
	if err := trust.Check(filepath.Dir(path), os.Getuid()); err != nil {
		return nil, fmt.Errorf("lock %s: refused: %w; %s (%s)", path, err, advice, Rule)
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
		return nil, fmt.Errorf("lock %s: refused: %w (%s)", path, err, Rule)
	}
	if !ok {
		return nil, fmt.Errorf("lock %s: %w by %s", path, ErrHeld, ReadHolder(path))
	}
	_ = spec.WriteAtomic(holderPath(path), record)
	return fl.Unlock, nil
}

// tryShared reports whether another holds the lock, trying a shared lock and dropping it.
func tryShared(path string) (bool, error) {
	if _, err := os.Stat(path); err != nil {
		return false, err
	}
	fl := flock.New(path, flock.SetFlag(os.O_RDONLY))
	ok, err := fl.TryRLock()
	if err != nil {
		return false, err
	}
	if ok {
		_ = fl.Unlock()
	}
	return !ok, nil
}

// readHolder reads a holder record.
func readHolder(path string) ([]byte, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	return io.ReadAll(io.LimitReader(f, maxHolder))
}
