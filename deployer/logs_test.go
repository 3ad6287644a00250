package deployer

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/zero502/zero502/internal/testrig/poll"
	"github.com/zero502/zero502/internal/testrig/syncbuffer"
)

// logs -f prints what is there, then what is appended, until cancelled; a missing log says why.
func TestLogsFollowPrintsWhatIsAppended(t *testing.T) {
	t.Parallel()
	path := filepath.Join(t.TempDir(), "web.log")
	if err := copyLog(context.Background(), path, false, &bytes.Buffer{}); err == nil || !strings.Contains(err.Error(), "never started on this host") {
		t.Fatalf("missing log: %v, want an error saying the service never started", err)
	}
	if err := os.WriteFile(path, []byte("== zero502 v1: starting\nfirst\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	var out syncbuffer.Buffer
	done := make(chan error, 1)
	go func() { done <- copyLog(ctx, path, true, &out) }()
	f, err := os.OpenFile(path, os.O_APPEND|os.O_WRONLY, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	fmt.Fprintln(f, "second, written while following")
	poll.UntilNil(t, 10*time.Second, "the appended line is printed", func() error {
		if s := out.String(); !strings.Contains(s, "first\nsecond, written while following\n") {
			return fmt.Errorf("printed so far: %q", s)
		}
		return nil
	})
	cancel()
	if err := <-done; err != nil {
		t.Fatalf("follow ended with %v after cancel, want nil", err)
	}
}
