package main

import (
	"bytes"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/zero502/zero502/infra/config"
	"github.com/zero502/zero502/infra/hostlock"
)

// --wait must be positive: with none, the decision would be recorded for the paused deploy to
// act on, and the command would still report it as not taken. Refused before the config is read.
func TestDecideRefusesAWaitThatIsNotPositive(t *testing.T) {
	for _, wait := range []string{"0s", "-1s"} {
		for _, decision := range []string{"promote", "abort"} {
			out, code := runCLI(t, "deploy", decision, "--config", "/nonexistent/zero502.yaml", "--wait", wait)
			if code != 2 || !strings.Contains(out, "--wait "+wait+": must be a positive duration") {
				t.Errorf("deploy %s --wait %s: exit %d, %q; want 2 naming --wait and the rule", decision, wait, code, out)
			}
		}
	}
}

// noneFleetIn writes a two-host process fleet behind no balancer (nothing to reach), its state
// under dir, as z.yaml there, and loads it.
func noneFleetIn(t *testing.T, dir string) (string, *config.Config) {
	t.Helper()
	cfg := strings.ReplaceAll(`balancer: {kind: none, interval: 250ms, timeout: 100ms, unhealthy_threshold: 2, healthy_threshold: 2}
drain: {window: 1500ms, shutdown: 1s, stop_grace: 4s, max_recovery: 2s}
watchdog: {interval: 1s, heal_after: 4, check_timeout: 500ms, state_dir: STATE}
app: {keepalive_idle_timeout: 10s}
rollout: {batch: 1, runtime: process, healthy_deadline: 10s}
services:
  - name: web
    command: ["{self}", "app", "--version", "{version}", "--port", "{port}"]
    port: 39001
hosts:
  - {name: host-a, address: 127.0.0.1, port_offset: 0, state_dir: STATE/host-a}
  - {name: host-b, address: 127.0.0.1, port_offset: 100, state_dir: STATE/host-b}
`, "STATE", filepath.Join(dir, "state"))
	path := filepath.Join(dir, "z.yaml")
	if err := os.WriteFile(path, []byte(cfg), 0o644); err != nil {
		t.Fatal(err)
	}
	c, err := config.Load(path)
	if err != nil {
		t.Fatal(err)
	}
	return path, c
}

// onlyJSONLines fails t unless every line of stdout is one JSON value.
func onlyJSONLines(t *testing.T, what, stdout string) {
	t.Helper()
	for i, line := range strings.Split(strings.TrimSpace(stdout), "\n") {
		if line != "" && !json.Valid([]byte(line)) {
			t.Errorf("%s: stdout line %d is not JSON: %q", what, i+1, line)
		}
	}
}

// rollback --json: stdout is the events and the report, JSON lines only; "rolling back to V"
// is a notice on stderr. Here the rollback is refused at once by a maintenance lock.
func TestRollbackJSONPrintsOnlyJSONOnStdout(t *testing.T) {
	path, _ := noneFleetIn(t, t.TempDir())
	if out, code := runCLI(t, "lock", "acquire", "--config", path, "-m", "test"); code != 0 {
		t.Fatalf("lock acquire: exit %d, %s", code, out)
	}
	var stdout, stderr bytes.Buffer
	code, err := execute(nil, &stdout, &stderr, "rollback", "--config", path, "--to", "v2", "--json")
	if code == 0 {
		t.Fatalf("rollback under a maintenance lock: exit 0, want it refused; stdout %q", stdout.String())
	}
	if !strings.Contains(stdout.String(), `"report"`) {
		t.Errorf("rollback --json: no report on stdout (%v): %q", err, stdout.String())
	}
	onlyJSONLines(t, "rollback --json", stdout.String())
	if !strings.Contains(stderr.String(), "rolling back to v2") {
		t.Errorf("rollback: the notice is not on stderr: %q", stderr.String())
	}
}

// deploy promote|abort --json when the paused deploy takes the decision: nothing but JSON on
// stdout; "the paused deploy took it" is a notice on stderr.
func TestDecideJSONPrintsOnlyJSONOnStdoutWhenThePausedDeployTakesIt(t *testing.T) {
	for _, decision := range []string{"promote", "abort"} {
		t.Run(decision, func(t *testing.T) {
			path, cfg := noneFleetIn(t, t.TempDir())
			// The paused deploy, played here: its record, the fleet lock held, and the record
			// removed once the decision is in it (as the deploy does when it takes it).
			record := filepath.Join(filepath.Dir(cfg.FleetLockPath()), "paused.json")
			if err := os.MkdirAll(filepath.Dir(record), 0o755); err != nil {
				t.Fatal(err)
			}
			if err := os.WriteFile(record, []byte(`{"version": "v2", "canary": ["host-a"], "by": "ops@test"}`), 0o644); err != nil {
				t.Fatal(err)
			}
			held, err := hostlock.TryAcquire(cfg.FleetLockPath(), hostlock.Holder{Who: "ops@test", Command: "zero502 deploy"})
			if err != nil {
				t.Fatal(err)
			}
			defer held.Release()
			done := make(chan struct{})
			defer close(done)
			go func() {
				for {
					select {
					case <-done:
						return
					case <-time.After(20 * time.Millisecond):
					}
					if data, err := os.ReadFile(record); err == nil && strings.Contains(string(data), `"decision"`) {
						_ = os.Remove(record)
						return
					}
				}
			}()
			var stdout, stderr bytes.Buffer
			code, err := execute(nil, &stdout, &stderr, "deploy", decision, "--config", path, "--json", "--wait", "20s")
			if code != 0 {
				t.Fatalf("deploy %s: exit %d (%v), stdout %q, stderr %q", decision, code, err, stdout.String(), stderr.String())
			}
			onlyJSONLines(t, "deploy "+decision+" --json", stdout.String())
			if !strings.Contains(stderr.String(), decision+": the paused deploy took it") {
				t.Errorf("deploy %s: the notice is not on stderr: %q", decision, stderr.String())
			}
		})
	}
}

// rollback --to with a version deploy's rule refuses: exit 2 before anything is printed, naming
// --to (the flag the user gave), not --version.
func TestRollbackRefusesABadToBeforeAnyOutput(t *testing.T) {
	path, _ := noneFleetIn(t, t.TempDir())
	for _, to := range []string{"bad/v", "-v1", strings.Repeat("v", 129)} {
		var stdout, stderr bytes.Buffer
		code, err := execute(nil, &stdout, &stderr, "rollback", "--config", path, "--to", to)
		want := fmt.Sprintf("--to %q: must be 1–128 letters, digits, . _ + - starting with a letter or digit", to)
		if code != 2 || err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("rollback --to %s: exit %d, error %v; want 2 and %q", to, code, err, want)
		}
		if stdout.Len() > 0 || stderr.Len() > 0 {
			t.Errorf("rollback --to %s printed before refusing: stdout %q, stderr %q", to, stdout.String(), stderr.String())
		}
	}
}
