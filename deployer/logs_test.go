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

	"github.com/zero502/zero502/infra/config"
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

// logs and a host's look only read: asked of a host never deployed, logs says the service never
// started there, a look that nothing runs, and neither makes a state dir (one made by root would
// refuse the deploy user's first deploy).
func TestLogsAndALookOfAHostNeverDeployedMakeNoStateDir(t *testing.T) {
	t.Parallel()
	dir := filepath.Join(t.TempDir(), "host-a")
	cfg, err := config.LoadBytes([]byte(`
rollout: {runtime: process}
services: [{name: web, command: [/bin/true]}]
hosts: [{name: host-a, state_dir: `+dir+`}]
`), "test config")
	if err != nil {
		t.Fatal(err)
	}
	if err := Logs(context.Background(), cfg, "host-a", "web", false, &bytes.Buffer{}, Options{}); err == nil || !strings.Contains(err.Error(), "never started on this host") {
		t.Fatalf("logs of a host never deployed: %v, want an error saying the service never started", err)
	}
	if _, err := os.Stat(dir); !os.IsNotExist(err) {
		t.Errorf("logs made %s (%v): it only reads", dir, err)
	}
	// A host's look (zero502 host look: status and preflight over ssh) only reads too.
	if l, err := Look(context.Background(), cfg, "host-a", "v1", Options{}); err != nil || l.Running != "" {
		t.Fatalf("look of a host never deployed: %+v, %v; want it running nothing", l, err)
	}
	if _, err := os.Stat(dir); !os.IsNotExist(err) {
		t.Errorf("a look made %s (%v): it only reads", dir, err)
	}
}
