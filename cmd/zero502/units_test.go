package main

import (
	"io/fs"
	"os"
	"os/exec"
	"path"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/zero502/zero502/deployer"
	"github.com/zero502/zero502/watchdog"
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
// --config-dir, the watchdog's among them with its timer ticking every watchdog.interval of
// the config (90s here, not the shipped file's 60s), and the installed units pass
// systemd-analyze verify.
func TestHostInstallScriptInstallsTheBinaryAndTheUnits(t *testing.T) {
	root := t.TempDir()
	dest := filepath.Join(root, "bin", "zero502")
	stateDir, configDir, unitDir := filepath.Join(root, "state"), filepath.Join(root, "etc"), filepath.Join(root, "units")
	script, err := deployer.Install{Binary: dest, StateDir: stateDir, ConfigDir: configDir, UnitDir: unitDir,
		Units: shippedUnits(), WatchdogInterval: 90 * time.Second}.Script()
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
	for _, name := range append(slices.Clone(daemonUnitNames), watchdog.ServiceUnitName, watchdog.TimerUnitName) {
		file := filepath.Join(unitDir, name)
		st, err := os.Stat(file)
		if err != nil {
			t.Fatal(err)
		}
		if st.Mode().Perm() != 0o644 {
			t.Errorf("%s: mode %o, want 644", file, st.Mode().Perm())
		}
		data, _ := os.ReadFile(file)
		if name == watchdog.TimerUnitName {
			for _, want := range []string{"\nOnActiveSec=90s\n", "\nOnUnitActiveSec=90s\n"} {
				if !strings.Contains(string(data), want) {
					t.Errorf("%s lacks %q: the timer must tick every watchdog.interval:\n%s", file, want, data)
				}
			}
		} else if !strings.Contains(string(data), "\nExecStart="+dest+" ") || strings.Contains(string(data), "/etc/zero502/") {
			t.Errorf("%s does not name %s and %s:\n%s", file, dest, configDir, data)
		}
		files = append(files, file)
	}
	verifyUnits(t, files)
}

// The LB's and the edge's units upgrade in place with systemctl reload: ExecStart= gives the
// server a --pid-file in the unit's own runtime directory (RuntimeDirectory=, the one place under
// /run a DynamicUser= unit may write with ProtectSystem=strict; the default would be in the
// unit's private /tmp), PIDFile= names it so systemd follows the main PID to the new process
// (else the old one's exit stops the unit and kills the new one), and ExecReload= runs
// `zero502 lb upgrade` on that same file. Each flag is read by the command's own flag set, so a
// flag the command does not take fails here. No two units share a runtime directory: systemd
// removes it when either stops.
func TestTheLBAndTheEdgeUnitsUpgradeInPlace(t *testing.T) {
	runtimeDirs := map[string]string{}
	for _, name := range []string{"zero502-lb.service", "zero502-edge.service"} {
		lines := map[string][]string{}
		for _, line := range strings.Split(readUnit(t, name), "\n") {
			if key, value, ok := strings.Cut(line, "="); ok && !strings.HasPrefix(line, "#") {
				lines[key] = append(lines[key], value)
			}
		}
		one := func(key string) string {
			t.Helper()
			if len(lines[key]) != 1 {
				t.Fatalf("%s: %d %s= lines, want 1", name, len(lines[key]), key)
			}
			return lines[key][0]
		}
		pidFile, runtimeDir := one("PIDFile"), one("RuntimeDirectory")
		if other, ok := runtimeDirs[runtimeDir]; ok {
			t.Errorf("%s and %s share RuntimeDirectory=%s: stopping either removes the other's pid file", other, name, runtimeDir)
		}
		runtimeDirs[runtimeDir] = name
		if path.Dir(pidFile) != "/run/"+runtimeDir {
			t.Errorf("%s: PIDFile=%s is not in its RuntimeDirectory=%s (/run/%s), the one place under /run it may write", name, pidFile, runtimeDir, runtimeDir)
		}
		for _, c := range []struct{ key, command string }{{"ExecStart", ""}, {"ExecReload", "zero502 lb upgrade"}} {
			fields := strings.Fields(one(c.key))
			if len(fields) < 2 || fields[0] != "/usr/local/bin/zero502" {
				t.Fatalf("%s: %s=%s does not run /usr/local/bin/zero502", name, c.key, one(c.key))
			}
			var args []string
			for _, f := range fields[1:] {
				if !strings.HasPrefix(f, "$") { // $EDGE_ARGS, from the environment file
					args = append(args, f)
				}
			}
			cmd, rest, err := newRootCmd().Find(args)
			if err != nil {
				t.Fatalf("%s: %s=%s: %v", name, c.key, one(c.key), err)
			}
			if err := cmd.ParseFlags(rest); err != nil {
				t.Fatalf("%s: %s=%s: %s does not take its flags: %v", name, c.key, one(c.key), cmd.CommandPath(), err)
			}
			if c.command != "" && cmd.CommandPath() != c.command {
				t.Errorf("%s: %s= runs %s, want %s", name, c.key, cmd.CommandPath(), c.command)
			}
			if f := cmd.Flags().Lookup("pid-file"); f == nil || !f.Changed || f.Value.String() != pidFile {
				t.Errorf("%s: %s=%s: --pid-file is %v, want PIDFile=%s", name, c.key, one(c.key), f, pidFile)
			}
		}
	}
}

// host install --config reads the config before anything is sent: a bad one is refused with exit
// 2, naming the file and the rule, and ssh is never run (the target does not exist).
func TestHostInstallRefusesABadConfigBeforeSendingAnything(t *testing.T) {
	bad := filepath.Join(t.TempDir(), "bad.yaml")
	if err := os.WriteFile(bad, []byte("watchdog: {interval: 0s}\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	out, code := runCLI(t, "host", "install", "--ssh", "nobody@192.0.2.1", "--config", bad)
	if code != 2 || !strings.Contains(out, "--config") || !strings.Contains(out, "watchdog.interval") || !strings.Contains(out, "nothing was sent") {
		t.Fatalf("host install --config with watchdog.interval 0s: exit %d\n%s\nwant exit 2 naming watchdog.interval, nothing sent", code, out)
	}
}
