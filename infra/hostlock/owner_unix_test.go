//go:build unix

package hostlock

import (
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
)

// The tests below play another user, uid 65534 (nobody), as the review did: they need root.

const otherUID = 65534

func needRoot(t *testing.T) {
	t.Helper()
	if os.Geteuid() != 0 {
		t.Skip("needs root to play another user")
	}
}

// sharedRoot is a fresh 0755 directory of root's that other users may enter (t.TempDir is 0700),
// outside any sticky directory's own checks: what lies below it is judged on its own.
func sharedRoot(t *testing.T) string {
	t.Helper()
	dir, err := os.MkdirTemp("", "hostlock-")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(dir) })
	if err := os.Chmod(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	return dir
}

// mkdirMode makes dir with exactly mode (chmod after mkdir: the umask is not applied), owned by uid.
func mkdirMode(t *testing.T, dir string, mode os.FileMode, uid int) string {
	t.Helper()
	if err := os.Mkdir(dir, 0o700); err != nil {
		t.Fatal(err)
	}
	if err := os.Chown(dir, uid, uid); err != nil {
		t.Fatal(err)
	}
	if err := os.Chmod(dir, mode); err != nil {
		t.Fatal(err)
	}
	return dir
}

// stickyDir is a 1777 directory of root's, as /run/lock and /tmp are.
func stickyDir(t *testing.T) string {
	t.Helper()
	needRoot(t)
	return mkdirMode(t, filepath.Join(sharedRoot(t), "lock"), 0o777|os.ModeSticky, 0)
}

// owner is the uid and permission bits (with the sticky bit) of path, not following a symlink.
func owner(t *testing.T, path string) (int, os.FileMode) {
	t.Helper()
	fi, err := os.Lstat(path)
	if err != nil {
		t.Fatal(err)
	}
	return int(fi.Sys().(*syscall.Stat_t).Uid), fi.Mode() & (os.ModePerm | os.ModeSticky)
}

// tryEnv makes the test binary try the lock it names, print the outcome and exit (run as another
// user by tryAs).
const tryEnv = "ZERO502_HOSTLOCK_TRY"

func TestTryHelperProcess(t *testing.T) {
	p := os.Getenv(tryEnv)
	if p == "" {
		t.Skip("the helper of the tests that take the lock as another user")
	}
	l, err := TryAcquire(p, Holder{Who: fmt.Sprintf("uid %d", os.Getuid()), Command: "helper"})
	switch {
	case errors.Is(err, ErrHeld):
		fmt.Println("held:", err)
	case err != nil:
		fmt.Println("error:", err)
	default:
		fmt.Println("taken")
		_ = l.Release()
	}
	os.Exit(0)
}

// tryAs runs TryAcquire(lock) as uid in a copy of this test binary placed in dir (which uid must
// be able to enter), and returns what it printed: "taken", "held: …" or "error: …".
func tryAs(t *testing.T, dir string, uid int, lock string) string {
	t.Helper()
	bin := filepath.Join(dir, "hostlock.test")
	if _, err := os.Stat(bin); err != nil {
		data, err := os.ReadFile(os.Args[0])
		if err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(bin, data, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	cmd := exec.Command(bin, "-test.run=^TestTryHelperProcess$")
	cmd.Env = append(os.Environ(), tryEnv+"="+lock)
	cmd.Dir = "/"
	cmd.SysProcAttr = &syscall.SysProcAttr{Credential: &syscall.Credential{Uid: uint32(uid), Gid: uint32(uid)}}
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("TryAcquire(%s) as uid %d: %v %s", lock, uid, err, out)
	}
	return strings.TrimSpace(string(out))
}

// The review's case: a symlink another user plants at the lock path, in a sticky directory, to a
// file in another directory. The lock is never opened through a symlink: nothing is created at
// its target, and the refusal names the path.
func TestReviewLockSymlinkMakesRootCreateAFileElsewhere(t *testing.T) {
	lockDir := stickyDir(t)
	lock := filepath.Join(lockDir, "zero502.lock")
	victim := filepath.Join(t.TempDir(), "nologin")
	if err := os.Symlink(victim, lock); err != nil {
		t.Fatal(err)
	}
	if err := os.Lchown(lock, otherUID, otherUID); err != nil {
		t.Fatal(err)
	}
	l, err := TryAcquire(lock, Holder{Who: "watchdog"})
	if fi, serr := os.Stat(victim); serr == nil {
		t.Errorf("TryAcquire created %s (mode %v) through another user's symlink before refusing it (err %v)", victim, fi.Mode(), err)
	}
	if err == nil {
		_ = l.Release()
		t.Fatalf("TryAcquire(%s), a symlink of uid %d: taken; want refused", lock, otherUID)
	}
	if !strings.Contains(err.Error(), lock) {
		t.Errorf("TryAcquire(%s): %v; want the refusal to name the lock", lock, err)
	}
}

// In a directory only root may write, a symlink at the lock path, even root's own, is not followed
// either: the lock is refused, saying it is a symlink, and the file it points at is not created.
func TestASymlinkAtTheLockPathIsRefusedUnfollowed(t *testing.T) {
	needRoot(t)
	dir := mkdirMode(t, filepath.Join(sharedRoot(t), "state"), 0o755, 0)
	victim := filepath.Join(t.TempDir(), "victim")
	lock := filepath.Join(dir, "deploy.lock")
	if err := os.Symlink(victim, lock); err != nil {
		t.Fatal(err)
	}
	l, err := TryAcquire(lock, Holder{Who: "watchdog"})
	if _, serr := os.Stat(victim); serr == nil {
		t.Errorf("TryAcquire created %s through the symlink %s (err %v)", victim, lock, err)
	}
	if err == nil {
		_ = l.Release()
		t.Fatalf("TryAcquire of the symlink %s: taken; want refused", lock)
	}
	if !strings.Contains(err.Error(), lock) || !strings.Contains(err.Error(), "symlink") || !strings.Contains(err.Error(), victim) {
		t.Errorf("TryAcquire of the symlink %s: %v; want refused naming the lock, that it is a symlink and its target", lock, err)
	}
	// Held, a status reader, does not open it through the symlink either.
	if err := os.WriteFile(victim, nil, 0o600); err != nil {
		t.Fatal(err)
	}
	if held, _, err := Held(lock); err == nil || !strings.Contains(err.Error(), "symlink") {
		t.Errorf("Held of the symlink %s: %v, %v; want an error saying it is a symlink", lock, held, err)
	}
}

// The review's cases (a) and (b): a lock in a sticky directory such as /run/lock is refused, the
// directory itself and a lock file another user made there first, naming the directory's mode,
// owner and the rule, and saying what to do; never taken, never "permission denied" alone.
func TestALockInAStickyDirectoryIsRefusedSayingWhatToDo(t *testing.T) {
	lockDir := stickyDir(t)
	lock := filepath.Join(lockDir, "zero502.lock")
	want := func(t *testing.T, err error) {
		t.Helper()
		for _, s := range []string{lock, "directory " + lockDir, "mode 1777", "uid 0", "sticky", "watchdog.lock_path", "hosts[].lock_path",
			"deploy.lock in the host's state dir"} {
			if err == nil || !strings.Contains(err.Error(), s) {
				t.Fatalf("TryAcquire(%s) in the sticky %s: %v; want refused, the error saying %q", lock, lockDir, err, s)
			}
		}
	}
	l, err := TryAcquire(lock, Holder{Who: "watchdog"})
	if err == nil {
		_ = l.Release()
	}
	want(t, err)
	if _, err := os.Lstat(lock); err == nil {
		t.Errorf("the refused TryAcquire left %s behind", lock)
	}

	// Another user made the lock first (case b): refused the same way, naming that file's owner.
	if err := os.WriteFile(lock, nil, 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.Chown(lock, otherUID, otherUID); err != nil {
		t.Fatal(err)
	}
	l, err = TryAcquire(lock, Holder{Who: "watchdog"})
	if err == nil {
		_ = l.Release()
	}
	want(t, err)
	if !strings.Contains(err.Error(), fmt.Sprintf("uid %d", otherUID)) {
		t.Errorf("TryAcquire of uid %d's lock in %s: %v; want its owner named", otherUID, lockDir, err)
	}
	// And so it is for that user (the deploy user of the review), not "permission denied" alone.
	if got := tryAs(t, filepath.Dir(lockDir), otherUID, lock); !strings.HasPrefix(got, "error:") || !strings.Contains(got, "sticky") ||
		!strings.Contains(got, "watchdog.lock_path") {
		t.Errorf("TryAcquire(%s) as uid %d: %s; want refused naming the sticky directory and what to do", lock, otherUID, got)
	}
}

// The review's case (a), fixed: root (a watchdog tick, an operator) taking the lock in the deploy
// user's state dir makes the lock file that user's (0600), so the deploy user takes it after root
// released it, and sees it held, and by whom, while root holds it.
func TestRootHandsTheLockItMakesToTheDirectorysOwner(t *testing.T) {
	needRoot(t)
	root := sharedRoot(t)
	state := mkdirMode(t, filepath.Join(root, "state"), 0o750, otherUID)
	lock := filepath.Join(state, "deploy.lock")
	l, err := TryAcquire(lock, Holder{Who: "root@host", Command: "zero502 watchdog"})
	if err != nil {
		t.Fatalf("root's TryAcquire in uid %d's 0750 directory: %v; want taken", otherUID, err)
	}
	if uid, mode := owner(t, lock); uid != otherUID || mode != 0o600 {
		t.Errorf("the lock root made in uid %d's directory: uid %d mode %04o; want uid %d, 0600", otherUID, uid, mode, otherUID)
	}
	if got := tryAs(t, root, otherUID, lock); !strings.HasPrefix(got, "held:") || !strings.Contains(got, "zero502 watchdog") {
		t.Errorf("TryAcquire as uid %d while root holds the lock: %s; want held, naming root's command", otherUID, got)
	}
	if err := l.Release(); err != nil {
		t.Fatal(err)
	}
	if got := tryAs(t, root, otherUID, lock); got != "taken" {
		t.Fatalf("TryAcquire as uid %d, the state dir's owner, after root released the lock it made: %s; want taken", otherUID, got)
	}
	// Root takes the lock that user made, too.
	l, err = TryAcquire(lock, Holder{Who: "root@host"})
	if err != nil {
		t.Fatalf("root's TryAcquire of uid %d's lock in its own directory: %v; want taken", otherUID, err)
	}
	_ = l.Release()

	// A lock file of a third user there is refused, naming it.
	if err := os.Chown(lock, otherUID-1, otherUID-1); err != nil {
		t.Fatal(err)
	}
	if l, err := TryAcquire(lock, Holder{Who: "root@host"}); err == nil || !strings.Contains(err.Error(), fmt.Sprintf("uid %d", otherUID-1)) {
		if l != nil {
			_ = l.Release()
		}
		t.Fatalf("a lock of uid %d in uid %d's directory: %v; want refused naming its owner", otherUID-1, otherUID, err)
	}
}

// The review's case (a) as the deploy user meets it: a lock root made (flock(1) as root, an older
// zero502) in the deploy user's directory cannot be opened by that user; the error names the
// file's owner and mode and says what to do, not "permission denied" alone.
func TestALockTheUserMayNotOpenSaysWhoseItIsAndWhatToDo(t *testing.T) {
	needRoot(t)
	root := sharedRoot(t)
	state := mkdirMode(t, filepath.Join(root, "state"), 0o755, otherUID)
	lock := filepath.Join(state, "deploy.lock")
	if err := os.WriteFile(lock, nil, 0o600); err != nil { // root's, as flock(1) run by root leaves it
		t.Fatal(err)
	}
	got := tryAs(t, root, otherUID, lock)
	for _, s := range []string{"error:", lock, "uid 0 (root)", "mode 0600", "remove it as root", fmt.Sprintf("run the watchdog as uid %d", otherUID)} {
		if !strings.Contains(got, s) {
			t.Fatalf("TryAcquire as uid %d of root's 0600 lock: %s; want it to say %q", otherUID, got, s)
		}
	}
}

// A lock file with a second name (a hard link) is refused before it is locked: the other name
// could be another file that root would lock, chmod and chown.
func TestALockWithTwoNamesIsRefused(t *testing.T) {
	needRoot(t)
	dir := mkdirMode(t, filepath.Join(sharedRoot(t), "state"), 0o755, 0)
	lock := filepath.Join(dir, "deploy.lock")
	if err := os.WriteFile(lock, nil, 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.Link(lock, filepath.Join(dir, "other")); err != nil {
		t.Fatal(err)
	}
	if l, err := TryAcquire(lock, Holder{Who: "watchdog"}); err == nil || !strings.Contains(err.Error(), "2 names") {
		if l != nil {
			_ = l.Release()
		}
		t.Fatalf("a lock file with two hard links: %v; want refused saying so", err)
	}
}
