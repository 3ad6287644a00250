package deployer

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/zero502/zero502/deployer/balancer"
	"github.com/zero502/zero502/deployer/report"
	"github.com/zero502/zero502/infra/config"
	"github.com/zero502/zero502/infra/spec"
	"github.com/zero502/zero502/internal/testrig/poll"
)

// judgedOverSSHOnV1 is a judged fleet of 3 hosts whose canary, host-a, is reached over ssh
// (edit changes its config), on v1 and in rotation at its LB; v2 is a config of a version that
// fails every request, whose canary's verdict fails and rolls host-a back.
func judgedOverSSHOnV1(t *testing.T, edit func(*config.Config)) (f *fleet, v2 string) {
	t.Helper()
	s := startSSHD(t)
	f = newFleet(t, 3)
	_, cfg := f.remoteConfig(s, "good.yaml", 1)
	judged(cfg, analysisWindow, canaryFor)
	cfg.Rollout.Analysis.MinRequests = 10
	if edit != nil {
		edit(cfg)
	}
	good := f.write("good.yaml", cfg)
	bad := f.load(good)
	bad.Services[0].Command = append(bad.Services[0].Command, "--fail-every", "1")
	v2 = f.write("v2.yaml", bad)
	f.startLB(good)
	ctx := context.Background()
	if _, err := f.deployer(f.load(good), nil, Options{RemoteBinary: bin}).Deploy(ctx, "v1"); err != nil {
		t.Fatalf("deploy v1: %v", err)
	}
	poll.UntilNil(t, 10*time.Second, "the LB has every host in rotation", func() error {
		for _, h := range f.load(good).Targets() {
			if st, err := balancer.NewInHouse(f.admin, "").TargetState(ctx, h); err != nil || !st.InRotation {
				return fmt.Errorf("%s: %+v %v", h, st, err)
			}
		}
		return nil
	})
	return f, v2
}

// A failed verdict rolls back the canary, a host over ssh; when ssh cannot reach it for the step
// back, the host still runs the new version, and the report says so: unreachable, not changed,
// running v2 (never v1, the version it was to go back to), and the deploy's error names it.
func TestRemoteRollbackThatCannotReachTheHostReportsTheVersionItRuns(t *testing.T) {
	t.Parallel()
	f, v2 := judgedOverSSHOnV1(t, nil)
	// ssh reaches host-a for v2's step, and never for a step to v1: the rollback's.
	wrapper := f.sshWrapper(`case "$*" in *"--version v1 "*) echo "ssh: connect to host 127.0.0.1 port 22: Connection refused" >&2; exit 255;; esac`)
	rep, _, err := deployFailingVerdict(t, f, v2, Options{RemoteBinary: bin, SSH: wrapper})
	if !strings.Contains(err.Error(), "the rollback failed on host-a (runs v2)") {
		t.Errorf("error does not say the rollback failed on host-a, which runs v2: %v", err)
	}
	if got := f.versions()["host-a"]; got != "v2" {
		t.Fatalf("host-a runs %q; the rig's rollback was meant to be cut off, leaving v2", got)
	}
	a := rep.Hosts[0]
	if a.Running != "v2" || a.Outcome != report.OutcomeUnreachable || a.From != "v1" || a.To != "v2" {
		t.Errorf("host-a reported %s, runs %q, from %q to %q; want unreachable (not changed), running v2, from v1 to v2: %s",
			a.Outcome, a.Running, a.From, a.To, a.Error)
	}
	for _, h := range rep.Hosts[1:] {
		if h.Outcome != report.OutcomeNotReached || h.Running != "v1" {
			t.Errorf("%s: %s, runs %q; want not reached, v1", h.Host, h.Outcome, h.Running)
		}
	}
}

// A failed verdict rolls back the canary, a host over ssh, whose step back to v1 begins there and
// fails (v1's instance now exits at once): the host's own step then returns it to its last good
// spec, v2, and calls that "rolled back". The deploy must not: the host is not back on the
// version it ran before, so the report says failed, running v2, and the error says so.
func TestRemoteRollbackThatFailsOnTheHostIsNotCalledRolledBack(t *testing.T) {
	t.Parallel()
	s := startSSHD(t)
	f := newFleet(t, 3)
	_, cfg := f.remoteConfig(s, "good.yaml", 1)
	judged(cfg, analysisWindow, canaryFor)
	cfg.Rollout.Analysis.MinRequests = 10
	// Once the file v1-fails exists, v1 cannot start: its instance exits 3 before the app runs,
	// so the rollback's step back to v1 fails after it began.
	fails := filepath.Join(f.dir, "v1-fails")
	cfg.Services[0].Command = append([]string{"/bin/sh", "-c", `[ -e ` + fails + ` ] && [ "{version}" = v1 ] && exit 3; exec "$0" "$@"`},
		cfg.Services[0].Command...)
	good := f.write("good.yaml", cfg)
	bad := f.load(good)
	bad.Services[0].Command = append(bad.Services[0].Command, "--fail-every", "1") // under v2's config every request fails: the verdict
	v2 := f.write("v2.yaml", bad)
	f.startLB(good)
	ctx := context.Background()
	if _, err := f.deployer(f.load(good), nil, Options{RemoteBinary: bin}).Deploy(ctx, "v1"); err != nil {
		t.Fatalf("deploy v1: %v", err)
	}
	if err := os.WriteFile(fails, nil, 0o644); err != nil {
		t.Fatal(err)
	}
	poll.UntilNil(t, 10*time.Second, "the LB has every host in rotation", func() error {
		for _, h := range f.load(good).Targets() {
			if st, err := balancer.NewInHouse(f.admin, "").TargetState(ctx, h); err != nil || !st.InRotation {
				return fmt.Errorf("%s: %+v %v", h, st, err)
			}
		}
		return nil
	})
	rep, ev, err := deployFailingVerdict(t, f, v2, Options{RemoteBinary: bin})
	if got := f.versions()["host-a"]; got != "v2" {
		t.Fatalf("host-a runs %q; the rig's step back to v1 was meant to fail on the host, leaving v2\nevents:\n%s", got, ev)
	}
	if !strings.Contains(ev.String(), "rolling back to v2") {
		t.Fatalf("host-a's step back to v1 never failed on the host (its own rollback to v2)\nevents:\n%s", ev)
	}
	a := rep.Hosts[0]
	if a.Running != "v2" || a.From != "v1" || a.To != "v2" {
		t.Errorf("host-a: from %q to %q, runs %q; want v1 → v2, running v2 (read back by its step)", a.From, a.To, a.Running)
	}
	if a.Outcome == report.OutcomeRolledBack || a.Outcome != report.OutcomeFailed {
		t.Errorf("host-a reported %q while it runs %q: rolled back means it runs v1 again; want %q: %s",
			a.Outcome, a.Running, report.OutcomeFailed, a.Error)
	}
	if !strings.Contains(a.Error, "runs v2") {
		t.Errorf("host-a's error does not say it runs v2: %s", a.Error)
	}
	if !strings.Contains(err.Error(), "the rollback failed on host-a (runs v2)") || strings.Contains(err.Error(), "rolled back (host-a") {
		t.Errorf("error does not say the rollback failed on host-a, which runs v2: %v", err)
	}
	var text strings.Builder
	rep.WriteText(&text)
	for _, line := range strings.Split(text.String(), "\n") {
		if strings.HasPrefix(line, "host-a ") && strings.Contains(line, "→") && strings.Contains(line, report.OutcomeRolledBack) {
			t.Errorf("the report's row calls host-a rolled back while it runs v2: %q\n%s", line, &text)
		}
	}
}

// A failed verdict rolls the canary, a host over ssh, back to the spec it ran before: v1 with
// v1's config, not v1 as the failed deploy's config renders it (here with the flag that fails
// every request). The step back restores the spec the host keeps (host step --back).
func TestRemoteRollbackRestoresTheConfigTheHostRanBefore(t *testing.T) {
	t.Parallel()
	f, v2 := judgedOverSSHOnV1(t, nil)
	rep, ev, _ := deployFailingVerdict(t, f, v2, Options{RemoteBinary: bin})
	if a := rep.Hosts[0]; a.Outcome != report.OutcomeRolledBack || a.Running != "v1" {
		t.Fatalf("host-a: %s, runs %q; want rolled back to v1: %s\nevents:\n%s", a.Outcome, a.Running, a.Error, ev)
	}
	in := f.instances("host-a")["web"]
	cmdline, err := os.ReadFile("/proc/" + strings.TrimPrefix(in.ID, "pid:") + "/cmdline")
	if err != nil {
		t.Fatal(err)
	}
	if strings.Contains(string(cmdline), "--fail-every") {
		t.Errorf("host-a, rolled back to v1, runs v1 with the failed deploy's config: %q\nevents:\n%s",
			strings.ReplaceAll(string(cmdline), "\x00", " "), ev)
	}
	s, err := spec.Read(spec.Path(f.stateDir(0)))
	if err != nil || s.Version != "v1" || strings.Contains(strings.Join(s.Services[0].Command, " "), "--fail-every") {
		t.Errorf("host-a's published spec after the rollback: %+v %v; want v1 with v1's command", s.Services, err)
	}
}

// deployFailingVerdict deploys v2 (a version failing every request) under the analysis' load and
// fails the test unless the deploy ends in a failed verdict; it returns the report, the events and
// the error.
func deployFailingVerdict(t *testing.T, f *fleet, v2 string, opts Options) (*report.Report, *eventLog, error) {
	t.Helper()
	m := startMeasureAt(t, f.listen, analysisRate, "/", "/orders", "/health")
	ev := &eventLog{}
	rep, err := f.deployer(f.load(v2), ev, opts).Deploy(context.Background(), "v2")
	m.stop(t)
	var verdict *VerdictError
	if !errors.As(err, &verdict) {
		t.Fatalf("deploy of a version failing every request: %v; want a failed verdict\nevents:\n%s", err, ev)
	}
	return rep, ev, err
}
