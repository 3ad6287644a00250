// Package trust owns one rule: which files zero502 may execute or believe. A file is trusted when
// it and every directory above it are owned by root or by the user zero502 runs as, and none of
// them can be written by anyone else (no group or world write bit). A sticky directory such as
// /tmp is the one exception: its other users may add files but cannot rename or remove what
// they do not own, so a directory of this user's inside it stays this user's.
// A file that fails the rule is refused with the path, its owner and mode, and what to change.
package trust

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"os/exec"
	"os/user"
	"path/filepath"
	"strconv"
)

// Check resolves path (symlinks followed) and reports why it may not be trusted, or nil when it
// may. uid is the user zero502 runs as (os.Getuid()).
func Check(path string, uid int) error {
	abs, err := filepath.Abs(path)
	if err != nil {
		return fmt.Errorf("%s: %w", path, err)
	}
	real, err := filepath.EvalSymlinks(abs)
	if err != nil {
		return fmt.Errorf("%s: %w", path, err)
	}
	for p := real; ; p = filepath.Dir(p) {
		if err := checkOne(p, uid, p == real); err != nil {
			if real != abs {
				return fmt.Errorf("%s (the file %s links to): %w", path, real, err)
			}
			return err
		}
		if p == filepath.Dir(p) {
			return nil
		}
	}
}

func checkOne(p string, uid int, leaf bool) error {
	fi, err := os.Stat(p)
	if err != nil {
		return err
	}
	what := "directory"
	if leaf && !fi.IsDir() {
		what = "file"
	}
	if owner, ok := ownerOf(fi); ok && owner != 0 && owner != uid {
		return fmt.Errorf("%s %s is owned by %s, neither root nor this user (uid %d): another user could change it; "+
			"chown it to root or to this user", what, p, ownerName(owner), uid)
	}
	if fi.Mode().Perm()&0o022 != 0 && !(fi.IsDir() && fi.Mode()&os.ModeSticky != 0) {
		return fmt.Errorf("%s %s has mode %04o: group or others may write it, so another user could change what runs; "+
			"chmod go-w %s, or keep the file in a directory only you can write", what, p, fi.Mode().Perm(), p)
	}
	return nil
}

// ownerName is uid as an error names it: "uid 998 (zero502-svc)", or "uid 998" when the user
// database does not know it.
func ownerName(uid int) string {
	if u, err := user.LookupId(strconv.Itoa(uid)); err == nil {
		return fmt.Sprintf("uid %d (%s)", uid, u.Username)
	}
	return fmt.Sprintf("uid %d", uid)
}

// MkdirAll is os.MkdirAll(path, mode) below a trusted directory only: the nearest directory of
// path that exists already (path itself, or one above it) must pass Check, so nothing is made
// inside a directory another user owns or may write (one they made first, say, at a predictable
// path in /tmp). The error of a refusal is Check's, naming the directory, its owner and mode.
func MkdirAll(path string, mode os.FileMode, uid int) error {
	p, err := filepath.Abs(path)
	if err != nil {
		return fmt.Errorf("%s: %w", path, err)
	}
	for {
		if _, err := os.Stat(p); err == nil {
			break
		} else if !errors.Is(err, fs.ErrNotExist) || p == filepath.Dir(p) {
			return err
		}
		p = filepath.Dir(p)
	}
	if err := Check(p, uid); err != nil {
		return err
	}
	return os.MkdirAll(path, mode)
}

// ProgramRule is the rule a program zero502 runs (a hook, secrets.command) must pass.
const ProgramRule = "a program zero502 runs must be owned by root or this user, and neither it nor a directory above it writable by anyone else"

// Program is the path of the program name (exec.LookPath: a name without a slash is looked up
// on PATH), once Check trusts it: run that path, not name. A program that cannot be found is
// exec.LookPath's error (an *exec.Error, unchanged); one Check refuses is refused naming the
// program, Check's reason and ProgramRule, before it ever runs.
func Program(name string, uid int) (string, error) {
	prog, err := exec.LookPath(name)
	if err != nil {
		return "", err
	}
	if err := Check(prog, uid); err != nil {
		return "", fmt.Errorf("refused to run %s: %w (%s)", prog, err, ProgramRule)
	}
	return prog, nil
}

// CheckPrivate is Check for a file that holds secrets: trusted, and besides readable by its
// owner alone (no permission at all for group or others).
func CheckPrivate(path string, uid int) error {
	fi, err := os.Stat(path)
	if err != nil {
		return err
	}
	if perm := fi.Mode().Perm(); perm&0o077 != 0 {
		return fmt.Errorf("%s has mode %04o: group or others may read the secrets in it; chmod 600 %s", path, perm, path)
	}
	return Check(path, uid)
}
