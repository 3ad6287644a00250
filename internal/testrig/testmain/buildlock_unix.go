//go:build unix

package testmain

import (
	"os"
	"path/filepath"
	"syscall"
)

// LockBuild serializes the zero502 builds of test binaries that `go test ./...` runs at once:
// the first compiles, the others wait and then link from Go's build cache, instead of each
// compiling the same packages on the same cores. Best effort: no lock, no wait.
func LockBuild() (unlock func()) {
	f, err := os.OpenFile(filepath.Join(os.TempDir(), "zero502-test-build.lock"), os.O_CREATE|os.O_RDWR, 0o600)
	if err != nil {
		return func() {}
	}
	if err := syscall.Flock(int(f.Fd()), syscall.LOCK_EX); err != nil {
		f.Close()
		return func() {}
	}
	return func() { f.Close() }
}
