package deployer

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// --remote-binary ~/DIR/zero502 is the zero502 in the remote user's home, as one writes it for
// a binary installed per user: the login shell there expands the ~, and the rest stays quoted (a
// space in it is part of the path). Over a real sshd whose root home is its own directory.
func TestARemoteBinaryUnderTheRemoteHomeIsFound(t *testing.T) {
	t.Parallel()
	s := startSSHD(t)
	f := newFleet(t, 1)
	_, cfg := f.remoteConfig(s, "home-binary.yaml", 1)
	dir := filepath.Join(s.dir, "home", "my tools "+filepath.Base(f.dir))
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(dir) })
	if err := os.Symlink(bin, filepath.Join(dir, "zero502")); err != nil {
		t.Fatal(err)
	}
	remote := "~/" + filepath.Base(dir) + "/zero502"
	st, err := LockOp(context.Background(), cfg, LockStatusOp, "", Options{RemoteBinary: remote})
	if err != nil {
		t.Fatalf("lock status over ssh with --remote-binary %q: %v", remote, err)
	}
	if !strings.Contains(st.String(), "free") {
		t.Errorf("lock status with --remote-binary %q: %q, want the lock host's answer: free", remote, st)
	}
	// Only a leading ~/ is the home: elsewhere a ~ is a character of the path.
	if _, err := LockOp(context.Background(), cfg, LockStatusOp, "", Options{RemoteBinary: "/~/" + filepath.Base(dir) + "/zero502"}); err == nil {
		t.Errorf("lock status with --remote-binary /~/…: no error, want the path not found on the host")
	}
}
