package zonefile_test

import (
	"context"
	"net/netip"
	"os"
	"os/exec"
	"path/filepath"
	"syscall"
	"testing"
	"time"

	"github.com/zero502/zero502/infra/dnsset/zonefile"
)

// The zone file's lock (FILE.lock) is judged as infra/hostlock judges the host lock: no other
// user may open it, so none can take its flock(2) and hold every `dns add/remove` (and a
// rollout's DNS step) waiting for ever.
func TestAnotherUserCannotHoldTheZoneLock(t *testing.T) {
	if os.Getuid() != 0 {
		t.Skip("needs root to run the other user's flock")
	}
	if _, err := exec.LookPath("flock"); err != nil {
		t.Skip("needs flock(1)")
	}
	dir := filepath.Join(t.TempDir(), "zones")
	if err := os.Mkdir(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	_ = os.Chmod(filepath.Dir(dir), 0o755)
	_ = os.Chmod(filepath.Dir(filepath.Dir(dir)), 0o755) // t.TempDir's own parent is 0700
	zone := filepath.Join(dir, "edge.zone")
	s, err := zonefile.NewSet(zone, "edge.example.test", zonefile.Options{TTL: 60 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	if err := s.Add(context.Background(), netip.MustParseAddr("192.0.2.10")); err != nil {
		t.Fatal(err)
	}
	fi, err := os.Stat(zone + ".lock")
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("lock %s mode %04o", zone+".lock", fi.Mode().Perm())

	// nobody takes the lock and keeps it
	hold := exec.Command("flock", "-x", zone+".lock", "sleep", "10")
	hold.SysProcAttr = &syscall.SysProcAttr{Credential: &syscall.Credential{Uid: 65534, Gid: 65534}}
	if err := hold.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = hold.Process.Kill(); _ = hold.Wait() })
	time.Sleep(500 * time.Millisecond)
	if hold.ProcessState != nil {
		t.Fatalf("the other user's flock ended early")
	}

	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
	defer cancel()
	if err := s.Add(ctx, netip.MustParseAddr("192.0.2.11")); err != nil {
		t.Fatalf("uid 65534 (nobody) holds the zone lock (mode %04o) and blocks every change: %v", fi.Mode().Perm(), err)
	}
}
