package deployer

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/zero502/zero502/deployer/report"
	"github.com/zero502/zero502/infra/boundedcmd"
	"github.com/zero502/zero502/infra/config"
	"github.com/zero502/zero502/internal/testrig/poll"
)

// hookScript writes the tests' hook into dir: it appends one line of what it was told to log,
// and for pre_traffic fetches / straight from the new instance (which must answer with the new
// version). It fails, saying so, when its first argument names the hook that runs.
func hookScript(t *testing.T, dir string) (script, log string) {
	t.Helper()
	script, log = filepath.Join(dir, "hook.sh"), filepath.Join(dir, "hooks.log")
	body := `#!/bin/sh
echo "$ZERO502_HOOK version=$ZERO502_VERSION host=$ZERO502_HOST service=$ZERO502_SERVICE target=$ZERO502_TARGET previous=$ZERO502_PREVIOUS_VERSION running=$ZERO502_RUNNING fleet=$ZERO502_FLEET_HOSTS error=$ZERO502_ERROR" >> ` + log + `
if [ "$ZERO502_HOOK" = pre_traffic ]; then
  curl -fsS --max-time 2 "http://$ZERO502_TARGET/" | grep -q "version $ZERO502_VERSION" || { echo "the new instance does not answer" >&2; exit 3; }
fi
if [ "$ZERO502_HOOK" = "$1" ]; then echo "refusing $1 on purpose" >&2; exit 7; fi
exit 0
`
	if err := os.WriteFile(script, []byte(body), 0o755); err != nil {
		t.Fatal(err)
	}
	return script, log
}

// withHooks sets every hook of cfg to script, failing the one named fail ("" none).
func withHooks(cfg *config.Config, script, fail string) {
	h := config.Hook{Command: []string{script, fail}, Timeout: 10 * time.Second}
	cfg.Hooks = config.Hooks{PreDeploy: h, PreTraffic: h, PostTraffic: h, PostDeploy: h, OnFailure: h}
}

// hookLines is the hooks' log, one run a line ("" when none ran).
func hookLines(t *testing.T, log string) []string {
	t.Helper()
	data, err := os.ReadFile(log)
	if errors.Is(err, os.ErrNotExist) {
		return nil
	}
	if err != nil {
		t.Fatal(err)
	}
	return strings.Split(strings.TrimSpace(string(data)), "\n")
}

// Every hook runs at its point of a deploy with the deploy's facts: pre_deploy first,
// pre_traffic on each host before its new instance is in rotation (and the instance answers it
// directly), post_traffic once it is, post_deploy last with what every host runs.
func TestHooksRunAtTheirPointsWithTheDeploysFacts(t *testing.T) {
	t.Parallel()
	f := newFleet(t, 2)
	script, log := hookScript(t, f.dir)
	cfg := f.load(f.config("fleet.yaml", defaultValues()))
	withHooks(cfg, script, "")
	path := f.write("fleet.yaml", cfg)
	f.startLB(path)
	ctx := context.Background()
	if _, err := f.deployer(f.load(path), nil, Options{}).Deploy(ctx, "v1"); err != nil {
		t.Fatal(err)
	}
	if err := os.Remove(log); err != nil {
		t.Fatal(err)
	}
	var ev eventLog
	if _, err := f.deployer(f.load(path), &ev, Options{}).Deploy(ctx, "v2"); err != nil {
		t.Fatalf("deploy v2 with every hook passing: %v\nevents:\n%s", err, &ev)
	}
	lines := hookLines(t, log)
	target := func(i int) string { return fmt.Sprintf("127.0.0.1:%d", f.base+f.offsets[i]) }
	want := []string{
		"pre_deploy version=v2 host= service= target= previous= running= fleet=host-a,host-b error=",
		"pre_traffic version=v2 host=host-a service=web target=" + target(0) + " previous=v1 running= fleet=host-a,host-b error=",
		"post_traffic version=v2 host=host-a service=web target=" + target(0) + " previous=v1 running= fleet=host-a,host-b error=",
		"pre_traffic version=v2 host=host-b service=web target=" + target(1) + " previous=v1 running= fleet=host-a,host-b error=",
		"post_traffic version=v2 host=host-b service=web target=" + target(1) + " previous=v1 running= fleet=host-a,host-b error=",
		"post_deploy version=v2 host= service= target= previous= running=host-a=v2,host-b=v2 fleet=host-a,host-b error=",
	}
	if !slices.Equal(lines, want) {
		t.Fatalf("hooks ran:\n%s\nwant:\n%s\nevents:\n%s", strings.Join(lines, "\n"), strings.Join(want, "\n"), &ev)
	}
	// pre_traffic passed before the balancer had the new instance; post_traffic after.
	for _, host := range []string{"host-a", "host-b"} {
		pre, in, post := -1, -1, -1
		for i, e := range ev.events {
			switch {
			case e.Host == host && e.Step == stepHook && strings.HasPrefix(e.Message, "hooks.pre_traffic"):
				pre = i
			case e.Host == host && e.Step == stepInRotation && e.Version == "v2" && in < 0:
				in = i
			case e.Host == host && e.Step == stepHook && strings.HasPrefix(e.Message, "hooks.post_traffic"):
				post = i
			}
		}
		if !(pre >= 0 && pre < in && in < post) {
			t.Errorf("%s: pre_traffic event #%d, in rotation #%d, post_traffic #%d: want them in that order\nevents:\n%s", host, pre, in, post, &ev)
		}
	}
}

// A failing check before traffic (the pre_traffic hook, or a smoke request) stops the host
// before its new instance takes any user: stop-first holds the target out at the LB, start-first
// never takes the old version out of rotation. The host is rolled back, the next one never
// reached, on_failure is told why and what runs where, and no request of the load fails.
func TestFailingCheckBeforeTrafficKeepsTheOldVersionServing(t *testing.T) {
	for _, tc := range []struct {
		name, strategy, gate string
	}{
		{"stop-first pre_traffic hook", config.StopFirst, "hook"},
		{"start-first pre_traffic hook", config.StartFirst, "hook"},
		{"start-first smoke", config.StartFirst, "smoke"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			f := newFleet(t, 2)
			script, log := hookScript(t, f.dir)
			cfg := f.load(f.config("good.yaml", defaultValues()))
			cfg.Rollout.Strategy = tc.strategy
			if tc.strategy == config.StartFirst {
				cfg.Services[0].Ports = []int{f.base, f.gatewayBase()}
			}
			withHooks(cfg, script, "")
			good := f.write("good.yaml", cfg)
			bad := *cfg
			bad.Services = slices.Clone(cfg.Services)
			switch tc.gate {
			case "hook":
				withHooks(&bad, script, "pre_traffic")
			case "smoke": // v2 answers its smoke with 500s (its health is fine)
				bad.Services[0].Command = append(slices.Clone(bad.Services[0].Command), "--fail-every", "1")
				bad.Services[0].Smoke = []config.SmokeRequest{{Method: "GET", Path: "/", ExpectStatus: 200, Timeout: time.Second}}
			}
			badPath := f.write("bad.yaml", &bad)
			f.startLB(good)
			ctx := context.Background()
			if _, err := f.deployer(f.load(good), nil, Options{}).Deploy(ctx, "v1"); err != nil {
				t.Fatal(err)
			}
			if err := os.Remove(log); err != nil {
				t.Fatal(err)
			}
			rep, res, ev, err := f.deployUnderLoad(ctx, badPath, "v2")
			wantErr := map[string]string{"hook": "hooks.pre_traffic", "smoke": "services[].smoke[0] GET /"}[tc.gate]
			if err == nil || !strings.Contains(err.Error(), wantErr) || !strings.Contains(err.Error(), "before taking traffic") {
				t.Fatalf("deploy v2 failing its %s: %v; want %q named\nevents:\n%s", tc.gate, err, wantErr, ev)
			}
			if tc.gate == "hook" && !strings.Contains(err.Error(), "refusing pre_traffic on purpose") {
				t.Errorf("the error does not carry the hook's output: %v", err)
			}
			requireNoFailure(t, res)
			if a := rep.Hosts[0]; a.Outcome != report.OutcomeRolledBack || a.Running != "v1" {
				t.Errorf("host-a: %s, runs %q; want rolled back to v1", a.Outcome, a.Running)
			}
			if b := rep.Hosts[1]; b.Outcome != report.OutcomeNotReached || b.Running != "v1" {
				t.Errorf("host-b: %s, runs %q; want not reached, on v1", b.Outcome, b.Running)
			}
			for _, e := range ev.events {
				if e.Step == stepInRotation && e.Version == "v2" {
					t.Errorf("v2 was put in rotation although it failed its %s: %s", tc.gate, e.Message)
				}
				if tc.strategy == config.StartFirst && e.Version == "v1" && (e.Step == stepLeftRotation || e.Step == StepDrain || e.Step == stepStopped) {
					t.Errorf("start-first took v1 out although v2 never passed: %s %s", e.Step, e.Message)
				}
			}
			lines := hookLines(t, log)
			last := ""
			if len(lines) > 0 {
				last = lines[len(lines)-1]
			}
			if !strings.HasPrefix(last, "on_failure version=v2") || !strings.Contains(last, "running=host-a=v1,host-b=v1") ||
				!strings.Contains(last, "error=host host-a") {
				t.Errorf("on_failure ran as %q; want it last, told what runs where and why\nevery hook:\n%s", last, strings.Join(lines, "\n"))
			}
			for _, l := range lines {
				if strings.HasPrefix(l, "post_traffic") || strings.HasPrefix(l, "post_deploy") {
					t.Errorf("%s ran although the deploy failed before traffic", l)
				}
			}
		})
	}
}

// A failing post_traffic hook rolls its host back through the drain (no request fails), and
// the deploy stops there.
func TestFailingPostTrafficHookRollsTheHostBack(t *testing.T) {
	t.Parallel()
	f := newFleet(t, 2)
	script, _ := hookScript(t, f.dir)
	cfg := f.load(f.config("good.yaml", defaultValues()))
	good := f.write("good.yaml", cfg)
	withHooks(cfg, script, "post_traffic")
	bad := f.write("bad.yaml", cfg)
	f.startLB(good)
	ctx := context.Background()
	if _, err := f.deployer(f.load(good), nil, Options{}).Deploy(ctx, "v1"); err != nil {
		t.Fatal(err)
	}
	rep, res, ev, err := f.deployUnderLoad(ctx, bad, "v2")
	if err == nil || !strings.Contains(err.Error(), "hooks.post_traffic") || !strings.Contains(err.Error(), "exit status 7") {
		t.Fatalf("deploy v2 with a failing post_traffic: %v; want the hook and its exit named\nevents:\n%s", err, ev)
	}
	requireNoFailure(t, res)
	if a := rep.Hosts[0]; a.Outcome != report.OutcomeRolledBack || a.Running != "v1" {
		t.Errorf("host-a: %s, runs %q; want rolled back to v1", a.Outcome, a.Running)
	}
	if b := rep.Hosts[1]; b.Outcome != report.OutcomeNotReached {
		t.Errorf("host-b: %s, want not reached", b.Outcome)
	}
}

// The fleet's hooks: a failing pre_deploy refuses the deploy with nothing changed (on_failure is
// for failures, not refusals); a pre_deploy past its timeout is killed with its children; a
// hook in a directory anyone may write is refused before it runs; a failing post_deploy makes
// the deploy fail with every host left on the new version, said so.
func TestFleetHooksRefuseFailAndTimeOut(t *testing.T) {
	t.Parallel()
	f := newFleet(t, 2)
	script, log := hookScript(t, f.dir)
	cfg := f.load(f.config("fleet.yaml", defaultValues()))
	plain := f.write("plain.yaml", cfg)
	f.startLB(plain)
	ctx := context.Background()
	if _, err := f.deployer(f.load(plain), nil, Options{}).Deploy(ctx, "v1"); err != nil {
		t.Fatal(err)
	}
	deploy := func(c *config.Config, version string) (*report.Report, error) {
		t.Helper()
		return f.deployer(f.load(f.write("hooked.yaml", c)), nil, Options{}).Deploy(ctx, version)
	}
	var refused *refusedError

	withHooks(cfg, script, "pre_deploy")
	rep, err := deploy(cfg, "v2")
	if !errors.As(err, &refused) || !strings.Contains(err.Error(), "hooks.pre_deploy") || !strings.Contains(err.Error(), "nothing was changed") {
		t.Fatalf("a failing pre_deploy: %v; want a refusal naming it", err)
	}
	for _, h := range rep.Hosts {
		if h.Running != "v1" {
			t.Errorf("%s runs %q after a refused deploy, want v1", h.Host, h.Running)
		}
	}
	if lines := hookLines(t, log); len(lines) != 1 || !strings.HasPrefix(lines[0], "pre_deploy") {
		t.Errorf("hooks after a refused pre_deploy: %q, want pre_deploy alone (no on_failure for a refusal)", lines)
	}

	pidFile := filepath.Join(f.dir, "sleeper.pid")
	cfg.Hooks = config.Defaults().Hooks
	cfg.Hooks.PreDeploy = config.Hook{Command: []string{"sh", "-c", "sleep 60 & echo $! > " + pidFile + "; wait"}, Timeout: 300 * time.Millisecond}
	_, err = deploy(cfg, "v2")
	if !errors.As(err, &refused) || !strings.Contains(err.Error(), "did not finish within hooks.pre_deploy.timeout 300ms") {
		t.Fatalf("a pre_deploy past its timeout: %v; want a refusal naming the timeout", err)
	}
	data, rerr := os.ReadFile(pidFile)
	pid, perr := strconv.Atoi(strings.TrimSpace(string(data)))
	if rerr != nil || perr != nil {
		t.Fatalf("the hook's child wrote no pid: %v %v", rerr, perr)
	}
	t.Cleanup(func() { _ = syscall.Kill(pid, syscall.SIGKILL) })
	poll.Until(t, 5*time.Second, fmt.Sprintf("the timed-out hook's child %d gone with the hook's process group", pid),
		func() bool { return syscall.Kill(pid, 0) != nil })

	open := filepath.Join(f.dir, "open")
	if err := os.Mkdir(open, 0o777); err != nil {
		t.Fatal(err)
	}
	if err := os.Chmod(open, 0o777); err != nil {
		t.Fatal(err)
	}
	swappable := filepath.Join(open, "hook.sh")
	if err := os.WriteFile(swappable, []byte("#!/bin/sh\ntouch "+filepath.Join(f.dir, "ran")+"\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	cfg.Hooks.PreDeploy = config.Hook{Command: []string{swappable}, Timeout: 10 * time.Second}
	_, err = deploy(cfg, "v2")
	if !errors.As(err, &refused) || !strings.Contains(err.Error(), "refused to run "+swappable) || !strings.Contains(err.Error(), "mode 0777") {
		t.Fatalf("a hook in a 0777 directory: %v; want it refused, naming the directory's mode", err)
	}
	if _, err := os.Stat(filepath.Join(f.dir, "ran")); err == nil {
		t.Error("the refused hook ran")
	}
	// the same script given to a trusted interpreter: what runs is the script, refused alike
	cfg.Hooks.PreDeploy = config.Hook{Command: []string{"sh", swappable}, Timeout: 10 * time.Second}
	_, err = deploy(cfg, "v2")
	if !errors.As(err, &refused) || !strings.Contains(err.Error(), "with the file "+swappable) || !strings.Contains(err.Error(), "mode 0777") {
		t.Fatalf("sh running a script in a 0777 directory: %v; want it refused, naming the script and the directory's mode", err)
	}
	if _, err := os.Stat(filepath.Join(f.dir, "ran")); err == nil {
		t.Error("the refused hook's script ran")
	}

	_ = os.Remove(log)
	withHooks(cfg, script, "post_deploy")
	rep, err = deploy(cfg, "v2")
	if err == nil || errors.As(err, &refused) || !strings.Contains(err.Error(), "every host runs v2, verified, and stays on it, but hooks.post_deploy") {
		t.Fatalf("a failing post_deploy: %v; want a failure saying every host stays on v2", err)
	}
	for _, h := range rep.Hosts {
		if h.Running != "v2" || h.Outcome != report.OutcomeDeployed {
			t.Errorf("%s: %s, runs %q; want deployed, on v2", h.Host, h.Outcome, h.Running)
		}
	}
	lines := hookLines(t, log)
	if len(lines) == 0 || !strings.HasPrefix(lines[len(lines)-1], "on_failure") || !strings.Contains(lines[len(lines)-1], "running=host-a=v2,host-b=v2") {
		t.Errorf("hooks after a failing post_deploy: %q; want on_failure last, told every host runs v2", lines)
	}
}

// A hook that exits leaving a child behind takes it with it: one still holding the hook's output
// neither fails the hook (its exit is its verdict) nor goes on running after the deploy moved on.
func TestHookChildrenLeftBehindDieWhenTheHookExits(t *testing.T) {
	t.Parallel()
	f := newFleet(t, 1)
	cfg := f.load(f.config("fleet.yaml", defaultValues()))
	pidFile := filepath.Join(f.dir, "leftover.pid")
	h := config.Hook{Command: []string{"sh", "-c", "sleep 60 & echo $! > " + pidFile + "; echo checked"}, Timeout: 30 * time.Second}
	var ev eventLog
	if err := f.deployer(cfg, &ev, Options{}).runHook(context.Background(), "pre_deploy", h, "v1", nil); err != nil {
		t.Fatalf("a pre_deploy that exits 0 leaving a child holding its output: %v; want it passed", err)
	}
	if !strings.Contains(ev.String(), "hooks.pre_deploy (sh -c sleep 60 & echo $! > "+pidFile+"; echo checked) passed") ||
		!strings.Contains(ev.String(), "its output ends: checked") {
		t.Errorf("events:\n%s\nwant the hook passed, its output shown", &ev)
	}
	data, rerr := os.ReadFile(pidFile)
	pid, perr := strconv.Atoi(strings.TrimSpace(string(data)))
	if rerr != nil || perr != nil {
		t.Fatalf("the hook's child wrote no pid: %v %v", rerr, perr)
	}
	t.Cleanup(func() { _ = syscall.Kill(pid, syscall.SIGKILL) })
	poll.Until(t, 10*time.Second, fmt.Sprintf("the child %d the pre_deploy hook left gone once the hook exited", pid),
		func() bool { return syscall.Kill(pid, 0) != nil })
}

// A hook runs with the deploy's ZERO502_* facts and the deploy job's environment, less
// zero502's own secrets (the admin tokens, the mesh key, the webhook: boundedcmd.SecretEnv): a
// hook is the user's program, and needs none of them to do its work.
func TestAHookGetsNoneOfZero502sOwnSecrets(t *testing.T) {
	f := newFleet(t, 1)
	cfg := f.load(f.config("env.yaml", defaultValues()))
	for _, name := range boundedcmd.SecretEnv() {
		t.Setenv(name, "zero502-own-"+name)
	}
	t.Setenv("HOOK_TEST_KEPT", "kept")
	env := filepath.Join(f.dir, "hook.env")
	script := filepath.Join(f.dir, "env-hook.sh")
	if err := os.WriteFile(script, []byte("#!/bin/sh\nenv > "+env+"\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	d := f.deployer(cfg, nil, Options{})
	if err := d.runHook(context.Background(), "pre_deploy", config.Hook{Command: []string{script}, Timeout: 10 * time.Second}, "v1", nil); err != nil {
		t.Fatalf("pre_deploy: %v", err)
	}
	data, err := os.ReadFile(env)
	if err != nil {
		t.Fatal(err)
	}
	if strings.Contains(string(data), "zero502-own-") || !strings.Contains(string(data), "HOOK_TEST_KEPT=kept") ||
		!strings.Contains(string(data), "ZERO502_HOOK=pre_deploy") {
		t.Errorf("the hook's environment:\n%s\nwant none of %v, HOOK_TEST_KEPT and ZERO502_HOOK", data, boundedcmd.SecretEnv())
	}
}
