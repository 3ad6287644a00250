package trust

import (
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

func TestCheck(t *testing.T) {
	uid := os.Getuid()
	dir := t.TempDir()
	if err := os.Chmod(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	// t.TempDir lives under os.TempDir (/tmp: world-writable, sticky): this user's directory
	// inside it is trusted.
	if err := Check(dir, uid); err != nil {
		t.Fatalf("the test's own 0755 directory under the sticky %s is refused: %v", os.TempDir(), err)
	}
	file := filepath.Join(dir, "hook.sh")
	if err := os.WriteFile(file, []byte("#!/bin/sh\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name string
		mode os.FileMode
		want string // "" passes the leaf (the tree above may still fail, see below)
	}{
		{"owner-only", 0o700, ""},
		{"read by all", 0o755, ""},
		{"group-writable", 0o775, "mode 0775: group or others may write it"},
		{"world-writable", 0o757, "mode 0757"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if err := os.Chmod(file, tc.mode); err != nil {
				t.Fatal(err)
			}
			err := checkOne(file, uid, true)
			if tc.want == "" && err != nil || tc.want != "" && (err == nil || !strings.Contains(err.Error(), tc.want) || !strings.Contains(err.Error(), "file "+file)) {
				t.Fatalf("checkOne(%s, %04o) = %v, want %q", file, tc.mode, err, tc.want)
			}
		})
	}
	if err := os.Chmod(file, 0o755); err != nil {
		t.Fatal(err)
	}
	// A writable directory anywhere above refuses the file: its files can be swapped.
	sub := filepath.Join(dir, "open")
	if err := os.Mkdir(sub, 0o777); err != nil {
		t.Fatal(err)
	}
	if err := os.Chmod(sub, 0o777); err != nil {
		t.Fatal(err)
	}
	inOpen := filepath.Join(sub, "hook.sh")
	if err := os.WriteFile(inOpen, []byte("#!/bin/sh\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := Check(inOpen, uid); err == nil || !strings.Contains(err.Error(), "directory "+sub+" has mode 0777") {
		t.Fatalf("a file in a 0777 directory: %v, want the directory named", err)
	}
	// A sticky directory is the exception: others cannot rename or remove what is not theirs.
	sticky := filepath.Join(dir, "sticky")
	if err := os.Mkdir(sticky, 0o777); err != nil {
		t.Fatal(err)
	}
	if err := os.Chmod(sticky, 0o777|os.ModeSticky); err != nil {
		t.Fatal(err)
	}
	inSticky := filepath.Join(sticky, "hook.sh")
	if err := os.WriteFile(inSticky, []byte("#!/bin/sh\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := Check(inSticky, uid); err != nil {
		t.Fatalf("this user's file in a sticky 1777 directory: %v, want trusted", err)
	}
	// A link is judged by what it points to.
	link := filepath.Join(dir, "link.sh")
	if err := os.Symlink(inOpen, link); err != nil {
		t.Fatal(err)
	}
	if err := Check(link, uid); err == nil || !strings.Contains(err.Error(), "links to") {
		t.Fatalf("a link to a file in a 0777 directory: %v, want the link's target named", err)
	}
	// Another owner (root owns /etc; run as root, the rule accepts root): a file owned by uid+1
	// is refused when this user is not root.
	if uid != 0 {
		if err := checkOne("/etc/hostname", uid, true); err != nil {
			t.Fatalf("a root-owned 0644 file is refused: %v", err)
		}
	}
	if err := checkOne("/etc/hostname", uid+12345, true); uid == 0 && err != nil {
		t.Fatalf("root's file is refused for another user, though root is trusted: %v", err)
	}
	if err := Check("/bin/sh", uid); err != nil {
		t.Fatalf("/bin/sh is refused: %v", err)
	}
	if err := Check(filepath.Join(dir, "absent"), uid); err == nil {
		t.Fatal("a missing file is trusted")
	}
}

func TestCheckRefusesAnotherUsersFile(t *testing.T) {
	dir := t.TempDir()
	file := filepath.Join(dir, "theirs")
	if err := os.WriteFile(file, nil, 0o644); err != nil {
		t.Fatal(err)
	}
	me, judge := os.Getuid(), os.Getuid()+1 // as a user who is neither root nor the owner
	if me == 0 {
		// As root: the file goes to another user, root judges it.
		if err := os.Chown(file, 12345, 12345); err != nil {
			t.Fatal(err)
		}
		judge = 0
	}
	if err := checkOne(file, judge, true); err == nil || !strings.Contains(err.Error(), "owned by uid") {
		t.Fatalf("another user's file: %v, want refused by its owner", err)
	}
}

// MkdirAll makes a missing directory only below a trusted one: under a directory others may
// write it makes nothing and names that directory; under this user's own it makes every level.
func TestMkdirAllMakesNothingBelowAnUntrustedDirectory(t *testing.T) {
	uid := os.Getuid()
	open := filepath.Join(t.TempDir(), "open")
	if err := os.Mkdir(open, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.Chmod(open, 0o777); err != nil {
		t.Fatal(err)
	}
	err := MkdirAll(filepath.Join(open, "zero502", "host-a"), 0o750, uid)
	if err == nil || !strings.Contains(err.Error(), open+" has mode 0777") {
		t.Fatalf("MkdirAll below a 0777 directory = %v; want a refusal naming %s and its mode", err, open)
	}
	if _, err := os.Stat(filepath.Join(open, "zero502")); err == nil {
		t.Fatal("MkdirAll made a directory below the refused one")
	}
	if err := os.Chmod(open, 0o700); err != nil {
		t.Fatal(err)
	}
	made := filepath.Join(open, "zero502", "host-a")
	if err := MkdirAll(made, 0o750, uid); err != nil {
		t.Fatalf("MkdirAll below this user's 0700 directory: %v", err)
	}
	if fi, err := os.Stat(made); err != nil || !fi.IsDir() || fi.Mode().Perm()&^0o750 != 0 {
		t.Fatalf("made %s: %v %v; want a directory of mode 0750 or less", made, fi, err)
	}
}

// Program finds a program as exec.LookPath does and returns its path only when Check trusts it.
func TestProgramIsFoundThenChecked(t *testing.T) {
	uid := os.Getuid()
	if p, err := Program("sh", uid); err != nil || !filepath.IsAbs(p) {
		t.Fatalf("Program(sh) = %q, %v; want /bin/sh's absolute path", p, err)
	}
	var notFound *exec.Error
	if _, err := Program("no-such-program-zero502", uid); !errors.As(err, &notFound) {
		t.Fatalf("a missing program: %v; want exec.LookPath's *exec.Error", err)
	}
	open := filepath.Join(t.TempDir(), "open")
	if err := os.Mkdir(open, 0o755); err != nil {
		t.Fatal(err)
	}
	prog := filepath.Join(open, "p.sh")
	if err := os.WriteFile(prog, []byte("#!/bin/sh\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.Chmod(open, 0o777); err != nil {
		t.Fatal(err)
	}
	if _, err := Program(prog, uid); err == nil || !strings.Contains(err.Error(), "refused to run "+prog) ||
		!strings.Contains(err.Error(), open+" has mode 0777") || !strings.Contains(err.Error(), ProgramRule) {
		t.Fatalf("a program in a 0777 directory: %v; want refused naming it, the directory and the rule", err)
	}
	if err := os.Chmod(open, 0o755); err != nil {
		t.Fatal(err)
	}
	if p, err := Program(prog, uid); err != nil || p != realPath(t, prog) {
		t.Fatalf("a program in this user's 0755 directory: %q, %v; want it trusted", p, err)
	}
}

// Command checks argv[0] as Program does, and every later argument that names a regular file:
// the script sh or python3 reads is what runs. Words, options and directories are not files.
func TestCommandChecksTheScriptAnInterpreterReads(t *testing.T) {
	uid := os.Getuid()
	dir := t.TempDir()
	open := filepath.Join(dir, "open")
	if err := os.Mkdir(open, 0o755); err != nil {
		t.Fatal(err)
	}
	script := filepath.Join(open, "pre.sh")
	if err := os.WriteFile(script, []byte("exit 0\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if p, err := Command([]string{"sh", "-e", script, "--flag", "word", open}, "", uid); err != nil || !filepath.IsAbs(p) {
		t.Fatalf("sh with a script in this user's 0755 directory: %q, %v; want it trusted", p, err)
	}
	if err := os.Chmod(open, 0o777); err != nil {
		t.Fatal(err)
	}
	if _, err := Command([]string{"sh", "-e", script}, "", uid); err == nil || !strings.Contains(err.Error(), "with the file "+script) ||
		!strings.Contains(err.Error(), open+" has mode 0777") || !strings.Contains(err.Error(), ProgramRule) {
		t.Fatalf("sh with a script in a 0777 directory: %v; want refused naming the script, the directory and the rule", err)
	}
	// a relative name is the file in dir
	if _, err := Command([]string{"sh", "pre.sh"}, open, uid); err == nil || !strings.Contains(err.Error(), "with the file pre.sh") {
		t.Fatalf("sh pre.sh in the 0777 directory: %v; want refused", err)
	}
	if _, err := Command([]string{"sh", "pre.sh"}, dir, uid); err != nil {
		t.Fatalf("sh pre.sh where no such file is: %v; want no refusal (a word, not a file)", err)
	}
}
