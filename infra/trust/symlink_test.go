package trust

import (
	"errors"
	"io"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// realPath is p with every symlink resolved (t.TempDir may itself lie behind one, as on macOS).
func realPath(t *testing.T, p string) string {
	t.Helper()
	r, err := filepath.EvalSymlinks(p)
	if err != nil {
		t.Fatal(err)
	}
	return r
}

// mkdir makes dir with exactly mode (chmod after mkdir: the umask is not applied).
func mkdir(t *testing.T, dir string, mode os.FileMode) string {
	t.Helper()
	if err := os.Mkdir(dir, 0o700); err != nil {
		t.Fatal(err)
	}
	if err := os.Chmod(dir, mode); err != nil {
		t.Fatal(err)
	}
	return dir
}

// trustedRoot is a fresh 0755 directory of this user's: everything below it is judged on its own.
func trustedRoot(t *testing.T) string {
	t.Helper()
	root := t.TempDir()
	if err := os.Chmod(root, 0o755); err != nil {
		t.Fatal(err)
	}
	return root
}

// The reviewer's case: a hook named through a symlink that sits in a world-writable (0777, not
// sticky) directory, pointing at a trusted directory. The link's target passes, but anyone may
// swap the link between the check and the run, so the program is refused before it runs, naming
// the directory that holds the link, its mode and the rule. (Mode bits, not owners: this holds
// when the tests run as root.)
func TestProgramRefusesALinkInAWritableDirectory(t *testing.T) {
	uid := os.Getuid()
	root := trustedRoot(t)
	real := mkdir(t, filepath.Join(root, "real"), 0o755)
	evil := mkdir(t, filepath.Join(root, "evil"), 0o755)
	shared := mkdir(t, filepath.Join(root, "shared"), 0o777)
	if err := os.WriteFile(filepath.Join(real, "hook"), []byte("#!/bin/sh\necho trusted\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(evil, "hook"), []byte("#!/bin/sh\necho ATTACKER\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	link := filepath.Join(shared, "hooks")
	if err := os.Symlink(real, link); err != nil {
		t.Fatal(err)
	}
	hook := filepath.Join(link, "hook")
	prog, err := Program(hook, uid)
	if err == nil {
		// What any user can do in shared, between the check and the exec.
		if err := os.Remove(link); err != nil {
			t.Fatal(err)
		}
		if err := os.Symlink(evil, link); err != nil {
			t.Fatal(err)
		}
		out, _ := exec.Command(prog).Output()
		t.Fatalf("Program(%s) through a link in the 0777 %s = %q, trusted; after the link was swapped it ran: %s", hook, shared, prog, out)
	}
	if !errors.Is(err, ErrRefused) || !strings.Contains(err.Error(), "refused to run "+hook) ||
		!strings.Contains(err.Error(), "directory "+shared+" has mode 0777") || !strings.Contains(err.Error(), ProgramRule) {
		t.Fatalf("Program(%s): %v; want refused naming the program, the directory %s holding the link, its mode and the rule", hook, err, shared)
	}
	if err := Check(hook, uid); err == nil || !strings.Contains(err.Error(), shared+" has mode 0777") {
		t.Fatalf("Check(%s): %v; want refused naming %s", hook, err, shared)
	}
}

// A program named through links that pass (each in a directory only this user can write) is
// trusted, and Program returns the file itself, every link resolved: what runs is what was
// checked, even if a link is changed afterwards.
func TestProgramReturnsTheFileItChecked(t *testing.T) {
	uid := os.Getuid()
	root := trustedRoot(t)
	real := mkdir(t, filepath.Join(root, "real"), 0o755)
	other := mkdir(t, filepath.Join(root, "other"), 0o755)
	target := filepath.Join(real, "hook")
	if err := os.WriteFile(target, []byte("#!/bin/sh\necho trusted\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(other, "hook"), []byte("#!/bin/sh\necho other\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	links := mkdir(t, filepath.Join(root, "links"), 0o755)
	dirLink := filepath.Join(links, "hooks")
	if err := os.Symlink("../real", dirLink); err != nil { // relative, through ".."
		t.Fatal(err)
	}
	fileLink := filepath.Join(links, "run")
	if err := os.Symlink(filepath.Join(dirLink, "hook"), fileLink); err != nil { // a link to a link
		t.Fatal(err)
	}
	want := realPath(t, target)
	for _, name := range []string{filepath.Join(dirLink, "hook"), fileLink} {
		prog, err := Program(name, uid)
		if err != nil || prog != want {
			t.Fatalf("Program(%s) = %q, %v; want the file it links to, %s", name, prog, err, want)
		}
	}
	prog, _ := Program(fileLink, uid)
	if err := os.Remove(dirLink); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(other, dirLink); err != nil {
		t.Fatal(err)
	}
	if out, err := exec.Command(prog).Output(); err != nil || strings.TrimSpace(string(out)) != "trusted" {
		t.Fatalf("%s after the link changed: %q, %v; want the checked file to run", prog, out, err)
	}
}

// Every directory on the way is judged, not only those above the final file: a link whose target
// is a second link in a 0777 directory is refused (the second link could be swapped), naming that
// directory and the links followed to reach it.
func TestCheckJudgesEveryDirectoryALinkLeadsThrough(t *testing.T) {
	uid := os.Getuid()
	root := trustedRoot(t)
	real := mkdir(t, filepath.Join(root, "real"), 0o755)
	target := filepath.Join(real, "hook")
	if err := os.WriteFile(target, []byte("#!/bin/sh\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	open := mkdir(t, filepath.Join(root, "open"), 0o777)
	second := filepath.Join(open, "second")
	if err := os.Symlink(target, second); err != nil {
		t.Fatal(err)
	}
	first := filepath.Join(root, "first")
	if err := os.Symlink(second, first); err != nil {
		t.Fatal(err)
	}
	err := Check(first, uid)
	if !errors.Is(err, ErrRefused) || !strings.Contains(err.Error(), "directory "+open+" has mode 0777") ||
		!strings.Contains(err.Error(), first+" links to "+second) {
		t.Fatalf("Check(%s) through a link in the 0777 %s: %v; want refused naming the directory and the link", first, open, err)
	}
	if _, err := Program(first, uid); err == nil {
		t.Fatalf("Program(%s) through a link in the 0777 %s: trusted", first, open)
	}
}

// In a sticky directory others may add names and remove their own: a symlink there owned by
// another user could be pointed elsewhere by them, so it is refused, naming it and its owner.
func TestCheckRefusesAnotherUsersLinkInAStickyDirectory(t *testing.T) {
	if os.Getuid() != 0 {
		t.Skip("making a symlink another user owns needs root")
	}
	root := trustedRoot(t)
	real := mkdir(t, filepath.Join(root, "real"), 0o755)
	target := filepath.Join(real, "hook")
	if err := os.WriteFile(target, []byte("#!/bin/sh\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	sticky := mkdir(t, filepath.Join(root, "sticky"), 0o777|os.ModeSticky)
	link := filepath.Join(sticky, "hook")
	if err := os.Symlink(target, link); err != nil {
		t.Fatal(err)
	}
	if err := Check(link, 0); err != nil {
		t.Fatalf("root's link in a sticky directory to a trusted file: %v; want trusted", err)
	}
	if err := os.Lchown(link, 12345, 12345); err != nil {
		t.Fatal(err)
	}
	if err := Check(link, 0); !errors.Is(err, ErrRefused) || !strings.Contains(err.Error(), "symlink "+link+" is owned by uid 12345") {
		t.Fatalf("Check of a link uid 12345 owns in sticky %s: %v; want refused naming the link and its owner", sticky, err)
	}
}

// Open reads a trusted file and refuses, before reading, one another user could have written;
// a missing file is fs.ErrNotExist, not a refusal.
func TestOpenChecksBeforeItReads(t *testing.T) {
	uid := os.Getuid()
	root := trustedRoot(t)
	file := filepath.Join(root, "spec.json")
	if err := os.WriteFile(file, []byte("ok"), 0o600); err != nil {
		t.Fatal(err)
	}
	f, err := Open(file, uid)
	if err != nil {
		t.Fatalf("Open of this user's 0600 file: %v", err)
	}
	data, err := io.ReadAll(f)
	f.Close()
	if err != nil || string(data) != "ok" {
		t.Fatalf("read %q, %v", data, err)
	}
	if err := os.Chmod(root, 0o777); err != nil {
		t.Fatal(err)
	}
	if f, err := Open(file, uid); !errors.Is(err, ErrRefused) || !strings.Contains(err.Error(), root+" has mode 0777") {
		if f != nil {
			f.Close()
		}
		t.Fatalf("Open of a file in the 0777 %s: %v; want refused naming it", root, err)
	}
	if err := os.Chmod(root, 0o755); err != nil {
		t.Fatal(err)
	}
	if _, err := Open(filepath.Join(root, "absent"), uid); !errors.Is(err, fs.ErrNotExist) || errors.Is(err, ErrRefused) {
		t.Fatalf("Open of a missing file: %v; want fs.ErrNotExist, not a refusal", err)
	}
}

// A ".." after a symlink is judged as the kernel takes it: from where the link leads, not by
// crossing out the link's name. trusted/link leads to open/sub, so trusted/link/../secret is
// open/secret to every open(2); its directory (0777) is refused, however trusted
// trusted/secret, the path with "link/.." crossed out, is. Open reads the file the path names
// (or nothing), never another one.
func TestADotDotAfterASymlinkIsJudgedWhereTheLinkLeads(t *testing.T) {
	uid := os.Getuid()
	root := trustedRoot(t)
	trusted := mkdir(t, filepath.Join(root, "trusted"), 0o755)
	open := mkdir(t, filepath.Join(root, "open"), 0o777)
	mkdir(t, filepath.Join(open, "sub"), 0o755)
	if err := os.WriteFile(filepath.Join(trusted, "secret"), []byte("trusted\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(open, "secret"), []byte("ATTACKER\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(filepath.Join(open, "sub"), filepath.Join(trusted, "link")); err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(trusted, "link") + "/../secret"
	if data, err := os.ReadFile(path); err != nil || string(data) != "ATTACKER\n" {
		t.Fatalf("the kernel reads %q (%v) at %s; the test's layout is wrong", data, err, path)
	}
	err := Check(path, uid)
	if err == nil || !errors.Is(err, ErrRefused) || !strings.Contains(err.Error(), open) || !strings.Contains(err.Error(), "0777") {
		t.Errorf("Check(%s) = %v; want a refusal naming %s (mode 0777), where the kernel looks the file up", path, err, open)
	}
	if err := CheckPrivate(path, uid); err == nil {
		t.Errorf("CheckPrivate(%s) = nil; want the refusal Check gives", path)
	}
	if f, err := Open(path, uid); err == nil {
		data, _ := io.ReadAll(f)
		f.Close()
		t.Errorf("Open(%s) read %q; want a refusal (the file the path names is in a 0777 directory)", path, data)
	}
}

// MkdirAll takes a ".." after a symlink as the kernel does too: trusted/link/../made is made in
// open (0777), so it is refused and nothing is made there.
func TestMkdirAllJudgesADotDotAfterASymlinkWhereTheLinkLeads(t *testing.T) {
	root := trustedRoot(t)
	trusted := mkdir(t, filepath.Join(root, "trusted"), 0o755)
	open := mkdir(t, filepath.Join(root, "open"), 0o777)
	mkdir(t, filepath.Join(open, "sub"), 0o755)
	if err := os.Symlink(filepath.Join(open, "sub"), filepath.Join(trusted, "link")); err != nil {
		t.Fatal(err)
	}
	err := MkdirAll(filepath.Join(trusted, "link")+"/../made/deeper", 0o750, os.Getuid())
	if err == nil || !errors.Is(err, ErrRefused) || !strings.Contains(err.Error(), "0777") {
		t.Errorf("MkdirAll through link/..: %v; want a refusal naming the 0777 directory it would make it in", err)
	}
	if _, serr := os.Stat(filepath.Join(open, "made")); serr == nil {
		t.Errorf("MkdirAll made %s, in a directory anyone may write", filepath.Join(open, "made"))
	}
}
