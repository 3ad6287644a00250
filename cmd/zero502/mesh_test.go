package main

import (
	"context"
	"encoding/json"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/zero502/zero502/infra/boundedcmd"
	"github.com/zero502/zero502/infra/mesh"
)

func TestMeshCommandRefusesBadFlagsNamingFlagValueAndRule(t *testing.T) {
	serve := []string{"serve", "--name", "a", "--listen", "127.0.0.1:0", "--peers", "b=127.0.0.1:7002,c=127.0.0.1:7003"}
	for _, tc := range []struct {
		name string
		args []string
		want []string
	}{
		{"missing name", []string{"serve", "--listen", "127.0.0.1:0", "--peers", "b=127.0.0.1:7002"}, []string{"--name is required"}},
		{"missing peers", []string{"serve", "--name", "a", "--listen", "127.0.0.1:0"}, []string{"--peers is required"}},
		{"peer without a name", []string{"serve", "--name", "a", "--listen", "127.0.0.1:0", "--peers", "127.0.0.1:7002"},
			[]string{"--peers", `"127.0.0.1:7002"`, "name=host:port"}},
		{"peer listed twice", []string{"serve", "--name", "a", "--listen", "127.0.0.1:0", "--peers", "b=127.0.0.1:1,b=127.0.0.1:2"},
			[]string{`"b" is listed twice`}},
		{"peer port out of range", []string{"serve", "--name", "a", "--listen", "127.0.0.1:0", "--peers", "b=127.0.0.1:70000"},
			[]string{"--peers b", "70000", "1 to 65535"}},
		{"quorum of one", append(serve, "--quorum", "1"), []string{"--quorum 1", "one server's opinion is not a verdict"}},
		{"streak of one", append(serve, "--fail-streak", "1"), []string{"--fail-streak 1", "one failed probe means nothing"}},
		{"timeout not below the round", append(serve, "--probe-every", "1s", "--probe-timeout", "2s"),
			[]string{"--probe-timeout 2s", "below --probe-every 1s"}},
		{"not a duration", append(serve, "--probe-every", "often"), []string{"--probe-every", `"often"`, "must be a duration with a unit"}},
		{"a checker outside the mesh", append(serve, "--checkers", "b,z"),
			[]string{`--checkers "z"`, `not this server's --name "a" nor one of its --peers`, "list only servers of the mesh"}},
		{"an empty checker", append(serve, "--checkers", "a,,c", "--probe-every", "1s", "--probe-timeout", "2s"),
			[]string{`--checkers ""`, "nor one of its --peers"}},
		{"a round of zero", []string{"serve", "--name", "a", "--listen", "0.0.0.0:0", "--peers", "b=10.0.0.6:7946", "--probe-every", "0s"},
			[]string{"--probe-every 0s", "above 0"}},
		{"a probe timeout of zero", []string{"serve", "--name", "a", "--listen", "0.0.0.0:0", "--peers", "b=10.0.0.6:7946", "--probe-timeout", "0s"},
			[]string{"--probe-timeout 0s", "above 0"}},
		{"a bulletin window of zero", []string{"serve", "--name", "a", "--listen", "0.0.0.0:0", "--peers", "b=10.0.0.6:7946", "--bulletin-window", "0s"},
			[]string{"--bulletin-window 0s", "above 0"}},
		{"verdicts without --from", []string{"verdicts"}, []string{"--from is required"}},
		{"verdicts with no time to answer", []string{"verdicts", "--from", "127.0.0.1:1", "--timeout", "0s"},
			[]string{"--timeout 0s", "above 0"}},
		{"verdicts from a URL", []string{"verdicts", "--from", "http://127.0.0.1:7001"},
			[]string{`--from "http://127.0.0.1:7001"`, "host:port", "e.g. 127.0.0.1:7001"}},
		{"verdicts from a host without a port", []string{"verdicts", "--from", "127.0.0.1"},
			[]string{`--from "127.0.0.1"`, "host:port"}},
		{"lb-sync from host:port", []string{"lb-sync", "--from", "127.0.0.1:7001", "--admin", "http://127.0.0.1:18081"},
			[]string{`--from "127.0.0.1:7001"`, "mesh server's", "e.g. http://127.0.0.1:7001"}},
		{"lb-sync to an admin without a scheme", []string{"lb-sync", "--from", "http://127.0.0.1:7001", "--admin", "127.0.0.1:18081"},
			[]string{`--admin "127.0.0.1:18081"`, "admin", "e.g. http://127.0.0.1:18081"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			out, code := runCLI(t, append([]string{"mesh"}, tc.args...)...)
			if code != 2 {
				t.Fatalf("exit %d, want 2\n%s", code, out)
			}
			for _, w := range tc.want {
				if !strings.Contains(out, w) {
					t.Errorf("the message does not say %q:\n%s", w, out)
				}
			}
		})
	}
}

// The checker role is given by --checkers on every server; the old --checker (a server naming
// itself, which then travelled in its bulletins) is gone.
func TestMeshServeTakesCheckersNotChecker(t *testing.T) {
	out, code := runCLI(t, "mesh", "serve", "--name", "a", "--listen", "127.0.0.1:0", "--peers", "b=127.0.0.1:7002", "--checker")
	if code != 2 || !strings.Contains(out, "unknown flag: --checker") {
		t.Fatalf("--checker: exit %d, want 2 with cobra's unknown-flag error:\n%s", code, out)
	}
	serve := newMeshServeCmd()
	if f := serve.Flags().Lookup("checkers"); f == nil || f.Value.Type() != "stringSlice" {
		t.Fatalf("mesh serve has no --checkers NAME,... flag: %v", f)
	}
	if !strings.Contains(serve.Long, "--checker is gone: list the checker servers on every node with --checkers") {
		t.Errorf("the long help has no upgrade note:\n%s", serve.Long)
	}
	// Listed servers, comma-separated and repeated, pass validation: only the timeout is wrong.
	out, code = runCLI(t, "mesh", "serve", "--name", "a", "--listen", "127.0.0.1:0", "--peers", "b=127.0.0.1:7002,c=127.0.0.1:7003",
		"--checkers", "a,b", "--checkers", "c", "--probe-every", "1s", "--probe-timeout", "2s")
	if code != 2 || strings.Contains(out, "--checkers") || !strings.Contains(out, "--probe-timeout 2s") {
		t.Fatalf("valid --checkers: exit %d, want only the --probe-timeout error:\n%s", code, out)
	}
}

func TestMeshServeExitsOneWhenItCannotListen(t *testing.T) {
	taken, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer taken.Close()
	out, code := runCLI(t, "mesh", "serve", "--name", "a", "--listen", taken.Addr().String(), "--peers", "b=127.0.0.1:7002")
	if code != 1 || !strings.Contains(out, "listen on "+taken.Addr().String()) {
		t.Fatalf("exit %d, want 1 saying it cannot listen:\n%s", code, out)
	}
}

func TestMeshVerdictsPrintsTheViewOfARunningServer(t *testing.T) {
	lnA, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	a := &mesh.Node{Name: "a", Listen: lnA.Addr().String(), Listener: lnA,
		Peers: map[string]string{"b": "127.0.0.1:1"}, ProbeEvery: 200 * time.Millisecond, ProbeTimeout: 100 * time.Millisecond}
	if err := a.Open(); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- a.Serve(ctx) }()
	defer func() {
		cancel()
		if err := <-done; err != nil {
			t.Error(err)
		}
	}()

	out, code := runCLI(t, "mesh", "verdicts", "--from", a.Addr())
	if code != 0 {
		t.Fatalf("exit %d\n%s", code, out)
	}
	for _, w := range []string{"SERVER", "STATE", "route:", "as seen by a", "b: no data"} {
		if !strings.Contains(out, w) {
			t.Errorf("the table does not say %q:\n%s", w, out)
		}
	}
	out, code = runCLI(t, "mesh", "verdicts", "--from", a.Addr(), "--json")
	var s mesh.Snapshot
	if code != 0 || json.Unmarshal([]byte(out), &s) != nil || s.Server != "a" || len(s.Verdicts) != 2 || len(s.Route.Servers) == 0 {
		t.Fatalf("exit %d, not a snapshot of a's mesh with a route:\n%s", code, out)
	}

	out, code = runCLI(t, "mesh", "verdicts", "--from", "127.0.0.1:1", "--timeout", "2s")
	if code != 1 || !strings.Contains(out, "is `zero502 mesh serve` listening there?") {
		t.Fatalf("exit %d, want 1 saying nothing answers:\n%s", code, out)
	}
}

// mesh serve takes its key from --key-file or $ZERO502_MESH_KEY (never a flag's value), and
// refuses to start off loopback without one, saying where to give it.
func TestMeshServeKeyFromFileOrEnvironmentAndNoneOffLoopback(t *testing.T) {
	t.Setenv(meshKeyEnv, "")
	dir := t.TempDir()
	keyFile := filepath.Join(dir, "mesh.key")
	if err := os.WriteFile(keyFile, []byte("0123456789abcdef0123456789abcdef\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	empty := filepath.Join(dir, "empty")
	if err := os.WriteFile(empty, []byte("\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	// A timeout not below the round stops every run at validation, with the key checked.
	off := []string{"mesh", "serve", "--name", "a", "--listen", "0.0.0.0:0", "--peers", "b=10.0.0.6:7946", "--probe-every", "1s", "--probe-timeout", "2s"}
	out, code := runCLI(t, off...)
	if code != 2 || !strings.Contains(out, "no mesh key") || !strings.Contains(out, "--key-file") || !strings.Contains(out, meshKeyEnv) {
		t.Fatalf("off loopback without a key: exit %d, want 2 naming --key-file and $%s:\n%s", code, meshKeyEnv, out)
	}
	out, code = runCLI(t, append(off, "--key-file", keyFile)...)
	if code != 2 || strings.Contains(out, "no mesh key") || !strings.Contains(out, "--probe-timeout 2s") {
		t.Fatalf("key from the file: exit %d, want only the --probe-timeout error:\n%s", code, out)
	}
	out, code = runCLI(t, append(off, "--key-file", empty)...)
	if code != 2 || !strings.Contains(out, "--key-file") || !strings.Contains(out, "first line is empty") {
		t.Fatalf("an empty key file: exit %d, want 2 naming it:\n%s", code, out)
	}
	out, code = runCLI(t, append(off, "--peer-service", "z=tcp://10.0.0.9:443", "--key-file", keyFile)...)
	if code != 2 || !strings.Contains(out, "--peer-service z=tcp://10.0.0.9:443") || !strings.Contains(out, "not in --peers") {
		t.Fatalf("a service for a stranger: exit %d, want 2 naming it:\n%s", code, out)
	}
	t.Setenv(meshKeyEnv, "0123456789abcdef0123456789abcdef")
	out, code = runCLI(t, off...)
	if code != 2 || strings.Contains(out, "no mesh key") || !strings.Contains(out, "--probe-timeout 2s") {
		t.Fatalf("key from $%s: exit %d, want only the --probe-timeout error:\n%s", meshKeyEnv, code, out)
	}
	if newMeshServeCmd().Flags().Lookup("key") != nil {
		t.Error("mesh serve has a --key flag: a key in argv is visible in ps")
	}
}

// The key file that mesh serve's refusal off loopback without a key, and docs/mesh.md, tell the
// operator to make is one mesh serve then takes: made by the command shown, word for word, under
// the usual umask 022, it is readable by its owner alone (a 0644 key file is refused).
func TestMeshServeTakesTheKeyFileItsMessageSaysToMake(t *testing.T) {
	if _, err := exec.LookPath("openssl"); err != nil {
		t.Skip("openssl is not installed")
	}
	t.Setenv(meshKeyEnv, "")
	off := []string{"mesh", "serve", "--name", "a", "--listen", "0.0.0.0:0", "--peers", "b=10.0.0.6:7946", "--probe-every", "1s", "--probe-timeout", "2s"}
	out, code := runCLI(t, off...)
	_, rest, _ := strings.Cut(out, "e.g. `")
	command, _, ok := strings.Cut(rest, "`")
	if code != 2 || !ok || !strings.Contains(command, "/etc/zero502/mesh.key") {
		t.Fatalf("off loopback without a key: exit %d, want 2 showing how to make /etc/zero502/mesh.key:\n%s", code, out)
	}
	doc, err := os.ReadFile(filepath.Join("..", "..", "docs", "mesh.md"))
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(doc), command) {
		t.Errorf("docs/mesh.md does not make the key as the message does (%s)", command)
	}
	keyFile := filepath.Join(t.TempDir(), "mesh.key")
	sh := exec.Command("sh", "-c", "umask 022; "+strings.ReplaceAll(command, "/etc/zero502/mesh.key", keyFile))
	if msg, err := sh.CombinedOutput(); err != nil {
		t.Fatalf("%s: %v\n%s", command, err, msg)
	}
	out, code = runCLI(t, append(off, "--key-file", keyFile)...)
	if code != 2 || strings.Contains(out, "--key-file") || !strings.Contains(out, "--probe-timeout 2s") {
		t.Fatalf("the key made by %s: exit %d, want it taken (only the --probe-timeout error):\n%s", command, code, out)
	}
}

// The mesh unit's own example (the lines of /etc/zero502/mesh.env its comment shows) is a mesh
// serve that starts: off loopback it needs the mesh key, and the unit's dynamic user cannot read
// a root-owned 0600 --key-file, so the comment must give it as $ZERO502_MESH_KEY in mesh.env.
func TestTheMeshUnitsExampleStarts(t *testing.T) {
	t.Setenv(meshKeyEnv, "")
	var args []string
	for _, line := range strings.Split(readUnit(t, "zero502-mesh.service"), "\n") {
		name, value, ok := strings.Cut(strings.TrimSpace(strings.TrimPrefix(line, "#")), "=")
		switch {
		case !ok || !strings.HasPrefix(line, "#"):
		case name == "MESH_ARGS":
			args = strings.Fields(value)
		case name == meshKeyEnv:
			t.Setenv(meshKeyEnv, "0123456789abcdef0123456789abcdef") // its comment's placeholder, made a key
		}
	}
	if len(args) == 0 {
		t.Fatal("the mesh unit's comment shows no MESH_ARGS=")
	}
	// A timeout not below the round stops the run at validation, once everything else passed.
	out, code := runCLI(t, append(append([]string{"mesh", "serve"}, args...), "--probe-every", "1s", "--probe-timeout", "2s")...)
	if code != 2 || strings.Contains(out, "no mesh key") || !strings.Contains(out, "--probe-timeout 2s") {
		t.Fatalf("mesh serve %s (the unit's example): exit %d, want only the --probe-timeout error:\n%s", strings.Join(args, " "), code, out)
	}
}

// mesh serve refuses at startup (exit 2) a --check-command or --alert-command whose script
// another user could change, naming the flag, the script and the mode at fault.
func TestMeshServeRefusesAnUntrustedCheckOrAlertCommand(t *testing.T) {
	open := filepath.Join(t.TempDir(), "open")
	if err := os.Mkdir(open, 0o777); err != nil {
		t.Fatal(err)
	}
	_ = os.Chmod(open, 0o777)
	script := filepath.Join(open, "check.sh")
	if err := os.WriteFile(script, []byte("#!/bin/sh\nexit 0\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	serve := []string{"mesh", "serve", "--name", "a", "--listen", "127.0.0.1:0", "--peers", "b=127.0.0.1:7002"}
	for _, flag := range []string{"--check-command", "--alert-command"} {
		out, code := runCLI(t, append(serve, flag, script+" --quiet")...)
		if code != 2 {
			t.Fatalf("%s: exit %d, want 2\n%s", flag, code, out)
		}
		for _, w := range []string{flag, script, "0777"} {
			if !strings.Contains(out, w) {
				t.Errorf("%s: the message does not say %q:\n%s", flag, w, out)
			}
		}
	}
}

// Every environment variable through which a command takes a secret is one that the commands
// zero502 runs for the mesh and alerts never get (boundedcmd.SecretEnv).
func TestTheSecretVariablesAreKeptFromChildCommands(t *testing.T) {
	for _, env := range []string{alertWebhookEnv, lbAdminTokenEnv, edgeAdminTokenEnv, meshKeyEnv} {
		if !slices.Contains(boundedcmd.SecretEnv(), env) {
			t.Errorf("boundedcmd.SecretEnv() lacks $%s: a check or alert command would get it", env)
		}
	}
}
