//go:build unix

package spec

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"
)

// Read checks the spec before it opens or reads it: a "spec" another user planted in a 0777
// state dir is refused before a byte of it is used. A FIFO makes the order visible: opening one
// blocks until its writer (the planter) comes, so a Read that opens before it checks hangs on
// content the planter chooses, while one that checks first is refused at once.
func TestReadChecksTheSpecBeforeReadingIt(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "host-a")
	if err := os.Mkdir(dir, 0o700); err != nil {
		t.Fatal(err)
	}
	if err := os.Chmod(dir, 0o777); err != nil { // mode bits, not owner: holds as root too
		t.Fatal(err)
	}
	p := Path(dir)
	if err := syscall.Mkfifo(p, 0o600); err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() { _, err := Read(p); done <- err }()
	select {
	case err := <-done:
		if !errors.Is(err, ErrUntrusted) || !strings.Contains(err.Error(), dir+" has mode 0777") {
			t.Fatalf("Read of a spec in the 0777 %s: %v; want ErrUntrusted naming the directory and its mode", dir, err)
		}
	case <-time.After(3 * time.Second):
		// Unblock the open (a writer arrives with a spec of the planter's) and see what Read does.
		if w, err := os.OpenFile(p, os.O_WRONLY, 0); err == nil {
			w.WriteString(`{"host":"a","version":"planted"}`)
			w.Close()
		}
		t.Fatalf("Read of a spec in the 0777 %s opened it before checking it (blocked on the FIFO; then: %v)", dir, <-done)
	}
}
