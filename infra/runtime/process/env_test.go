package process

import (
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/zero502/zero502/infra/runtime"
	"github.com/zero502/zero502/infra/spec"
	"github.com/zero502/zero502/internal/testrig/poll"
)

// envDumper writes its environment to file, then runs until stopped.
func envDumper(file string) []string {
	return []string{"sh", "-c", `env > "$0.tmp" && mv "$0.tmp" "$0"; exec sleep 60`, file}
}

// readEnv waits for the environment file a service wrote and returns it as a map, without the
// variables the shell sets itself.
func readEnv(t *testing.T, file string) map[string]string {
	t.Helper()
	var data []byte
	poll.Until(t, 10*time.Second, "the service to write "+file, func() bool {
		var err error
		data, err = os.ReadFile(file)
		return err == nil
	})
	env := map[string]string{}
	for _, line := range strings.Split(strings.TrimSpace(string(data)), "\n") {
		k, v, _ := strings.Cut(line, "=")
		switch k {
		case "PWD", "OLDPWD", "SHLVL", "_":
			continue // the shell's own
		}
		env[k] = v
	}
	return env
}

func TestAServiceGetsItsConfiguredEnvOnTheFixedBaseAndNothingOfTheStarters(t *testing.T) {
	t.Setenv("AWS_SECRET_ACCESS_KEY", "starter-secret")
	t.Setenv("SSH_AUTH_SOCK", "/tmp/agent.sock")
	t.Setenv("ZERO502_X", "starter-only")
	t.Setenv("PATH", "/starter/bin:"+os.Getenv("PATH"))
	dir := t.TempDir()
	rt := newRuntime(t, dir)
	file := filepath.Join(t.TempDir(), "env")
	start(t, rt, spec.Service{Name: "web", Version: "v1", Command: envDumper(file),
		Env: map[string]string{"GREETING": "hi", "TZ": "Europe/Paris"}})

	got := readEnv(t, file)
	want := runtime.BaseEnv()
	want["GREETING"], want["TZ"] = "hi", "Europe/Paris" // configured env overrides the base
	if !equalEnv(got, want) {
		t.Fatalf("service environment\n%v\nwant exactly\n%v", sortedEnv(got), sortedEnv(want))
	}
	if want["PATH"] != runtime.BasePath || want["LANG"] != "C.UTF-8" || want["HOME"] == "" {
		t.Fatalf("base env %v: want PATH %s, LANG C.UTF-8 and a HOME", want, runtime.BasePath)
	}
}

// A second command (another environment: a shell, systemd) starts the same process.
func TestTheEnvDoesNotDependOnWhoStartsTheService(t *testing.T) {
	dir := t.TempDir()
	rt := newRuntime(t, dir)
	env := map[string]string{"GREETING": "hi"}
	mine := filepath.Join(t.TempDir(), "env-mine")
	start(t, rt, spec.Service{Name: "web", Version: "v1", Command: envDumper(mine), Env: env})

	theirs := filepath.Join(t.TempDir(), "env-theirs")
	arg, _ := json.Marshal(map[string]any{"Dir": dir,
		"Svc": spec.Service{Name: "worker", Version: "v1", Command: envDumper(theirs), Env: env}})
	starter := exec.Command(os.Args[0], "-test.run=^$")
	starter.Env = []string{helperEnv + "=" + string(arg), "PATH=/usr/bin:/bin", "HOME=/nonexistent",
		"INVOCATION_ID=systemd-unit", "GITHUB_TOKEN=ci-secret", "LANG=de_DE.UTF-8"}
	if out, err := starter.CombinedOutput(); err != nil {
		t.Fatalf("starter command: %v: %s", err, out)
	}
	a, b := readEnv(t, mine), readEnv(t, theirs)
	if !equalEnv(a, b) {
		t.Fatalf("started here:\n%v\nstarted by another command:\n%v\nwant the same environment", sortedEnv(a), sortedEnv(b))
	}
	if _, ok := b["GITHUB_TOKEN"]; ok {
		t.Fatalf("the starter's GITHUB_TOKEN reached the service: %v", sortedEnv(b))
	}
}

func TestACommandIsLookedUpInTheServicesPATHNotTheStarters(t *testing.T) {
	bin := t.TempDir()
	if err := os.WriteFile(filepath.Join(bin, "only-in-starter-path"), []byte("#!/bin/sh\nexec sleep 60\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	t.Setenv("PATH", bin+":"+os.Getenv("PATH"))
	rt := newRuntime(t, t.TempDir())
	_, err := rt.Start(t.Context(), "host-a", spec.Service{Name: "web", Version: "v1", Command: []string{"only-in-starter-path"}})
	if err == nil || !strings.Contains(err.Error(), runtime.BasePath) {
		t.Fatalf("Start of a program only the starter's PATH has = %v, want an error naming the service's PATH", err)
	}
	start(t, rt, spec.Service{Name: "web", Version: "v1", Command: []string{"only-in-starter-path"},
		Env: map[string]string{"PATH": bin + ":" + runtime.BasePath}})
}

func equalEnv(a, b map[string]string) bool {
	if len(a) != len(b) {
		return false
	}
	for k, v := range a {
		if w, ok := b[k]; !ok || w != v {
			return false
		}
	}
	return true
}

func sortedEnv(env map[string]string) []string {
	out := runtime.EnvList(env)
	sort.Strings(out)
	return out
}

// A service runs in "/" (as systemd runs a system service), whoever starts it and from wherever:
// a relative argument (python3 app.py) names the same file after a deploy from a shell as after
// a heal by the watchdog.
func TestAServiceRunsInTheRootDirectoryWhoeverStartsIt(t *testing.T) {
	state := t.TempDir()
	rt := newRuntime(t, state)
	for i, cwd := range []string{t.TempDir(), t.TempDir()} {
		t.Chdir(cwd)
		out := filepath.Join(state, "pwd"+strconv.Itoa(i))
		svc := spec.Service{Name: "web", Version: "v1", Command: []string{"/bin/sh", "-c", "pwd > " + out + ".tmp && mv " + out + ".tmp " + out + "; exec sleep 30"}}
		inst := start(t, rt, svc)
		var data []byte
		poll.Until(t, 10*time.Second, "the service to write "+out, func() bool {
			var err error
			data, err = os.ReadFile(out)
			return err == nil
		})
		if got := strings.TrimSpace(string(data)); got != "/" {
			t.Fatalf("the service started from %s runs in %q; want / whoever starts it", cwd, got)
		}
		if _, err := rt.Stop(t.Context(), inst, 0); err != nil {
			t.Fatal(err)
		}
		if err := rt.Remove(t.Context(), inst); err != nil {
			t.Fatal(err)
		}
	}
}

// An env no process can be given (a NUL in a value, a name that is not a variable's name) is
// refused by CheckProgram, the pre-flight, and by Start, naming services[].env, the variable and
// the rule, before anything starts.
func TestAnEnvNoProcessCanBeGivenIsRefusedNamingTheVariable(t *testing.T) {
	rt := newRuntime(t, t.TempDir())
	for _, env := range []map[string]string{{"TOKEN": "ab\x00cd"}, {"TOKEN=x": "y"}} {
		svc := spec.Service{Name: "web", Version: "v1", Command: []string{"/bin/sleep", "5"}, Env: env}
		if err := rt.CheckProgram(svc); err == nil || !strings.Contains(err.Error(), "TOKEN") || !strings.Contains(err.Error(), "services[].env") {
			t.Fatalf("CheckProgram of env %q = %v; want a refusal naming services[].env and TOKEN", env, err)
		}
		if _, err := rt.Start(t.Context(), "host-a", svc); err == nil || !strings.Contains(err.Error(), "TOKEN") || !strings.Contains(err.Error(), "services[].env") {
			t.Fatalf("Start of env %q = %v; want a refusal naming services[].env and TOKEN", env, err)
		}
	}
}
