package deployer

import (
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

// installRun runs in's script with sh, the binary on stdin, and returns its combined output.
func installRun(t *testing.T, in Install) (string, error) {
	t.Helper()
	script, err := in.Script()
	if err != nil {
		t.Fatal(err)
	}
	if out, err := exec.Command("sh", "-n", "-c", script).CombinedOutput(); err != nil {
		t.Fatalf("sh -n: the script does not parse: %v\n%s\n%s", err, out, script)
	}
	sh := exec.Command("sh", "-c", script)
	sh.Stdin = strings.NewReader("#!/bin/sh\necho \"fake zero502 $1\"\n")
	out, err := sh.CombinedOutput()
	return string(out), err
}

// Run by a real shell into directories whose names need quoting: the binary lands executable at
// Binary and answers `version`; the dirs exist; every unit (and nothing else) lands readable in
// UnitDir, byte for byte but for the binary's and the config dir's paths; no temporary file stays.
func TestInstallScriptPutsTheBinaryTheDirsAndTheUnitsInPlace(t *testing.T) {
	t.Parallel()
	root := filepath.Join(t.TempDir(), "it's a server")
	in := Install{
		Binary:    filepath.Join(root, "opt bin", "zero502"),
		StateDir:  filepath.Join(root, "var", "state $HOME"),
		ConfigDir: filepath.Join(root, "etc", "zero502") + "/",
		UnitDir:   filepath.Join(root, "units `x`"),
		Units:     installUnits,
	}
	out, err := installRun(t, in)
	if err != nil || strings.TrimSpace(out) != "fake zero502 version" {
		t.Fatalf("install script: %v\n%s", err, out)
	}
	if st, err := os.Stat(in.Binary); err != nil || st.Mode().Perm() != 0o755 {
		t.Fatalf("binary at %s: %v %v, want mode 755", in.Binary, st, err)
	}
	for _, dir := range []string{in.StateDir, in.ConfigDir} {
		if st, err := os.Stat(dir); err != nil || !st.IsDir() {
			t.Errorf("%s: %v, want a directory", dir, err)
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
