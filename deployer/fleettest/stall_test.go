//go:build linux

package fleettest

import (
	"bytes"
	"fmt"
	"os"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/zero502/zero502/deployer"
	"github.com/zero502/zero502/deployer/report"
	"github.com/zero502/zero502/infra/config"
	"github.com/zero502/zero502/internal/testrig/netfleet"
)

// Host-02's step is frozen (SIGSTOP, as a host out of memory or on a hung disk would be) as its
// drain begins: ssh still answers, so only the step's silence tells. After
// rollout.progress_deadline without an event the deployer stops it: its stdin is closed, the
// deploy says why. Thawed then, the step sees its stdin gone and rolls itself back. The deploy
// exits 1 with host-02 rolled back (on v1, as the test sees it) for the stall, host-01 deployed,
// the second batch not reached, and not one request failed. The fleet lock was given back: a
// rerun takes it and converges.
func TestAStalledStepIsStoppedAtItsProgressDeadline(t *testing.T) {
	t.Parallel()
	const deadline = 11 * time.Second // one service's whole step here: 1s + 4s + 5s + 2 × 200ms = 10.4s (I16)
	f := newFleet(t, 4, func(cfg *config.Config) {
		cfg.Rollout.Batch = 2
		cfg.Rollout.HealthyDeadline = 5 * time.Second
		cfg.Rollout.ProgressDeadline = deadline
	})
	f.startLB()
	f.fresh("v1")
	x := f.host("host-02")
	l := partitionLoad(t, f)
	seen := f.watchVersions()

	var mu sync.Mutex
	var frozen int
	var frozeAt, stalledAt time.Time
	thaw := func() {
		mu.Lock()
		defer mu.Unlock()
		if frozen > 0 {
			_ = syscall.Kill(frozen, syscall.SIGCONT)
			frozen = 0
		}
	}
	t.Cleanup(thaw)
	r := f.deploy("v2", how{onEvent: func(e deployer.Event) {
		if e.Host != x.Name {
			return
		}
		switch e.Step {
		case deployer.StepDrain:
			mu.Lock()
			defer mu.Unlock()
			if !frozeAt.IsZero() {
				return
			}
			frozeAt = time.Now()
			pid, err := stepProcess(x)
			if err == nil {
				err = syscall.Kill(pid, syscall.SIGSTOP)
			}
			if err != nil {
				t.Errorf("freeze host-02's step: %v", err)
				return
			}
			frozen = pid
		case deployer.StepStalled:
			mu.Lock()
			stalledAt = time.Now()
			mu.Unlock()
			thaw()
		}
	}})
	rep, code := r.wait()
	requireHonest(t, "the deploy's report", rep, seen.stop(), f.running())
	mu.Lock()
	froze, stalled := frozeAt, stalledAt
	mu.Unlock()
	if froze.IsZero() || stalled.IsZero() {
		t.Fatalf("host-02's step frozen at %v, said stalled at %v: want both\n%s", froze, stalled, tail2(r.out.String(), 6000))
	}
	// The deadline counts from the drain event's arrival, which this callback sees a moment
	// after the deployer did: a few milliseconds of that are not a stall said early.
	if waited := stalled.Sub(froze); waited < deadline-250*time.Millisecond || waited > deadline+15*time.Second {
		t.Errorf("host-02's frozen step was said stalled %s after it froze; want rollout.progress_deadline %s (and a little)", waited, deadline)
	}
	want := map[string]string{"host-01": report.OutcomeDeployed, "host-02": report.OutcomeRolledBack,
		"host-03": report.OutcomeNotReached, "host-04": report.OutcomeNotReached}
	if code != 1 || fmt.Sprint(outcomes(rep)) != fmt.Sprint(want) {
		t.Fatalf("deploy with host-02's step frozen: exit %d, outcomes %v;\nwant exit 1, %v\n%s\n%s",
			code, outcomes(rep), want, reportText(rep), tail2(r.out.String(), 4000))
	}
	for _, hr := range rep.Hosts {
		if hr.Host == x.Name && (!strings.Contains(hr.Error, "rollout.progress_deadline 11s") || hr.Running != "v1") {
			t.Errorf("host-02's report: running %q, error %q; want v1, and the error naming rollout.progress_deadline 11s", hr.Running, hr.Error)
		}
	}

	f.deployed("v2", how{}) // the fleet lock was released: the rerun takes it
	requireAllOn(t, f, "v2")
	if bad := failures(l.stop(), ""); len(bad) > 0 {
		t.Errorf("%d requests failed while host-02's step was frozen mid-drain; want none:\n%s", len(bad), list(bad))
	}
}

// stepProcess is the pid of the `zero502 host step … --host NAME` process in host x's network
// namespace (another test's fleet has a host of that name too), not the shell around it.
func stepProcess(x *netfleet.Host) (int, error) {
	pids, err := x.Pids()
	if err != nil {
		return 0, err
	}
	var found []int
	for _, pid := range pids {
		b, err := os.ReadFile(fmt.Sprintf("/proc/%d/cmdline", pid))
		if err != nil {
			continue
		}
		argv := strings.Split(string(bytes.TrimRight(b, "\x00")), "\x00")
		if len(argv) < 3 || argv[1] != "host" || argv[2] != "step" {
			continue
		}
		for i := 3; i+1 < len(argv); i++ {
			if argv[i] == "--host" && argv[i+1] == x.Name {
				found = append(found, pid)
				break
			}
		}
	}
	if len(found) != 1 {
		return 0, fmt.Errorf("%d processes run `zero502 host step --host %s` in %s (%v), want 1", len(found), x.Name, x.Namespace, found)
	}
	return found[0], nil
}
