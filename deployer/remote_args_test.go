package deployer

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

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
