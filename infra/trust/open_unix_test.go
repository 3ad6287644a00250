//go:build unix

package trust

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
)

// Open reads files only: a FIFO of this user's would block its reader, and is refused unopened.
func TestOpenRefusesWhatIsNotAFile(t *testing.T) {
	fifo := filepath.Join(trustedRoot(t), "state.json")
	if err := syscall.Mkfifo(fifo, 0o600); err != nil {
		t.Fatal(err)
	}
	if f, err := Open(fifo, os.Getuid()); !errors.Is(err, ErrRefused) || !strings.Contains(err.Error(), "not a regular file") {
		if f != nil {
			f.Close()
		}
		t.Fatalf("Open of a FIFO: %v; want refused, saying it is not a regular file", err)
	}
}
