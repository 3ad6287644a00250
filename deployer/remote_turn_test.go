package deployer

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/zero502/zero502/deployer/balancer"
	"github.com/zero502/zero502/deployer/report"
	"github.com/zero502/zero502/infra/config"
	"github.com/zero502/zero502/internal/testrig/poll"
)

// The host's side of a turn: its look first, then the step only on the word "go"; a stdin that
// ends first (the deployer went on without the host) is no go.
func TestAwaitTurnPrintsTheLookAndWaitsForGo(t *testing.T) {
	f := newFleet(t, 1)
	cfg := f.load(f.config("turn.yaml", defaultValues()))
	for _, tc := range []struct {
		stdin string
		want  bool
	}{{"go\n", true}, {"", false}, {"stop\n", false}, {"ready?\ngo\n", true}, {"ready?\nready?\n", false}} {
		var out bytes.Buffer
		got := AwaitTurn(context.Background(), cfg, "host-a", "v1", bufio.NewReader(strings.NewReader(tc.stdin)), &out)
		if got != tc.want {
			t.Errorf("stdin %q: go %t, want %t", tc.stdin, got, tc.want)
		}
		lines := strings.Split(strings.TrimSpace(out.String()), "\n")
		var line stepLine
		if err := json.Unmarshal([]byte(lines[0]), &line); err != nil || line.Look == nil || line.LookError != "" || !line.Asks {
			t.Errorf("stdin %q: printed %q (%v); want a {\"look\":…,\"asks\":true} line first", tc.stdin, out.String(), err)
		}
		// Every "ready?" is answered, on a line of its own.
		if asked, answered := strings.Count(tc.stdin, turnAsk+"\n"), strings.Count(out.String(), `{"ready":true}`); answered != asked || len(lines) != 1+asked {
			t.Errorf("stdin %q: printed %q; want the look and %d {\"ready\":true} lines", tc.stdin, out.String(), asked)
		}
	}
	var out bytes.Buffer
	if AwaitTurn(context.Background(), cfg, "host-x", "v1", bufio.NewReader(strings.NewReader("go\n")), &out) {
		t.Error("a look that failed still went")
	}
	if !strings.Contains(out.String(), `"look_error"`) || !strings.Contains(out.String(), "host-x") {
		t.Errorf("a host the config lacks printed %q; want its look_error naming it", out.String())
	}
}

// Each remote host's step is opened at preflight and waits for its batch. One whose session
// ends while it waits (here its process is killed by the pre_deploy hook, after preflight) is
// given a fresh session at its turn: the deploy still moves every host. A deploy refused after
// preflight leaves no waiting step behind on any host, and changes nothing.
func TestAStepThatLostItsSessionWhileItWaitedGetsAFreshOne(t *testing.T) {
	t.Parallel()
	s := startSSHD(t)
	f := newFleet(t, 2)
	path, cfg := f.remoteConfig(s, "ssh.yaml", 2)
	f.startLB(path)
	ctx := context.Background()
	opts := Options{RemoteBinary: bin}
	if _, err := f.deployer(cfg, nil, opts).Deploy(ctx, "v1"); err != nil {
		t.Fatalf("deploy v1: %v", err)
	}

	const version = "v2-lost-turn"
	hook := filepath.Join(f.dir, "kill-turn.sh")
	body := "#!/bin/sh\n[ \"$ZERO502_HOOK\" = pre_deploy ] || exit 0\n" +
		"pkill -f -- '--host host-b --version " + version + " .*--look-first' || { echo 'no waiting step of host-b' >&2; exit 9; }\n"
	if err := os.WriteFile(hook, []byte(body), 0o755); err != nil {
		t.Fatal(err)
	}
	cfg.Hooks.PreDeploy = config.Hook{Command: []string{hook}, Timeout: 10 * time.Second}
	var ev eventLog
	rep, err := f.deployer(cfg, &ev, opts).Deploy(ctx, version)
	if err != nil {
		t.Fatalf("deploy %s after host-b's waiting step was killed: %v\nevents:\n%s", version, err, &ev)
	}
	for _, h := range rep.Hosts {
		if h.Outcome != report.OutcomeDeployed || h.Running != version {
			t.Errorf("%s: %s, runs %q; want deployed %s\nevents:\n%s", h.Host, h.Outcome, h.Running, version, &ev)
		}
	}

	const refused = "v3-refused"
	cfg.Hooks.PreDeploy = config.Hook{Command: []string{"false"}, Timeout: 10 * time.Second}
	if _, err := f.deployer(cfg, nil, opts).Deploy(ctx, refused); err == nil {
		t.Fatal("a deploy whose pre_deploy hook fails went on")
	}
	poll.UntilNil(t, 15*time.Second, "a waiting step outlived the refused deploy", func() error {
		out, err := exec.Command("pgrep", "-af", "--", "--version "+refused+" .*--look-first").Output()
		if err == nil {
			return &waitingError{string(out)}
		}
		return nil
	})
	for host, v := range f.versions() {
		if v != version {
			t.Errorf("%s runs %q after the refused deploy, want %s", host, v, version)
		}
	}
}

type waitingError struct{ ps string }

func (e *waitingError) Error() string { return "still running: " + e.ps }

// A step opened at its turn (its waiting one was gone) whose look fails there is never told go:
// it changed nothing, and the deploy says why, in the host's own words, not that the step was
// lost after it began. host-b is the one over ssh, so its waiting step is long gone when host-a's
// batch is done.
func TestAStepWhoseLookFailsAtItsTurnIsUntouchedAndSaysWhy(t *testing.T) {
	t.Parallel()
	s := startSSHD(t)
	f := newFleet(t, 2)
	_, cfg := f.remoteConfig(s, "ssh.yaml", 0)
	cfg.Hosts[1].SSH, cfg.Hosts[1].Address = s.target(), "127.0.0.1"
	mark := filepath.Join(f.dir, "looked-once")
	fake := fakeRemoteBinary(t, f.dir, "zero502-look-fails", `  if [ -e `+mark+` ]; then
    echo '{"look_error":"host host-b: runtime: the runtime does not answer (test)"}'
    exit 0
  fi
  : > `+mark+` # preflight's step: its look, then it is gone before its turn
  echo '{"look":{"from":"","instance":false,"in_progress":false,"serving":false,"running":""},"asks":true}'
  exit 0
`)
	var ev eventLog
	rep, err := f.deployer(cfg, &ev, Options{RemoteBinary: fake, Balancer: balancer.None{}}).Deploy(context.Background(), "v2")
	if err == nil || !strings.Contains(err.Error(), "the runtime does not answer (test)") {
		t.Errorf("deploy whose host-b look fails at its turn: %v; want the host's look error\n%s", err, &ev)
	}
	if h := rep.Hosts[1]; h.Outcome != report.OutcomeUntouched {
		t.Errorf("host-b %s: %s; want %s: it was never told to begin\n%s", h.Outcome, h.Error, report.OutcomeUntouched, &ev)
	}
}

// A waiting step that quits when asked whether it is there (its turn come, before go) was never
// told to begin: untouched, not "lost after it began: unknown".
func TestAStepThatQuitsBeforeGoIsUntouched(t *testing.T) {
	t.Parallel()
	s := startSSHD(t)
	f := newFleet(t, 2)
	_, cfg := f.remoteConfig(s, "ssh.yaml", 1)
	fake := fakeRemoteBinary(t, f.dir, "zero502-quits", `  echo '{"look":{"from":"","instance":false,"in_progress":false,"serving":false,"running":""},"asks":true}'
  while IFS= read -r l; do [ "$l" = "ready?" ] && exit 0; done
  exit 0
`)
	var ev eventLog
	rep, err := f.deployer(cfg, &ev, Options{RemoteBinary: fake, Balancer: balancer.None{}}).Deploy(context.Background(), "v2")
	if err == nil || !strings.Contains(err.Error(), "host host-a") {
		t.Fatalf("deploy whose host-a step quits before go: %v; want an error naming host-a\n%s", err, &ev)
	}
	if h := rep.Hosts[0]; h.Outcome != report.OutcomeUntouched {
		t.Errorf("host-a %s: %s; want %s: it was never told to begin\n%s", h.Outcome, h.Error, report.OutcomeUntouched, &ev)
	}
}
