package deployer

import (
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"os/user"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"testing/fstest"
	"time"

	"github.com/zero502/zero502/internal/testrig/osuser"
)

// installUnits are two units written like the shipped ones, with text a shell would expand or
// end early if the script did not quote it.
var installUnits = fstest.MapFS{
	"zero502-lb.service": {Data: []byte("[Service]\nEnvironmentFile=-/etc/zero502/lb.env\n" +
		"ExecStart=/usr/local/bin/zero502 lb --config /etc/zero502/zero502.yaml $LB_ARGS\n" +
		"# it's `quoted` \\ \"twice\"\n")},
	"zero502-mesh.service": {Data: []byte("[Service]\nExecStart=/usr/local/bin/zero502 mesh serve $MESH_ARGS\n")},
	"README":               {Data: []byte("not a unit")},
}

// fakeBinary is the "binary" the install tests send: a script that answers `version`.
const fakeBinary = "#!/bin/sh\necho \"fake zero502 $1\"\n"

// installRun runs in's script with sh, fakeBinary on stdin, its size and sha256 given, and
// returns its combined output.
func installRun(t *testing.T, in Install) (string, error) {
	t.Helper()
	in.Size, in.SHA256 = sent(fakeBinary)
	return installSend(t, in, fakeBinary)
}

// sent is the size and sha256 (hex) of binary, as host install gives them to the script.
func sent(binary string) (int64, string) {
	sum := sha256.Sum256([]byte(binary))
	return int64(len(binary)), hex.EncodeToString(sum[:])
}

// installSend runs in's script with sh, stdin on its stdin, and returns its combined output.
func installSend(t *testing.T, in Install, stdin string) (string, error) {
	t.Helper()
	script, err := in.Script()
	if err != nil {
		t.Fatal(err)
	}
	if out, err := exec.Command("sh", "-n", "-c", script).CombinedOutput(); err != nil {
		t.Fatalf("sh -n: the script does not parse: %v\n%s\n%s", err, out, script)
	}
	sh := exec.Command("sh", "-c", script)
	sh.Stdin = strings.NewReader(stdin)
	out, err := sh.CombinedOutput()
	return string(out), err
}

// Run by a real shell into directories whose names need quoting: the binary lands executable at
// Binary and answers `version`; the dirs exist; every unit (and nothing else) lands readable in
// UnitDir, byte for byte but for the binary's and the config dir's paths; no temporary file stays.
func TestInstallScriptPutsTheBinaryTheDirsAndTheUnitsInPlace(t *testing.T) {
	t.Parallel()
	root := filepath.Join(t.TempDir(), "a-server")
	in := Install{
		Binary:    filepath.Join(root, "opt+bin", "zero502"),
		StateDir:  filepath.Join(root, "var", "state@host:1"),
		ConfigDir: filepath.Join(root, "etc", "zero502") + "/",
		UnitDir:   filepath.Join(root, "units_x"),
		Units:     installUnits,
	}
	out, err := installRun(t, in)
	if err != nil || strings.TrimSpace(out) != "fake zero502 version" {
		t.Fatalf("install script: %v\n%s", err, out)
	}
	if st, err := os.Stat(in.Binary); err != nil || st.Mode().Perm() != 0o755 {
		t.Fatalf("binary at %s: %v %v, want mode 755", in.Binary, st, err)
	}
	for dir, mode := range map[string]os.FileMode{in.StateDir: 0o750, in.ConfigDir: 0o755} {
		if st, err := os.Stat(dir); err != nil || !st.IsDir() || st.Mode().Perm() != mode {
			t.Errorf("%s: %v %v, want a directory of mode %o", dir, st, err, mode)
		}
	}
	configDir := strings.TrimSuffix(in.ConfigDir, "/")
	for name, want := range map[string]string{
		"zero502-lb.service": "[Service]\nEnvironmentFile=-" + configDir + "/lb.env\n" +
			"ExecStart=" + in.Binary + " lb --config " + configDir + "/zero502.yaml $LB_ARGS\n" +
			"# it's `quoted` \\ \"twice\"\n",
		"zero502-mesh.service": "[Service]\nExecStart=" + in.Binary + " mesh serve $MESH_ARGS\n",
	} {
		file := filepath.Join(in.UnitDir, name)
		st, err := os.Stat(file)
		if err != nil {
			t.Fatal(err)
		}
		if st.Mode().Perm() != 0o644 {
			t.Errorf("%s: mode %o, want 644", file, st.Mode().Perm())
		}
		if data, _ := os.ReadFile(file); string(data) != want {
			t.Errorf("%s:\n%s\nwant:\n%s", file, data, want)
		}
	}
	entries, err := os.ReadDir(in.UnitDir)
	if err != nil || len(entries) != 2 {
		t.Errorf("unit dir holds %v (%v), want the two units only", entries, err)
	}
	if _, err := os.Stat(in.Binary + ".new"); !os.IsNotExist(err) {
		t.Errorf("%s.new is left behind: %v", in.Binary, err)
	}
}

// With WatchdogInterval (the config's watchdog.interval) the watchdog's units are installed too,
// rewritten like the others, the timer ticking every watchdog.interval (OnActiveSec= and
// OnUnitActiveSec=), not the shipped file's 60s: ticks closer than the interval would only be
// logged as not counted. An interval that is not positive is refused, naming it.
func TestInstallScriptWritesTheWatchdogTimerForTheConfigsInterval(t *testing.T) {
	t.Parallel()
	root := t.TempDir()
	in := Install{Binary: filepath.Join(root, "bin", "zero502"), StateDir: filepath.Join(root, "state"),
		ConfigDir: filepath.Join(root, "etc"), UnitDir: filepath.Join(root, "units"), Units: installUnits,
		WatchdogInterval: 90 * time.Second}
	if out, err := installRun(t, in); err != nil {
		t.Fatalf("install script: %v\n%s", err, out)
	}
	timer, _ := os.ReadFile(filepath.Join(in.UnitDir, "zero502-watchdog.timer"))
	service, _ := os.ReadFile(filepath.Join(in.UnitDir, "zero502-watchdog.service"))
	for _, want := range []string{"\nOnActiveSec=90s\n", "\nOnUnitActiveSec=90s\n", "\nUnit=zero502-watchdog.service\n"} {
		if !strings.Contains(string(timer), want) {
			t.Errorf("the installed timer lacks %q:\n%s", want, timer)
		}
	}
	if want := "\nExecStart=" + in.Binary + " watchdog --config " + in.ConfigDir + "/zero502.yaml\n"; !strings.Contains(string(service), want) {
		t.Errorf("the installed watchdog service lacks %q:\n%s", want, service)
	}
	if entries, err := os.ReadDir(in.UnitDir); err != nil || len(entries) != 4 {
		t.Errorf("unit dir holds %v (%v), want the two units and the watchdog's two", entries, err)
	}
	in.WatchdogInterval = -time.Second
	if _, err := in.Script(); err == nil || !strings.Contains(err.Error(), "watchdog.interval -1s: must be positive") {
		t.Errorf("Script with watchdog.interval -1s: %v; want it refused, naming it", err)
	}
}

// A step that fails stops the script: nothing after it runs, and it exits non-zero.
// The directory the binary goes to, or one above it, that another user could write (or that
// another user owns) is refused before anything is written there: whoever may write it could
// swap the binary between its check and its rename. A link left at the binary's .new name is
// never written through.
func TestInstallScriptRefusesADirectoryAnotherUserMayWrite(t *testing.T) {
	t.Parallel()
	if os.Getuid() != 0 {
		t.Skip("needs root: the directories here are root's")
	}
	root := t.TempDir()
	open := filepath.Join(root, "open")
	if err := os.Mkdir(open, 0o755); err != nil {
		t.Fatal(err)
	}
	in := Install{Binary: filepath.Join(open, "bin", "zero502"), StateDir: filepath.Join(root, "state"),
		ConfigDir: filepath.Join(root, "etc"), UnitDir: filepath.Join(root, "units"), Units: installUnits}
	victim := filepath.Join(root, "victim")
	if err := os.WriteFile(victim, []byte("precious"), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.MkdirAll(filepath.Dir(in.Binary), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(victim, in.Binary+".new"); err != nil {
		t.Fatal(err)
	}
	for _, mode := range []os.FileMode{0o775, 0o777} {
		if err := os.Chmod(open, mode); err != nil {
			t.Fatal(err)
		}
		out, err := installRun(t, in)
		var exit *exec.ExitError
		if !errors.As(err, &exit) || exit.ExitCode() != InstallKept || !strings.Contains(out, open+" is owned by another user or writable by group or others") {
			t.Fatalf("install below a %04o directory: %v\n%s\nwant exit %d naming the directory", mode, err, out, InstallKept)
		}
		if _, err := os.Stat(in.Binary); !os.IsNotExist(err) {
			t.Fatalf("a binary was installed below the %04o directory: %v", mode, err)
		}
	}
	if err := os.Chmod(open, 0o755); err != nil {
		t.Fatal(err)
	}
	if out, err := installRun(t, in); err != nil {
		t.Fatalf("install below this user's 0755 directories: %v\n%s", err, out)
	}
	if data, err := os.ReadFile(victim); err != nil || string(data) != "precious" {
		t.Fatalf("the file a link at the binary's .new name pointed to now holds %q (%v): it was written through", data, err)
	}
	if fi, err := os.Lstat(in.Binary); err != nil || !fi.Mode().IsRegular() {
		t.Fatalf("the installed binary: %v, %v; want a regular file", fi, err)
	}
}

func TestInstallScriptStopsAtTheFirstFailure(t *testing.T) {
	t.Parallel()
	root := t.TempDir()
	blocker := filepath.Join(root, "bin")
	if err := os.WriteFile(blocker, nil, 0o644); err != nil {
		t.Fatal(err)
	}
	in := Install{Binary: filepath.Join(blocker, "zero502"), StateDir: filepath.Join(root, "state"),
		ConfigDir: filepath.Join(root, "etc"), UnitDir: filepath.Join(root, "units"), Units: installUnits}
	out, err := installRun(t, in)
	if err == nil || strings.Contains(out, "fake zero502") {
		t.Fatalf("with a file where the binary's dir must be: %v, output %q; want a failure before the version", err, out)
	}
	if _, err := os.Stat(filepath.Join(in.UnitDir, "zero502-lb.service")); !os.IsNotExist(err) {
		t.Fatalf("a unit was installed after the failure: %v", err)
	}
}

// A server with a working binary and units gets an upload that is not the binary sent: cut
// short (a Ctrl-C or a dropped connection: cat sees an end and exits 0), empty, changed on the
// way, or whole but not runnable there (built for another CPU). Each time the script fails with
// InstallKept and says so, before anything is replaced: the previous binary and units stay, byte
// for byte, and no .new file is left.
func TestInstallScriptKeepsThePreviousBinaryWhenTheUploadIsNotTheBinarySent(t *testing.T) {
	t.Parallel()
	const old = "#!/bin/sh\necho \"old zero502 $1\"\n"
	const oldUnit = "[Service]\nExecStart=/old\n"
	notRunnable := "\x7fELF\x02\x01\x01\x00" + strings.Repeat("\x00", 56) // an ELF header this machine cannot run
	for _, c := range []struct {
		name, binary, stdin string
	}{
		{"cut short", fakeBinary, fakeBinary[:12]},
		{"empty", fakeBinary, ""},
		{"changed on the way", fakeBinary, strings.Replace(fakeBinary, "fake", "evil", 1)},
		{"longer than sent", fakeBinary, fakeBinary + "echo appended\n"},
		{"not runnable there", notRunnable, notRunnable},
	} {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			root := t.TempDir()
			in := Install{Binary: filepath.Join(root, "bin", "zero502"), StateDir: filepath.Join(root, "state"),
				ConfigDir: filepath.Join(root, "etc"), UnitDir: filepath.Join(root, "units"), Units: installUnits}
			in.Size, in.SHA256 = sent(c.binary)
			for file, data := range map[string]string{in.Binary: old, filepath.Join(in.UnitDir, "zero502-lb.service"): oldUnit} {
				if err := os.MkdirAll(filepath.Dir(file), 0o755); err != nil {
					t.Fatal(err)
				}
				if err := os.WriteFile(file, []byte(data), 0o755); err != nil {
					t.Fatal(err)
				}
			}
			out, err := installSend(t, in, c.stdin)
			var exit *exec.ExitError
			if !errors.As(err, &exit) || exit.ExitCode() != InstallKept || !strings.Contains(out, "still the previous binary") {
				t.Errorf("install of an upload %s: %v\n%s\nwant exit %d saying the previous binary stays", c.name, err, out, InstallKept)
			}
			if data, _ := os.ReadFile(in.Binary); string(data) != old {
				t.Errorf("after a failed install %s holds %q, want the previous binary %q", in.Binary, data, old)
			}
			if data, _ := os.ReadFile(filepath.Join(in.UnitDir, "zero502-lb.service")); string(data) != oldUnit {
				t.Errorf("after a failed install the unit holds %q, want the previous %q", data, oldUnit)
			}
			if _, err := os.Stat(filepath.Join(in.UnitDir, "zero502-mesh.service")); !os.IsNotExist(err) {
				t.Errorf("a unit was installed by a failed install: %v", err)
			}
			for _, dir := range []string{filepath.Dir(in.Binary), in.UnitDir} {
				if news, _ := filepath.Glob(filepath.Join(dir, "*.new")); len(news) > 0 {
					t.Errorf("a failed install left %v behind", news)
				}
			}
		})
	}
}

// The server's paths must be absolute (a relative one lands wherever the ssh login starts) and
// the binary must not be empty: Script refuses, naming the flag, and makes no script.
func TestInstallScriptRefusesARelativePathOrAnEmptyBinary(t *testing.T) {
	t.Parallel()
	size, sum := sent(fakeBinary)
	good := Install{Binary: "/usr/local/bin/zero502", StateDir: "/var/lib/zero502", ConfigDir: "/etc/zero502",
		UnitDir: "/etc/systemd/system", Units: installUnits, Size: size, SHA256: sum}
	if _, err := good.Script(); err != nil {
		t.Fatalf("absolute paths: %v", err)
	}
	for _, c := range []struct {
		want string
		bad  func(*Install)
	}{
		{`--dest "zero502"`, func(in *Install) { in.Binary = "zero502" }},
		{`--dest "bin/zero502"`, func(in *Install) { in.Binary = "bin/zero502" }},
		{`--dest "/usr/local/bin/"`, func(in *Install) { in.Binary = "/usr/local/bin/" }},
		{`--state-dir "var/lib/zero502"`, func(in *Install) { in.StateDir = "var/lib/zero502" }},
		{`--config-dir ""`, func(in *Install) { in.ConfigDir = "" }},
		{`--unit-dir "~/units"`, func(in *Install) { in.UnitDir = "~/units" }},
		// written into the units' ExecStart=: a line break would add a directive of its own
		{`--dest "/usr/local/bin/zero502\nExecStartPre=/bin/touch /tmp/x"`, func(in *Install) {
			in.Binary = "/usr/local/bin/zero502\nExecStartPre=/bin/touch /tmp/x"
		}},
		{`--dest "/opt/my bin/zero502": must be a plain path`, func(in *Install) { in.Binary = "/opt/my bin/zero502" }},
		{`--config-dir "/etc/zero502%h": must be a plain path`, func(in *Install) { in.ConfigDir = "/etc/zero502%h" }},
		{`--state-dir "/var/lib/it's": must be a plain path`, func(in *Install) { in.StateDir = "/var/lib/it's" }},
		{"empty", func(in *Install) { in.Size, in.SHA256 = sent("") }},
	} {
		in := good
		c.bad(&in)
		script, err := in.Script()
		if err == nil || !strings.Contains(err.Error(), c.want) || script != "" {
			t.Errorf("Script of %+v: %v; want a refusal naming %s, and no script", in, err, c.want)
		}
	}
}

// A user other than root (deploy@, as the README's quick start logs in) cannot write
// /usr/local/bin or /etc/systemd/system. The script, run by a real shell as such a user into
// root's directories, asks sudo -n for the install; without sudo, or when sudo wants a password,
// it stops before anything is read or written, saying what needs root and what to do (it used to
// go on and stop at "Permission denied", half-way).
func TestInstallScriptAsAnotherUserNeedsRootOrPasswordlessSudo(t *testing.T) {
	u, root := installUser(t)
	for _, c := range []struct{ name, sudo, want string }{
		{"no sudo", "", "and sudo is not installed: install as root (--ssh root@HOST), or install sudo and grant " + u.Username + " passwordless sudo"},
		{"sudo wants a password", "#!/bin/sh\necho 'sudo: a password is required' >&2\nexit 1\n",
			"and sudo -n refused (sudo: a password is required): install as root (--ssh root@HOST), or grant " + u.Username + " passwordless sudo (NOPASSWD in sudoers)"},
	} {
		t.Run(c.name, func(t *testing.T) {
			dir := filepath.Join(root, strings.ReplaceAll(c.name, " ", "-"))
			in := Install{Binary: filepath.Join(dir, "bin", "zero502"), StateDir: filepath.Join(dir, "state"),
				ConfigDir: filepath.Join(dir, "etc"), UnitDir: filepath.Join(dir, "units"), Units: installUnits}
			if err := os.MkdirAll(filepath.Join(dir, "bin"), 0o755); err != nil { // root's, as /usr/local/bin
				t.Fatal(err)
			}
			out, err := installAs(t, u, in, toolsPath(t, dir, c.sudo))
			var exit *exec.ExitError
			want := "zero502 host install: " + u.Username + " needs root or passwordless sudo for writing " + filepath.Join(dir, "bin") + " " + dir + "/units"
			if !errors.As(err, &exit) || exit.ExitCode() != InstallKept || !strings.Contains(out, want) || !strings.Contains(out, c.want) {
				t.Fatalf("install as %s into root's dirs, %s: %v\n%s\nwant exit %d and\n%s, %s", u.Username, c.name, err, out, InstallKept, want, c.want)
			}
			for _, p := range []string{in.Binary + ".new", in.Binary, in.StateDir, in.ConfigDir, in.UnitDir} {
				if _, err := os.Lstat(p); !os.IsNotExist(err) {
					t.Errorf("%s exists after the refusal (%v): nothing should have been written", p, err)
				}
			}
		})
	}
}

// With passwordless sudo (a stand-in here: a set-uid-root sudo that wants -n and runs the command
// as root), the same user installs into root's directories: the binary and the units are root's,
// the state dir the script made is the user's (the deploys that log in as it write it), and sudo
// was asked with -n, never a prompt. Into directories of its own, the user needs no sudo at all.
func TestInstallScriptAsAnotherUserGoesThroughSudo(t *testing.T) {
	u, root := installUser(t)
	uid, _ := strconv.Atoi(u.Uid)
	self, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	sudoBin := filepath.Join(root, "sudo-bin")
	if err := os.Mkdir(sudoBin, 0o755); err != nil {
		t.Fatal(err)
	}
	copyFile(t, self, filepath.Join(sudoBin, "sudo"), 0o755)
	if err := os.Chmod(filepath.Join(sudoBin, "sudo"), 0o755|os.ModeSetuid); err != nil {
		t.Fatal(err)
	}
	var fs syscall.Statfs_t
	if err := syscall.Statfs(sudoBin, &fs); err != nil {
		t.Fatal(err)
	}
	if fs.Flags&0x2 != 0 { // ST_NOSUID
		skipOrFail(t, sudoBin+" is on a nosuid file system: the stand-in sudo cannot be set-uid there")
	}
	log := filepath.Join(root, "sudo.log")
	in := Install{Binary: filepath.Join(root, "bin", "zero502"), StateDir: filepath.Join(root, "state"),
		ConfigDir: filepath.Join(root, "etc"), UnitDir: filepath.Join(root, "units"), Units: installUnits,
		WatchdogInterval: 90 * time.Second}
	if err := os.MkdirAll(filepath.Join(root, "bin"), 0o755); err != nil {
		t.Fatal(err)
	}
	out, err := installAs(t, u, in, toolsPath(t, root, "")+":"+sudoBin, fakeSudoLogEnv+"="+log)
	if err != nil || !strings.HasSuffix(strings.TrimSpace(out), "fake zero502 version") {
		t.Fatalf("install as %s through sudo: %v\n%s", u.Username, err, out)
	}
	if data, err := os.ReadFile(log); err != nil || !strings.HasPrefix(string(data), "-n sh -c ") || !strings.HasSuffix(string(data), " zero502-install "+u.Uid+" "+u.Gid+"\n") {
		t.Errorf("sudo was run with %q (%v); want -n sh -c SCRIPT zero502-install %s %s", data, err, u.Uid, u.Gid)
	}
	for p, owner := range map[string]int{in.Binary: 0, filepath.Join(in.UnitDir, "zero502-lb.service"): 0,
		filepath.Join(in.UnitDir, "zero502-watchdog.timer"): 0, in.ConfigDir: 0, in.StateDir: uid} {
		st, err := os.Stat(p)
		if err != nil {
			t.Fatal(err)
		}
		if got := int(st.Sys().(*syscall.Stat_t).Uid); got != owner {
			t.Errorf("%s belongs to uid %d, want %d", p, got, owner)
		}
	}
	if data, _ := os.ReadFile(filepath.Join(in.UnitDir, "zero502-watchdog.timer")); !strings.Contains(string(data), "\nOnUnitActiveSec=90s\n") {
		t.Errorf("the installed timer does not tick every watchdog.interval 90s:\n%s", data)
	}

	// Into its own directories: no sudo (none on the path), and the files are its own.
	own := filepath.Join(root, "own")
	if err := os.Mkdir(own, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.Chown(own, uid, -1); err != nil {
		t.Fatal(err)
	}
	mine := Install{Binary: filepath.Join(own, "bin", "zero502"), StateDir: filepath.Join(own, "state"),
		ConfigDir: filepath.Join(own, "etc"), UnitDir: filepath.Join(own, "units"), Units: installUnits}
	if out, err := installAs(t, u, mine, toolsPath(t, own+"-tools", "")); err != nil || !strings.HasSuffix(strings.TrimSpace(out), "fake zero502 version") {
		t.Fatalf("install as %s into its own dirs: %v\n%s", u.Username, err, out)
	}
	if st, err := os.Stat(mine.Binary); err != nil || int(st.Sys().(*syscall.Stat_t).Uid) != uid {
		t.Errorf("%s: %v, %v; want the user's", mine.Binary, st, err)
	}
}

// installUser is the user the tests run the script as (osuser.Service: not root, no sudo rights)
// and a directory of root's (0755, as /usr/local) that the user can reach: the tests need root.
func installUser(t *testing.T) (*user.User, string) {
	t.Helper()
	if _, err := exec.LookPath("setpriv"); err != nil {
		skipOrFail(t, "setpriv not found (util-linux)")
	}
	u := osuser.Ensure(t, osuser.Service)
	root := t.TempDir()
	for _, d := range []string{filepath.Dir(root), root} { // t.TempDir's are 0700
		if err := os.Chmod(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	return u, root
}

// installAs runs in's script as u (setpriv), fakeBinary on stdin, with PATH path and env.
func installAs(t *testing.T, u *user.User, in Install, path string, env ...string) (string, error) {
	t.Helper()
	in.Size, in.SHA256 = sent(fakeBinary)
	script, err := in.Script()
	if err != nil {
		t.Fatal(err)
	}
	sh := exec.Command("setpriv", "--reuid", u.Uid, "--regid", u.Gid, "--clear-groups", "sh", "-c", script)
	sh.Env = append([]string{"PATH=" + path, "HOME=/nonexistent", "LANG=C"}, env...)
	sh.Stdin = strings.NewReader(fakeBinary)
	out, err := sh.CombinedOutput()
	return string(out), err
}

// toolsPath is a PATH (a directory made in dir) holding the tools the script runs, links to
// this machine's, and no sudo: sudo, when not "", is a script put there as sudo.
func toolsPath(t *testing.T, dir, sudo string) string {
	t.Helper()
	bin := filepath.Join(dir, "tools")
	if err := os.MkdirAll(bin, 0o755); err != nil {
		t.Fatal(err)
	}
	for _, tool := range []string{"sh", "id", "dirname", "find", "mkdir", "chown", "rm", "cat", "wc", "sha256sum", "chmod", "mv", "systemctl"} {
		p, err := exec.LookPath(tool)
		if err != nil {
			continue // systemctl: the script reloads systemd only where it runs
		}
		if err := os.Symlink(p, filepath.Join(bin, tool)); err != nil {
			t.Fatal(err)
		}
	}
	if sudo != "" {
		if err := os.WriteFile(filepath.Join(bin, "sudo"), []byte(sudo), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	return bin
}

// skipOrFail skips the test, or fails it under CI (.ci/run runs as root, with util-linux).
func skipOrFail(t *testing.T, why string) {
	t.Helper()
	if os.Getenv("CI") == "true" {
		t.Fatal(why)
	}
	t.Skip(why)
}

func copyFile(t *testing.T, from, to string, mode os.FileMode) {
	t.Helper()
	src, err := os.Open(from)
	if err != nil {
		t.Fatal(err)
	}
	defer src.Close()
	dst, err := os.OpenFile(to, os.O_WRONLY|os.O_CREATE|os.O_EXCL, mode)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := io.Copy(dst, src); err != nil {
		t.Fatal(err)
	}
	if err := dst.Close(); err != nil {
		t.Fatal(err)
	}
}

// fakeSudoLogEnv names the file the stand-in sudo appends its arguments to.
const fakeSudoLogEnv = "ZERO502_TEST_FAKE_SUDO_LOG"

// This test binary, set-uid root and run as "sudo", is the stand-in of a passwordless sudo:
// it wants -n first (never a prompt), notes its arguments, and runs the command as root.
func init() {
	if filepath.Base(os.Args[0]) != "sudo" {
		return
	}
	args := os.Args[1:]
	if len(args) < 2 || args[0] != "-n" {
		fmt.Fprintf(os.Stderr, "sudo (the test's): want -n COMMAND..., got %q\n", args)
		os.Exit(1)
	}
	if log := os.Getenv(fakeSudoLogEnv); log != "" {
		f, err := os.OpenFile(log, os.O_WRONLY|os.O_APPEND|os.O_CREATE, 0o644)
		if err == nil {
			fmt.Fprintln(f, strings.Join(args, " "))
			f.Close()
		}
	}
	cmd, err := exec.LookPath(args[1])
	if err == nil {
		if err = syscall.Setgid(0); err == nil {
			err = syscall.Setuid(0)
		}
	}
	if err == nil {
		err = syscall.Exec(cmd, args[1:], os.Environ())
	}
	fmt.Fprintf(os.Stderr, "sudo (the test's): %v\n", err)
	os.Exit(1)
}
