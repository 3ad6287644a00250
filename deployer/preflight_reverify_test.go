package deployer

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/zero502/zero502/deployer/report"
	"github.com/zero502/zero502/infra/hostlock"
	"github.com/zero502/zero502/infra/spec"
	"github.com/zero502/zero502/internal/testrig/poll"
)

// Preflight takes every host's lock before the first host is touched: a lock held on the LAST
// host (host-b; held on host-a, a refusal cannot tell preflight from host-a's own turn) refuses
// the deploy with nothing changed. host-a keeps its instance and its published spec, byte for
// byte, instead of being rolled to v2 before host-b's turn finds its lock held.
func TestAHeldLockOnTheLastHostRefusesBeforeTheFirstIsTouched(t *testing.T) {
	t.Parallel()
	f, path := onV1(t, 2, defaultValues())
	ctx := context.Background()
	cfg := f.load(path)
	held, err := hostlock.TryAcquire(cfg.HostLockPath(cfg.Hosts[1]), hostlock.Holder{Who: "ops@test", Command: "bootstrap.sh", PID: os.Getpid(), Since: time.Now()})
	if err != nil {
		t.Fatal(err)
	}
	defer held.Release()
	specA := spec.Path(f.stateDir(0))
	beforeSpec, err := os.ReadFile(specA)
	if err != nil {
		t.Fatal(err)
	}
	before := f.instances("host-a")["web"]

	var ev eventLog
	rep, err := f.deployer(cfg, &ev, Options{LockTimeout: time.Second}).Deploy(ctx, "v2")
	var refused *refusedError
	if !errors.As(err, &refused) {
		t.Fatalf("deploy v2 with host-b's lock held: %v; want refused by preflight (exit 2), nothing changed\nevents:\n%s", err, &ev)
	}
	for _, want := range []string{"host host-b", "--lock-timeout 1s", "nothing was changed"} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("refusal does not say %q: %v", want, err)
		}
	}
	if !rep.Refused || rep.Hosts[0].Outcome != report.OutcomeNotReached {
		t.Errorf("report: refused %v, host-a %s; want refused, host-a not reached", rep.Refused, rep.Hosts[0].Outcome)
	}
	if after := f.instances("host-a")["web"]; after.ID != before.ID || after.Version != "v1" {
		t.Errorf("host-a runs %s (%s), ran %s (v1) before the refused deploy: it was touched\nevents:\n%s", after.ID, after.Version, before.ID, &ev)
	}
	if got, err := os.ReadFile(specA); err != nil || !bytes.Equal(got, beforeSpec) {
		t.Errorf("host-a's published spec changed on a refused deploy (%v):\nbefore %.200s\nafter  %.200s", err, beforeSpec, got)
	}
	if got := f.versions(); got["host-a"] != "v1" || got["host-b"] != "v1" {
		t.Errorf("hosts run %v, want v1 everywhere", got)
	}
}

// The final re-verify (README: hosts are re-verified before each batch and at the end): host-b,
// the last host, whose v2 passes its bake and its step and then exits (zero502 app --exit-after)
// before the deploy ends, fails the deploy, naming the re-verify, and is rolled back to v1.
// Only host-b's v2 is given --exit-after ({host} picks it in sh), so host-a's v2 stays healthy
// and no re-verify between batches can be what catches it. The final re-verify follows host-b's
// step at once, so the test holds the deploy at host-b's "verified" event until its v2 has
// exited: the ordering the promise is about, made certain.
func TestALastHostThatDiesAfterItsStepIsCaughtByTheFinalReverify(t *testing.T) {
	t.Parallel()
	f, good := onV1(t, 2, defaultValues())
	ctx := context.Background()
	cfg := f.load(good)
	exitAfter := 5 * time.Second // longer than host-b's step from its start (healthy, bake, verify)
	cfg.Services[0].Command = append([]string{"sh", "-c",
		fmt.Sprintf(`if [ "{host}" = host-b ]; then exec "$@" --exit-after %s; fi; exec "$@"`, exitAfter), "sh"},
		slices.Clone(cfg.Services[0].Command)...)
	cfg = f.load(f.write("late-exit-on-b.yaml", cfg))

	var ev eventLog
	d := f.deployer(cfg, nil, Options{})
	held := false
	d.opts.Events = func(e Event) {
		ev.add(e)
		if e.Host != "host-b" || e.Step != stepVerified || e.Version != "v2" {
			return
		}
		// host-b's step is done (v2 baked and verified); hold the deploy here, before its last
		// re-verify, until host-b's v2 has exited on its own.
		held = true
		poll.UntilNil(t, exitAfter+10*time.Second, "host-b's v2 exits after its step (--exit-after)", func() error {
			if in, ok := f.instances("host-b")["web"]; ok {
				return fmt.Errorf("host-b still runs %s (%s)", in.ID, in.Version)
			}
			return nil
		})
	}
	rep, err := d.Deploy(ctx, "v2")
	if !held {
		t.Fatalf("host-b's v2 never verified: %v\nevents:\n%s", err, &ev)
	}
	if err == nil {
		t.Fatalf("the deploy succeeded with host-b's v2 dead before it ended: the final re-verify did not run or did not see it\nevents:\n%s", &ev)
	}
	for _, want := range []string{"every host was deployed, but", "host host-b", "no longer runs v2 healthy when re-verified after its step"} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("error does not say %q: %v\nevents:\n%s", want, err, &ev)
		}
	}
	if strings.Contains(err.Error(), "host host-a") {
		t.Errorf("error names host-a, whose v2 stays healthy: %v", err)
	}
	if b := rep.Hosts[1]; b.Outcome != report.OutcomeRolledBack || b.Running != "v1" {
		t.Errorf("host-b: %s, runs %q; want rolled back to v1 after its re-verification\nevents:\n%s", b.Outcome, b.Running, &ev)
	}
	if a := rep.Hosts[0]; a.Outcome != report.OutcomeDeployed || a.Running != "v2" {
		t.Errorf("host-a: %s, runs %q; want deployed, v2 (healthy, kept)", a.Outcome, a.Running)
	}
	if got := f.versions(); got["host-a"] != "v2" || got["host-b"] != "v1" {
		t.Errorf("hosts run %v, want host-a v2 and host-b v1 again", got)
	}
	if s, err := spec.Read(spec.Path(f.stateDir(1))); err != nil || s.Version != "v1" {
		t.Errorf("host-b's published spec: %q %v, want v1 republished", s.Version, err)
	}
}

// Two hosts of one machine that would publish their specs in one state dir (here host-b given
// host-a's) refuse the deploy before anything changes, naming both hosts and the dir: each
// deploy of one would overwrite the other's spec.
func TestTwoHostsWithOneStateDirOnOneMachineRefuseTheDeploy(t *testing.T) {
	t.Parallel()
	f, path := onV1(t, 2, defaultValues())
	cfg := f.load(path)
	cfg.Hosts[1].StateDir = cfg.Hosts[0].StateDir
	specA := spec.Path(f.stateDir(0))
	beforeSpec, err := os.ReadFile(specA)
	if err != nil {
		t.Fatal(err)
	}
	var ev eventLog
	_, err = f.deployer(cfg, &ev, Options{}).Deploy(context.Background(), "v2")
	var refused *refusedError
	if !errors.As(err, &refused) || !strings.Contains(err.Error(), "hosts host-a and host-b have one state dir "+f.stateDir(0)) {
		t.Fatalf("deploy with host-b's state dir host-a's: %v; want refused, naming both hosts and the dir\nevents:\n%s", err, &ev)
	}
	if got, err := os.ReadFile(specA); err != nil || !bytes.Equal(got, beforeSpec) {
		t.Errorf("host-a's published spec changed on a refused deploy (%v)", err)
	}
}
