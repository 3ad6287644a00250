// Package trust owns one rule: which files zero502 may execute or believe. A file is trusted when
// it and every directory above it are owned by root or by the user zero502 runs as, and none of
// them can be written by anyone else (no group or world write bit). A sticky directory such as
// /tmp is the one exception: its other users may add files but cannot rename or remove what
// they do not own, so a directory of this user's inside it stays this user's.
// A path is judged as the kernel looks it up: every directory that holds a name on the way (one of
// the path as given, or of a symlink's target) must pass, and a symlink must be owned by root or
// this user, for a link in a directory another user may write can be swapped after the check.
// A file that fails the rule is refused with the path, its owner and mode, and what to change.
// CheckInfo judges one name by the rule alone, such as an open descriptor's fstat (infra/hostlock
// judges the lock it opened so; it asks more of the lock's directory: no sticky exception).
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
	"strings"
)

// ErrRefused is wrapped by every refusal of the rule (Check, CheckPrivate, Program, Open, MkdirAll),
// so a caller can tell "another user could change this" from an I/O error such as a missing file.
var ErrRefused = errors.New("refused by the trust rule")

// refusal is a refusal of the rule: its text is the reason alone, and errors.Is(it, ErrRefused).
type refusal struct{ error }

func (r refusal) Unwrap() []error { return []error{r.error, ErrRefused} }

// maxLinks bounds the symlinks one path may go through (Linux's limit is 40).
const maxLinks = 255

// Check reports why path may not be trusted, or nil when it may. uid is the user zero502 runs as
// (os.Getuid()). Every name on the way to the file is judged as the kernel looks it up: each
// directory that holds a name (a directory or a symlink of the path as given, or of a link's
// target) and the file itself must pass the rule, and a symlink must be owned by root or this
// user; so neither a link nor anything it leads through can be swapped by another user.
func Check(path string, uid int) error {
	_, _, err := resolve(path, uid)
	return err
}

// resolve is the real path of path (absolute, every symlink followed) and its Lstat, once every
// directory looked up on the way, every symlink followed and the file itself pass the rule.
func resolve(path string, uid int) (string, os.FileInfo, error) {
	abs, err := absolute(path)
	if err != nil {
		return "", nil, err
	}
	root := filepath.VolumeName(abs) + string(filepath.Separator)
	var via []string // the links followed so far, "link links to target", for the error
	fail := func(err error) error {
		if len(via) > 0 {
			return refusal{fmt.Errorf("%s (the symlink %s): %w", path, strings.Join(via, ", then "), err)}
		}
		return refusal{err}
	}
	fi, err := os.Lstat(root)
	if err != nil {
		return "", nil, err
	}
	if err := checkInfo(root, fi, uid, root == abs); err != nil {
		return "", nil, fail(err)
	}
	cur, rest, links := root, splitPath(abs[len(root):]), 0
	for len(rest) > 0 {
		name := rest[0]
		rest = rest[1:]
		switch name {
		case "", ".":
			continue
		case "..":
			// cur is real (no links) and was checked with all above it: its parent too.
			cur = filepath.Dir(cur)
			continue
		}
		next := filepath.Join(cur, name)
		if fi, err = os.Lstat(next); err != nil {
			if len(via) > 0 {
				return "", nil, fmt.Errorf("%s (the symlink %s): %w", path, strings.Join(via, ", then "), err)
			}
			return "", nil, err
		}
		if fi.Mode()&os.ModeSymlink == 0 {
			if err := checkInfo(next, fi, uid, len(rest) == 0); err != nil {
				return "", nil, fail(err)
			}
			cur = next
			continue
		}
		// A symlink: its directory (cur) passed, so only its owner may replace it (in a sticky
		// directory, which lets others add names, the owner still may); its mode means nothing.
		if owner, ok := ownerOf(fi); ok && owner != 0 && owner != uid {
			return "", nil, fail(fmt.Errorf("symlink %s is owned by %s, neither root nor this user (uid %d): its owner could "+
				"point it elsewhere; chown -h it to root or to this user, or name the file it links to", next, OwnerName(owner), uid))
		}
		if links++; links > maxLinks {
			return "", nil, fmt.Errorf("%s: more than %d symlinks", path, maxLinks)
		}
		target, err := os.Readlink(next)
		if err != nil {
			return "", nil, err
		}
		via = append(via, next+" links to "+target)
		if filepath.IsAbs(target) {
			tvol := filepath.VolumeName(target)
			if tvol+string(filepath.Separator) != root {
				// Another volume (Windows): its root is judged as the first one was.
				root = tvol + string(filepath.Separator)
				rfi, err := os.Lstat(root)
				if err != nil {
					return "", nil, err
				}
				if err := checkInfo(root, rfi, uid, false); err != nil {
					return "", nil, fail(err)
				}
			}
			cur = root
			target = target[len(tvol):]
		}
		rest = append(splitPath(target), rest...)
	}
	// The last name may have been ".." or "."; cur and all above it passed.
	if fi, err = os.Lstat(cur); err != nil {
		return "", nil, err
	}
	return cur, fi, nil
}

// absolute is path made absolute as the kernel looks it up, from the working directory. Not
// filepath.Abs: it cleans the path, crossing out "dir/.." by name, while the kernel takes a ".."
// from where dir leads when dir is a symlink (resolve's walk takes it so).
func absolute(path string) (string, error) {
	if filepath.IsAbs(path) {
		return path, nil
	}
	wd, err := os.Getwd()
	if err != nil {
		return "", fmt.Errorf("%s: %w", path, err)
	}
	return wd + string(filepath.Separator) + path, nil
}

// parentName is p without its last name, nothing cleaned (absolute's reason); the root is its
// own parent.
func parentName(p string) string {
	vol := len(filepath.VolumeName(p))
	i := len(p)
	for i > vol+1 && os.IsPathSeparator(p[i-1]) {
		i--
	}
	for i > vol+1 && !os.IsPathSeparator(p[i-1]) {
		i--
	}
	for i > vol+1 && os.IsPathSeparator(p[i-1]) {
		i--
	}
	return p[:i]
}

// splitPath is p's names, separator by separator (empty ones included: resolve skips them).
func splitPath(p string) []string {
	return strings.FieldsFunc(p, func(r rune) bool { return os.IsPathSeparator(uint8(r)) })
}

// CheckInfo is the rule for one name alone, p, whose Lstat, or fstat of an open descriptor, is
// fi: owned by root or uid, and writable by no one else (a sticky directory excepted). Nothing
// above p is judged: a caller that opened p at a place Check judged (infra/hostlock opens its lock
// in a directory Check trusts) judges what it opened with it, so what it uses is what passed.
// A refusal wraps ErrRefused.
func CheckInfo(p string, fi os.FileInfo, uid int) error {
	return checkInfo(p, fi, uid, true)
}

func checkOne(p string, uid int, leaf bool) error {
	fi, err := os.Stat(p)
	if err != nil {
		return err
	}
	return checkInfo(p, fi, uid, leaf)
}

// checkInfo is the rule for p, whose Lstat (or Stat) is fi; leaf names a non-directory "file".
func checkInfo(p string, fi os.FileInfo, uid int, leaf bool) error {
	what := "directory"
	if leaf && !fi.IsDir() {
		what = "file"
	}
	if owner, ok := ownerOf(fi); ok && owner != 0 && owner != uid {
		return refusal{fmt.Errorf("%s %s is owned by %s, neither root nor this user (uid %d): another user could change it; "+
			"chown it to root or to this user", what, p, OwnerName(owner), uid)}
	}
	if fi.Mode().Perm()&0o022 != 0 && !(fi.IsDir() && fi.Mode()&os.ModeSticky != 0) {
		return refusal{fmt.Errorf("%s %s has mode %04o: group or others may write it, so another user could change what runs; "+
			"chmod go-w %s, or keep the file in a directory only you can write", what, p, fi.Mode().Perm(), p)}
	}
	return nil
}

// Open opens path for reading once Check trusts it, and checks the open file (fstat) is the file
// Check judged and still passes the rule: what is read is what was checked. Only a regular file
// is opened (a FIFO would block the reader, a device never end). A missing file is the open's
// error (errors.Is(err, fs.ErrNotExist)); a refusal wraps ErrRefused. A file replaced between
// the check and the open (a spec published by an atomic rename meanwhile) is checked and opened
// again, a few times, before that is a refusal.
func Open(path string, uid int) (*os.File, error) {
	const attempts = 5
	for i := 1; ; i++ {
		f, err := openChecked(path, uid)
		var changed errReplaced
		if i < attempts && errors.As(err, &changed) {
			continue
		}
		return f, err
	}
}

// errReplaced is openChecked's refusal of a file that was replaced between the check and the open.
type errReplaced struct{ refusal }

// openChecked is one attempt of Open.
func openChecked(path string, uid int) (*os.File, error) {
	real, fi, err := resolve(path, uid)
	if err != nil {
		return nil, err
	}
	if !fi.Mode().IsRegular() {
		return nil, refusal{fmt.Errorf("%s is not a regular file (%s): only a file is read", path, fi.Mode().Type())}
	}
	f, err := os.Open(real)
	if err != nil {
		return nil, err
	}
	ofi, err := f.Stat()
	if err == nil && !os.SameFile(fi, ofi) {
		err = errReplaced{refusal{fmt.Errorf("%s: the file opened (%s) is not the one checked: it changed between the check and the open", path, real)}}
	}
	if err == nil {
		err = checkInfo(real, ofi, uid, true)
	}
	if err != nil {
		f.Close()
		return nil, err
	}
	return f, nil
}

// OwnerName is uid as an error names it: "uid 998 (zero502-svc)", or "uid 998" when the user
// database does not know it.
func OwnerName(uid int) string {
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
	p, err := absolute(path)
	if err != nil {
		return err
	}
	for {
		if _, err := os.Stat(p); err == nil {
			break
		} else if !errors.Is(err, fs.ErrNotExist) || p == parentName(p) {
			return err
		}
		p = parentName(p)
	}
	if err := Check(p, uid); err != nil {
		return err
	}
	return os.MkdirAll(path, mode)
}

// ProgramRule is the rule a program zero502 runs (a hook, secrets.command, a process-runtime
// service) must pass, and with it a file named among its arguments (Command).
const ProgramRule = "a program zero502 runs, and a file named among its arguments (the script an interpreter reads), " +
	"must be owned by root or the user it runs as, and neither it nor a directory above it writable by anyone else"

// Program is the path to run for the program name (exec.LookPath: a name without a slash is
// looked up on PATH), once Check trusts it: its real path, every symlink resolved, so what runs
// is the file that was checked, not a name a link could redirect afterwards. Run that path, not
// name (argv[0] is then the real path; set cmd.Args[0] to name where a program dispatches on
// it). A program that cannot be found is exec.LookPath's error (an *exec.Error, unchanged); one
// Check refuses is refused naming the program, Check's reason and ProgramRule, before it runs.
func Program(name string, uid int) (string, error) {
	prog, err := exec.LookPath(name)
	if err != nil {
		return "", err
	}
	real, _, err := resolve(prog, uid)
	if err != nil {
		return "", fmt.Errorf("refused to run %s: %w (%s)", prog, err, ProgramRule)
	}
	return real, nil
}

// Command is Program for argv[0], and besides Check for every later argument that names an
// existing file or directory (relative to dir; "" is the working directory): the script an
// interpreter reads (sh hooks/pre.sh, python3 app.py), or the directory it runs (python3 DIR runs
// DIR/__main__.py, node DIR its index.js), is as much what runs as the interpreter is. An
// argument with a slash that names nothing yet, in a directory that exists, is judged by that
// directory: one another user may write (even a sticky one, such as /tmp) lets them make the
// script before it runs. uid is the user the command runs as: root or that user may own what it
// runs. A refusal names the argument, Check's reason and ProgramRule.
func Command(argv []string, dir string, uid int) (string, error) {
	prog, err := Program(argv[0], uid)
	if err != nil {
		return "", err
	}
	for _, arg := range argv[1:] {
		p := arg
		if dir != "" && !filepath.IsAbs(p) {
			p = filepath.Join(dir, p)
		}
		if err := checkArgument(p, arg, uid); err != nil {
			return "", fmt.Errorf("refused to run %s with the file %s: %w (%s)", argv[0], arg, err, ProgramRule)
		}
	}
	return prog, nil
}

// checkArgument is Command's rule for one argument arg, at path p.
func checkArgument(p, arg string, uid int) error {
	fi, err := os.Stat(p)
	switch {
	case err == nil && (fi.Mode().IsRegular() || fi.IsDir()):
		return Check(p, uid)
	case err == nil, !errors.Is(err, fs.ErrNotExist) || !strings.ContainsRune(arg, filepath.Separator):
		return nil // a device, or not a path: an option, a word, a URL
	}
	parent := filepath.Dir(p)
	pfi, err := os.Stat(parent)
	if err != nil || !pfi.IsDir() {
		return nil // no such directory either: not a path here
	}
	if err := Check(parent, uid); err != nil {
		return err
	}
	if pfi.Mode().Perm()&0o022 != 0 {
		return refusal{fmt.Errorf("%s does not exist yet, and its directory %s has mode %04o: another user could make it before it runs",
			p, parent, pfi.Mode().Perm())}
	}
	return nil
}

// CheckPrivate is Check for a file that holds secrets: trusted, and besides readable by its
// owner alone (no permission at all for group or others).
func CheckPrivate(path string, uid int) error {
	fi, err := os.Stat(path)
	if err != nil {
		return err
	}
	if perm := fi.Mode().Perm(); perm&0o077 != 0 {
		return refusal{fmt.Errorf("%s has mode %04o: group or others may read the secrets in it; chmod 600 %s", path, perm, path)}
	}
	return Check(path, uid)
}
