//go:build unix

package hostlock

import (
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"sync"
	"syscall"

	"golang.org/x/sys/unix"

	"github.com/zero502/zero502/infra/spec"
	"github.com/zero502/zero502/infra/trust"
)

// openFlags open a lock or its holder record never through a symlink (O_NOFOLLOW), never
// blocking on a FIFO (O_NONBLOCK), and not into a child process (O_CLOEXEC). Read access is all
// flock(2) needs (flock(1) opens the file read-only too); the 0600 mode keeps other users out.
const openFlags = unix.O_RDONLY | unix.O_NOFOLLOW | unix.O_NONBLOCK | unix.O_NOCTTY | unix.O_CLOEXEC

// attempts bounds the retries when the lock file is removed or replaced while it is being taken.
const attempts = 5

// dir is the open directory of a lock, judged by Rule.
type dir struct {
	fd       int
	path     string
	uid, gid int    // its owner and group
	mode     uint32 // its permission bits, with the sticky, setgid and setuid bits
	// judge is the user trust's rule judges the directory and the lock for: this user, or for
	// root the directory's owner, with whom root shares the lock.
	judge int
}

// acquire takes the lock at path without waiting, and writes record as its holder record: the
// directory is opened and judged, the lock file is opened in it without following a symlink (made
// 0600 when it is not there, and handed to the directory's owner when root makes it), its
// descriptor judged, then flocked. It returns what releases the lock.
func acquire(path string, record []byte) (func() error, error) {
	d, name, err := openDir(path)
	if err != nil {
		return nil, err
	}
	defer unix.Close(d.fd)
	for range attempts {
		f, err := d.open(path, name)
		if err != nil {
			return nil, err
		}
		replaced, err := d.take(path, name, f)
		if err != nil || replaced {
			f.Close() // releases the lock when taken
			if err != nil {
				return nil, err
			}
			continue
		}
		d.writeHolder(path, record)
		// Released once: a second release must not unlock a descriptor number reused meanwhile.
		var once sync.Once
		return func() (err error) {
			once.Do(func() {
				err = unix.Flock(int(f.Fd()), unix.LOCK_UN)
				if cerr := f.Close(); err == nil {
					err = cerr
				}
				if err != nil {
					err = fmt.Errorf("release lock %s: %w", path, err)
				}
			})
			return err
		}, nil
	}
	return nil, fmt.Errorf("lock %s: it was removed or replaced %d times while it was being taken; try again", path, attempts)
}

// openDir opens the directory of the lock at path, made (trust.MkdirAll) when it is missing, and
// judges it: writable by its owner alone, even when sticky, and passing trust's rule for this
// user, or for root for its owner. What was judged by name is checked to be what is open.
func openDir(path string) (*dir, string, error) {
	clean := filepath.Clean(path)
	name, dpath := filepath.Base(clean), filepath.Dir(clean)
	if name == "." || name == ".." || name == string(filepath.Separator) {
		return nil, "", fmt.Errorf("lock %q: is not a file path; %s", path, advice)
	}
	uid := os.Getuid()
	if _, err := os.Stat(dpath); errors.Is(err, fs.ErrNotExist) {
		if err := trust.MkdirAll(dpath, spec.DirMode, uid); err != nil {
			return nil, "", fmt.Errorf("lock %s: %w", path, err)
		}
	}
	fd, err := unix.Open(dpath, unix.O_RDONLY|unix.O_DIRECTORY|unix.O_CLOEXEC, 0)
	if err != nil {
		return nil, "", fmt.Errorf("lock %s: %w", path, &os.PathError{Op: "open", Path: dpath, Err: err})
	}
	var st unix.Stat_t
	if err := unix.Fstat(fd, &st); err != nil {
		unix.Close(fd)
		return nil, "", fmt.Errorf("lock %s: %w", path, &os.PathError{Op: "fstat", Path: dpath, Err: err})
	}
	d := &dir{fd: fd, path: dpath, uid: int(st.Uid), gid: int(st.Gid), mode: uint32(st.Mode) & 0o7777, judge: uid}
	if uid == 0 {
		d.judge = d.uid
	}
	if d.mode&0o022 != 0 {
		err := d.writable(path, name)
		unix.Close(fd)
		return nil, "", err
	}
	if err := trust.Check(dpath, d.judge); err != nil {
		unix.Close(fd)
		return nil, "", fmt.Errorf("lock %s: refused: %w%s; %s (%s)", path, err, d.judgedFor(), advice, Rule)
	}
	var now unix.Stat_t
	if err := unix.Stat(dpath, &now); err != nil || now.Dev != st.Dev || now.Ino != st.Ino {
		unix.Close(fd)
		return nil, "", fmt.Errorf("lock %s: refused: its directory %s changed while it was checked; try again", path, dpath)
	}
	return d, name, nil
}

// judgedFor says, when root judged the lock for its directory's owner, for whom.
func (d *dir) judgedFor() string {
	if d.judge == os.Getuid() {
		return ""
	}
	return fmt.Sprintf(" (judged for %s, the owner of %s, with whom root shares the lock)", trust.OwnerName(d.judge), d.path)
}

// writable is the refusal of a lock directory group or others may write, sticky or not, naming
// what lies at the lock's name now.
func (d *dir) writable(path, name string) error {
	why := "group or others may write it: any of them can make the lock file first, or remove, replace or symlink it, " +
		"and hold it for ever, turning the watchdog off and refusing every deploy"
	if d.mode&unix.S_ISVTX != 0 {
		why = "other users may add names to it, sticky as it is (as /run/lock and /tmp are): any of them can make the lock " +
			"file, or a symlink in its place, before zero502 does and hold it for ever, turning the watchdog off and refusing every deploy"
	}
	there := ""
	var st unix.Stat_t
	if unix.Fstatat(d.fd, name, &st, unix.AT_SYMLINK_NOFOLLOW) == nil {
		there = fmt.Sprintf("; the %s there now is owned by %s, mode %04o", kind(uint32(st.Mode)), trust.OwnerName(int(st.Uid)), st.Mode&0o7777)
	}
	return fmt.Errorf("lock %s: refused: its directory %s (owned by %s, mode %04o): %s%s; %s (%s)",
		path, d.path, trust.OwnerName(d.uid), d.mode, why, there, advice, Rule)
}

// open opens the lock file name in d. One that is not there is made PrivateMode with O_EXCL,
// which never follows a symlink nor opens another's file, and when root makes it in another
// user's directory, it is that user's (fchown): root never locks the directory's owner out. One
// that is there is opened only when it is a regular file, and never through a symlink.
func (d *dir) open(path, name string) (*os.File, error) {
	for range attempts {
		fd, err := unix.Openat(d.fd, name, openFlags|unix.O_CREAT|unix.O_EXCL, uint32(spec.PrivateMode))
		if err == nil {
			f := os.NewFile(uintptr(fd), path)
			if err := d.handOver(path, name, f); err != nil {
				f.Close()
				return nil, err
			}
			return f, nil
		}
		if err != unix.EEXIST {
			return nil, d.openError(path, name, err)
		}
		var st unix.Stat_t
		if err := unix.Fstatat(d.fd, name, &st, unix.AT_SYMLINK_NOFOLLOW); err == unix.ENOENT {
			continue // removed meanwhile
		} else if err != nil {
			return nil, fmt.Errorf("lock %s: %w", path, &os.PathError{Op: "stat", Path: path, Err: err})
		}
		if st.Mode&unix.S_IFMT != unix.S_IFREG {
			return nil, d.notAFile(path, name, uint32(st.Mode))
		}
		fd, err = unix.Openat(d.fd, name, openFlags, 0)
		if err == unix.ENOENT {
			continue
		}
		if err != nil {
			return nil, d.openError(path, name, err)
		}
		return os.NewFile(uintptr(fd), path), nil
	}
	return nil, fmt.Errorf("lock %s: it was removed %d times while it was being opened; try again", path, attempts)
}

// handOver makes a lock file this process has just made PrivateMode whatever the umask, and,
// when root made it in another user's directory, that user's. When it cannot, the file is
// removed again: a lock of root's there would lock the directory's owner out.
func (d *dir) handOver(path, name string, f *os.File) error {
	err := f.Chmod(spec.PrivateMode)
	if err == nil && os.Getuid() == 0 && d.uid != 0 {
		err = f.Chown(d.uid, d.gid)
	}
	if err != nil {
		_ = unix.Unlinkat(d.fd, name, 0)
		return fmt.Errorf("lock %s: hand the new lock to %s, the owner of %s: %w", path, trust.OwnerName(d.uid), d.path, err)
	}
	return nil
}

// take judges the open lock file f, then flocks it. The open file must be a regular file with
// one name, passing trust's rule; the lock is then taken on that descriptor, and the name must
// still be that file (replaced is true when it was removed or replaced meanwhile: try again).
func (d *dir) take(path, name string, f *os.File) (replaced bool, err error) {
	fi, err := f.Stat()
	if err != nil {
		return false, fmt.Errorf("lock %s: %w", path, err)
	}
	st, ok := fi.Sys().(*syscall.Stat_t)
	if !ok {
		return false, fmt.Errorf("lock %s: no owner in its stat", path)
	}
	if !fi.Mode().IsRegular() {
		return false, d.notAFile(path, name, uint32(st.Mode))
	}
	if n := uint64(st.Nlink); n != 1 {
		return false, fmt.Errorf("lock %s: refused: it has %d names (hard links): another of them could be any file of its "+
			"owner's, for zero502 to lock, chmod and chown; remove it (rm %s: the next taker makes it again) (%s)", path, n, path, Rule)
	}
	if err := trust.CheckInfo(path, fi, d.judge); err != nil {
		return false, fmt.Errorf("lock %s: refused: %w%s (%s)", path, err, d.judgedFor(), Rule)
	}
	fd := int(f.Fd())
	for {
		err = unix.Flock(fd, unix.LOCK_EX|unix.LOCK_NB)
		if err != unix.EINTR {
			break
		}
	}
	if err == unix.EWOULDBLOCK {
		return false, fmt.Errorf("lock %s: %w by %s", path, ErrHeld, ReadHolder(path))
	}
	if err != nil {
		return false, fmt.Errorf("lock %s: %w", path, &os.PathError{Op: "flock", Path: path, Err: err})
	}
	var now unix.Stat_t
	if err := unix.Fstatat(d.fd, name, &now, unix.AT_SYMLINK_NOFOLLOW); err != nil ||
		uint64(now.Dev) != uint64(st.Dev) || uint64(now.Ino) != uint64(st.Ino) {
		return true, nil
	}
	// A lock file an earlier version made 0644 is narrowed (by its owner, or root; a 0644 lock of
	// root's that another user took stays as it is).
	if fi.Mode().Perm() != spec.PrivateMode {
		_ = f.Chmod(spec.PrivateMode)
	}
	return false, nil
}

// notAFile is the refusal of what is at the lock's name and is not a regular file; ifmt is its
// st_mode.
func (d *dir) notAFile(path, name string, ifmt uint32) error {
	if ifmt&unix.S_IFMT != unix.S_IFLNK {
		return fmt.Errorf("lock %s: refused: it is a %s, not a regular file; remove it, or set hosts[].lock_path or "+
			"watchdog.lock_path to a file (%s)", path, kind(ifmt), Rule)
	}
	var st unix.Stat_t
	owner := "an unknown user"
	if unix.Fstatat(d.fd, name, &st, unix.AT_SYMLINK_NOFOLLOW) == nil {
		owner = trust.OwnerName(int(st.Uid))
	}
	buf := make([]byte, 4096)
	target := "?"
	if n, err := unix.Readlinkat(d.fd, name, buf); err == nil {
		target = string(buf[:n])
	}
	return fmt.Errorf("lock %s: refused: it is a symlink (owned by %s, to %s): a lock is never opened through a symlink, "+
		"which its owner could point at any file for zero502 to make, lock or chown; remove it (rm %s), and to lock "+
		"another file set hosts[].lock_path or watchdog.lock_path to that file itself (%s)", path, owner, target, path, Rule)
}

// openError is the error of an open of the lock that failed with errno: one this user may not
// open names the file's owner and mode, or its directory's, and says what to do.
func (d *dir) openError(path, name string, errno error) error {
	var st unix.Stat_t
	exists := unix.Fstatat(d.fd, name, &st, unix.AT_SYMLINK_NOFOLLOW) == nil
	if exists && st.Mode&unix.S_IFMT == unix.S_IFLNK {
		return d.notAFile(path, name, uint32(st.Mode))
	}
	if errno != unix.EACCES && errno != unix.EPERM {
		return fmt.Errorf("lock %s: %w", path, &os.PathError{Op: "open", Path: path, Err: errno})
	}
	me := trust.OwnerName(os.Getuid())
	if exists {
		return fmt.Errorf("lock %s: %w to %s: it is owned by %s with mode %04o, and only its owner and root may take a host lock; "+
			"remove it as root (rm %s, while no deploy, watchdog tick or flock(1) script holds it: the next taker makes it "+
			"again, owned by the owner of %s), or run the watchdog as %s, this user (watchdog/systemd/deploy-user.conf), and "+
			"take it in bootstrap scripts as this user too, so that one user owns it", path, errno, me,
			trust.OwnerName(int(st.Uid)), st.Mode&0o7777, path, d.path, me)
	}
	return fmt.Errorf("lock %s: %w to %s: it is not there, and this user may not make it in %s (owned by %s, mode %04o); "+
		"chown %s to this user as root, or %s", path, errno, me, d.path, trust.OwnerName(d.uid), d.mode, d.path, advice)
}

// writeHolder writes the holder record beside the lock, atomically (a temp file renamed over it),
// FileMode, and as the lock itself, the directory owner's when root writes it in another user's
// directory. It is informative: a failure is ignored.
func (d *dir) writeHolder(path string, record []byte) {
	tmp, err := os.CreateTemp(d.path, "."+filepath.Base(holderPath(path))+".tmp-*")
	if err != nil {
		return
	}
	defer os.Remove(tmp.Name()) // a no-op after the rename
	err = tmp.Chmod(spec.FileMode)
	if err == nil && os.Getuid() == 0 && d.uid != 0 {
		err = tmp.Chown(d.uid, d.gid)
	}
	if err == nil {
		_, err = tmp.Write(record)
	}
	if cerr := tmp.Close(); err == nil && cerr == nil {
		_ = os.Rename(tmp.Name(), holderPath(path))
	}
}

// kind names a file type by its st_mode.
func kind(mode uint32) string {
	switch mode & unix.S_IFMT {
	case unix.S_IFREG:
		return "file"
	case unix.S_IFLNK:
		return "symlink"
	case unix.S_IFDIR:
		return "directory"
	case unix.S_IFIFO:
		return "FIFO"
	case unix.S_IFSOCK:
		return "socket"
	case unix.S_IFCHR, unix.S_IFBLK:
		return "device"
	}
	return "special file"
}

// tryShared reports whether another process holds the lock at path, trying a shared lock on it
// and dropping it at once. A missing lock is fs.ErrNotExist, one this user may not open
// fs.ErrPermission; a symlink is never opened.
func tryShared(path string) (bool, error) {
	fd, err := unix.Open(path, openFlags, 0)
	if err != nil {
		var st unix.Stat_t
		if unix.Lstat(path, &st) == nil && st.Mode&unix.S_IFMT == unix.S_IFLNK {
			return false, fmt.Errorf("%s is a symlink: a lock is never opened through one (%s)", path, Rule)
		}
		return false, &os.PathError{Op: "open", Path: path, Err: err}
	}
	defer unix.Close(fd)
	var st unix.Stat_t
	if err := unix.Fstat(fd, &st); err != nil {
		return false, &os.PathError{Op: "fstat", Path: path, Err: err}
	}
	if st.Mode&unix.S_IFMT != unix.S_IFREG {
		return false, fmt.Errorf("%s is a %s, not a regular file (%s)", path, kind(uint32(st.Mode)), Rule)
	}
	for {
		err = unix.Flock(fd, unix.LOCK_SH|unix.LOCK_NB)
		if err != unix.EINTR {
			break
		}
	}
	if err == unix.EWOULDBLOCK {
		return true, nil
	}
	if err != nil {
		return false, &os.PathError{Op: "flock", Path: path, Err: err}
	}
	return false, nil // the close drops the shared lock
}

// readHolder reads a holder record: a regular file, opened without following a symlink, at most
// maxHolder bytes.
func readHolder(path string) ([]byte, error) {
	fd, err := unix.Open(path, openFlags, 0)
	if err != nil {
		return nil, &os.PathError{Op: "open", Path: path, Err: err}
	}
	f := os.NewFile(uintptr(fd), path)
	defer f.Close()
	fi, err := f.Stat()
	if err != nil {
		return nil, err
	}
	if !fi.Mode().IsRegular() {
		return nil, fmt.Errorf("%s is not a regular file", path)
	}
	return io.ReadAll(io.LimitReader(f, maxHolder))
}
