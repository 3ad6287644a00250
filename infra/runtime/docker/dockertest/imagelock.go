package dockertest

import (
	"context"
	"os"
	"path/filepath"
	"time"

	"github.com/gofrs/flock"
)

// The test binaries that `go test ./...` runs at once each build the same image (the same
// static binary FROM scratch), so the engine's build cache answers every build after the first
// with the first one's image. A test binary that removes its tag while another's build has just
// been answered with that image, and not yet tagged it, removes the image under it: that build
// fails ("failed to get digest … no such file or directory"). So building and tagging, and
// removing tags, take turns across test binaries on one flock.

// imageLockPath is the flock the test binaries take turns on to build, tag and remove images.
func imageLockPath() string { return filepath.Join(os.TempDir(), "zero502-test-images.lock") }

// lockImages waits for the image lock, up to ctx's end; without it (no lock file, or the wait
// ran out) it goes on unlocked, as before the lock: a cleanup never hangs on it.
func lockImages(ctx context.Context) (unlock func()) {
	l := flock.New(imageLockPath())
	if ok, err := l.TryLockContext(ctx, 50*time.Millisecond); err != nil || !ok {
		return func() {}
	}
	return func() { _ = l.Unlock() }
}
