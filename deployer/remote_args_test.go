package deployer

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/zero502/zero502/deployer/ssh"
	"github.com/zero502/zero502/infra/config"
)

// --lock-timeout 0 (refuse at once) reaches the hosts' steps over ssh as 0, not as the default
// wait: a host lock held there refuses the step at once, as it would on a local host.
func TestStepArgsCarryTheLockTimeoutAsGiven(t *testing.T) {
	t.Parallel()
	cfg := config.Defaults()
	h := config.Host{Name: "web-1", SSH: "deploy@10.0.0.1"}
	for _, tc := range []struct {
		opts Options
		want string
	}{
		{Options{}, "--lock-timeout 10m0s"},
		{Options{LockTimeout: 30_000_000_000}, "--lock-timeout 30s"},
		{Options{NoLockWait: true}, "--lock-timeout 0s"},
	} {
		if got := strings.Join(New(cfg, tc.opts).stepArgs(h, "v2", false, true), " "); !strings.Contains(got, tc.want) {
			t.Errorf("options %+v: step args %q; want %q", tc.opts, got, tc.want)
		}
	}
}

// A host over ssh whose state dir cannot be used (here below a directory anyone may write, which
// zero502 does not trust) refuses the deploy at preflight, from its look (which reads, and
// makes no directory), before host-a (the
// first batch) is touched; the error names the host once, and the directory and its mode.
func TestARemoteHostsUnusableStateDirRefusesTheDeployBeforeAnyHostChanges(t *testing.T) {
	t.Parallel()
	s := startSSHD(t)
	f := newFleet(t, 2)
	path, cfg := f.remoteConfig(s, "ssh.yaml", 2)
	f.startLB(path)
	if _, err := f.deployer(cfg, nil, Options{RemoteBinary: bin}).Deploy(context.Background(), "v1"); err != nil {
		t.Fatalf("deploy v1: %v", err)
	}
	open := filepath.Join(f.dir, "open")
	if err := os.Mkdir(open, 0o777); err != nil {
		t.Fatal(err)
	}
	if err := os.Chmod(open, 0o777); err != nil { // past the umask: writable by anyone, not sticky
		t.Fatal(err)
	}
	cfg.Hosts[1].StateDir = filepath.Join(open, "host-b")
	cfg.Rollout.Batch = 1
	bad := f.load(f.write("bad.yaml", cfg))
	_, err := f.deployer(bad, nil, Options{RemoteBinary: bin}).Deploy(context.Background(), "v2")
	if err == nil || !strings.Contains(err.Error(), "refused before anything changed: host host-b: ") ||
		!strings.Contains(err.Error(), open+" has mode 0777") || strings.Contains(err.Error(), "host host-b: host host-b") {
		t.Fatalf("deploy with host-b's state dir below a world-writable directory: %v; want refused naming host-b once, the directory and its mode", err)
	}
	for host, v := range f.versions() {
		if v != "v1" {
			t.Errorf("%s runs %q after the refused deploy, want v1 (nothing changed)", host, v)
		}
	}
}

// The host's step hears its deployer go through its stdin's end, and reads the config stream and
// its secrets there: the session must never get a terminal, whatever the user's ssh config asks
// (RequestTTY force, for sudo prompts). On a terminal the stream is echoed back on stdout (its
// secrets in what the deployer relays and quotes), and its end never reaches the host.
func TestASessionNeverGetsATerminal(t *testing.T) {
	s := startSSHD(t)
	t.Setenv(ssh.OptsEnv, os.Getenv(ssh.OptsEnv)+" -o RequestTTY=force") // as a ~/.ssh/config may say
	dir := t.TempDir()
	probe := filepath.Join(dir, "probe")
	script := "#!/bin/sh\nif [ -t 0 ]; then echo 'stdin is a terminal'; else echo 'stdin is a pipe'; fi\ncat >/dev/null\necho 'stdin ended'\n"
	if err := os.WriteFile(probe, []byte(script), 0o755); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	var mu sync.Mutex
	var lines []string
	sess := ssh.Session{Host: "host-a", Target: s.target(), Binary: probe, Args: []string{"probe"},
		Input: []byte("SECRET_TOKEN=\"s3cret-value\"\n"), Budget: 5 * time.Second, Line: func(b []byte) {
			mu.Lock()
			defer mu.Unlock()
			lines = append(lines, string(b))
			if strings.HasPrefix(string(b), "stdin is") {
				cancel() // the deployer goes: stdin closes
			}
		}}
	err := sess.Run(ctx)
	mu.Lock()
	defer mu.Unlock()
	out := strings.Join(lines, " | ")
	if strings.Contains(out, "s3cret-value") || !strings.Contains(out, "stdin is a pipe") || !strings.Contains(out, "stdin ended") {
		t.Errorf("session under RequestTTY force: %v, printed %q; want stdin a pipe, its end seen, and nothing of it echoed", err, out)
	}
}
