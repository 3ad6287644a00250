package deployer

import (
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"testing/fstest"
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
