package main

import (
	"io/fs"
	"os"
	"os/exec"
	"path"
	"path/filepath"
	"strings"
	"testing"

	"github.com/zero502/zero502/deployer"
)

var daemonUnitNames = []string{"zero502-edge.service", "zero502-lb.service", "zero502-mesh.service"}

// readUnit is a shipped unit's text.
func readUnit(t *testing.T, name string) string {
	t.Helper()
	data, err := fs.ReadFile(daemonUnits, path.Join("units", name))
	if err != nil {
		t.Fatal(err)
	}
	return string(data)
}

// verifyUnits runs systemd-analyze verify on the unit files (skipped when it is not installed,
// except in CI, which installs it); any complaint fails the test.
func verifyUnits(t *testing.T, files []string) {
	t.Helper()
	tool, err := exec.LookPath("systemd-analyze")
	if err != nil && os.Getenv("CI") != "" {
		t.Fatal("systemd-analyze is not installed; CI (.ci/run) installs the systemd package for it")
	}
	if err != nil {
		t.Skip("systemd-analyze is not installed")
	}
	out, err := exec.Command(tool, append([]string{"verify"}, files...)...).CombinedOutput()
	if err != nil || strings.TrimSpace(string(out)) != "" {
		t.Fatalf("systemd-analyze verify: %v\n%s", err, out)
	}
}

// The shipped units are exactly the three daemons', and each is hardened: a dynamic user, a
// read-only system, no new privileges; only the LB and the edge (low ports) keep
// CAP_NET_BIND_SERVICE, and nothing else.
func TestDaemonUnitsAreHardened(t *testing.T) {
	names, err := fs.Glob(daemonUnits, "units/*")
	if err != nil {
		t.Fatal(err)
	}
	if got := strings.Join(names, " "); got != "units/zero502-edge.service units/zero502-lb.service units/zero502-mesh.service" {
		t.Fatalf("embedded units: %s", got)
	}
	for _, name := range daemonUnitNames {
		text := readUnit(t, name)
		for _, want := range []string{"DynamicUser=yes", "ProtectSystem=strict", "NoNewPrivileges=yes", "ProtectHome=yes",
			"KillSignal=SIGTERM", "ExecStart=/usr/local/bin/zero502 ", "WantedBy=multi-user.target"} {
			if !strings.Contains(text, "\n"+want) {
				t.Errorf("%s lacks a line starting %q", name, want)
			}
		}
		lowPort := name != "zero502-mesh.service"
		if got := strings.Contains(text, "\nAmbientCapabilities=CAP_NET_BIND_SERVICE\n"); got != lowPort {
			t.Errorf("%s: AmbientCapabilities=CAP_NET_BIND_SERVICE is %v, want %v (only for a low port)", name, got, lowPort)
		}
		for _, line := range strings.Split(text, "\n") {
			if strings.HasPrefix(line, "CapabilityBoundingSet=") && line != "CapabilityBoundingSet=" &&
				line != "CapabilityBoundingSet=CAP_NET_BIND_SERVICE" {
				t.Errorf("%s: %s, want nothing beyond CAP_NET_BIND_SERVICE", name, line)
			}
		}
	}
}

// host install's script of the shipped units, run by a real shell into temporary dirs: the binary arrives on stdin
// and lands executable at --dest, the units land readable in --unit-dir naming --dest and
// --config-dir, and the installed units pass systemd-analyze verify.
func TestHostInstallScriptInstallsTheBinaryAndTheUnits(t *testing.T) {
	root := t.TempDir()
	dest := filepath.Join(root, "bin", "zero502")
	stateDir, configDir, unitDir := filepath.Join(root, "state"), filepath.Join(root, "etc"), filepath.Join(root, "units")
	script, err := deployer.Install{Binary: dest, StateDir: stateDir, ConfigDir: configDir, UnitDir: unitDir,
		Units: shippedUnits()}.Script()
	if err != nil {
		t.Fatal(err)
	}
	sh := exec.Command("sh", "-c", script)
	sh.Stdin = strings.NewReader("#!/bin/sh\necho \"fake zero502 $1\"\n")
	out, err := sh.CombinedOutput()
	if err != nil || strings.TrimSpace(string(out)) != "fake zero502 version" {
		t.Fatalf("install script: %v\n%s", err, out)
	}
	if st, err := os.Stat(dest); err != nil || st.Mode().Perm() != 0o755 {
		t.Fatalf("binary at %s: %v %v, want mode 755", dest, st, err)
	}
	for _, dir := range []string{stateDir, configDir} {
		if st, err := os.Stat(dir); err != nil || !st.IsDir() {
			t.Errorf("%s: %v, want a directory", dir, err)
		}
	}
	var files []string
	for _, name := range daemonUnitNames {
		file := filepath.Join(unitDir, name)
		st, err := os.Stat(file)
		if err != nil {
			t.Fatal(err)
		}
		if st.Mode().Perm() != 0o644 {
			t.Errorf("%s: mode %o, want 644", file, st.Mode().Perm())
		}
		data, _ := os.ReadFile(file)
		if !strings.Contains(string(data), "\nExecStart="+dest+" ") || strings.Contains(string(data), "/etc/zero502/") {
			t.Errorf("%s does not name %s and %s:\n%s", file, dest, configDir, data)
		}
		files = append(files, file)
	}
	verifyUnits(t, files)
}
