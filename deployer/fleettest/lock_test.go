//go:build linux

package fleettest

import (
	"fmt"
	"os"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/zero502/zero502/deployer"
	"github.com/zero502/zero502/deployer/report"
	"github.com/zero502/zero502/infra/config"
)

// Two deployers on two other machines (each a mount namespace of its own where the hosts'
// state dirs are an empty tmpfs: neither shares a file with the hosts, nor with the other)
// against one fleet of 8 hosts over ssh. A holds the fleet lock on the lock host (host-01)
// through its ssh session while it rolls v2; B, started while A drains its first host, is
// refused at once (exit 2), naming A's lock on host-01 with A's command and pid, and changes
// nothing; `zero502 lock status` from a third place sees A; A ends with every host on v2. Neither
// report says a host runs a version the host was never seen running.
func TestTwoDeployersElsewhereMeetAtTheLockHostOverTheNetwork(t *testing.T) {
	t.Parallel()
	// A bake of 2s per batch keeps A rolling for a while after its first drain, so B, started
	// then, certainly meets it: B's whole run is a refusal and a read-back.
	f := newFleet(t, 8, func(cfg *config.Config) { cfg.Rollout.Bake = 2 * time.Second })
	f.startLB()
	f.fresh("v1")

	lock := f.cfg.FleetLockPath()
	if _, err := os.Stat(lock); err != nil {
		t.Fatalf("the fleet lock %s is not on the lock host's state dir after a deploy: %v", lock, err)
	}
	if out, err := f.command(true, "--version").Output(); err != nil || !strings.Contains(string(out), "zero502") {
		t.Fatalf("zero502 on another machine: %v %s", err, out)
	}
	if out, err := f.exec(f.elsewhere("test", "!", "-e", lock)...); err != nil {
		t.Fatalf("another machine still sees the lock host's %s (the mount namespace proves nothing): %v %s", lock, err, out)
	}

	seen := f.watchVersions()
	drains := make(chan struct{})
	var once sync.Once
	a := f.deploy("v2", how{other: true, onEvent: func(e deployer.Event) {
		if e.Step == deployer.StepDrain {
			once.Do(func() { close(drains) })
		}
	}})
	select {
	case <-drains:
	case <-a.done:
		t.Fatalf("deployer A ended before draining any host:\n%s", tail2(a.out.String(), 4000))
	case <-time.After(3 * time.Minute):
		t.Fatalf("deployer A drained no host within 3 minutes:\n%s", tail2(a.out.String(), 4000))
	}
	b := f.deploy("v3", how{other: true, args: []string{"--lock-timeout", "0"}})
	repB, codeB := b.wait()
	select {
	case <-a.done:
		t.Fatalf("deployer A ended before B did: B met no running deploy\nA:\n%s", tail2(a.out.String(), 4000))
	default:
	}
	pidA := fmt.Sprintf("pid %d", a.cmd.Process.Pid)
	if codeB != 2 || !repB.Refused {
		t.Fatalf("deployer B while A deploys: exit %d, refused %v; want 2, refused\n%s\n%s", codeB, repB.Refused, reportText(repB), tail2(b.out.String(), 4000))
	}
	for _, want := range []string{"another deploy of this fleet is running", "on host host-01 (rollout.lock_host)", "zero502 deploy --version v2", pidA} {
		if !strings.Contains(repB.Error, want) {
			t.Errorf("B's refusal does not say %q (A's lock on host-01, A's command and pid):\n%s", want, repB.Error)
		}
	}
	for _, h := range repB.Hosts {
		if h.Outcome != report.OutcomeNotReached {
			t.Errorf("B, refused: %s is %q, want %q", h.Host, h.Outcome, report.OutcomeNotReached)
		}
	}
	// On a busy machine A may finish (release the lock, then exit) while B is refused: a status
	// that says free then is right, and A's exit follows. A status read again says the same
	// until A has exited, or A's lock was misread.
	for deadline := time.Now().Add(15 * time.Second); ; {
		out, err := f.exec(f.elsewhere(bin, "lock", "status", "--config", f.path, "--remote-binary", bin)...)
		if err == nil && strings.Contains(out, "on host-01: held by a running deploy") && strings.Contains(out, pidA) {
			break
		}
		select {
		case <-a.done:
			t.Logf("deployer A ended before lock status read the lock; its view is not judged:\n%s", out)
		case <-time.After(500 * time.Millisecond):
			if time.Now().Before(deadline) {
				continue
			}
			t.Errorf("zero502 lock status elsewhere while A deploys: %v\n%s\nwant A's lock on host-01 (%s)", err, out, pidA)
		}
		break
	}

	repA, codeA := a.wait()
	seenNow := seen.stop()
	if codeA != 0 || !repA.OK() {
		t.Fatalf("deployer A: exit %d, want 0 with every host on v2\n%s\n%s", codeA, reportText(repA), tail2(a.out.String(), 4000))
	}
	truth := f.running()
	requireHonest(t, "A's report", repA, seenNow, truth)
	requireHonest(t, "B's report", repB, seenNow, nil) // B read the hosts back while A changed them
	for host, v := range truth {
		if v != "v2" {
			t.Errorf("%s runs %q after A, want v2 (B's v3 must have changed nothing)", host, v)
		}
	}
	for _, h := range repB.Hosts {
		if h.Running == "v3" {
			t.Errorf("B's report says %s runs v3, the version B was refused", h.Host)
		}
	}
}
