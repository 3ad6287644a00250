//go:build linux

package fleettest

import (
	"fmt"
	"net/http"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/zero502/zero502/deployer"
	"github.com/zero502/zero502/deployer/report"
	"github.com/zero502/zero502/infra/config"
)

// Partitions. The deployer and the LB are both on this machine (the fleet's gateway), as a
// deployer running on the balancer's machine would be; a host's link carries both. So a
// partition between two of them is a firewall inside the host's namespace, on what arrives over
// its link (its loopback is spared): the deployer cut from the host is its sshd's port dropped
// (the LB still reaches the service, the host still reaches the LB's admin API); the host cut
// from the LB is its service's port dropped (its sshd, and so the deployer, still answer; the
// deployer's own direct look at the service fails with the LB's, as it checks from the same
// machine). A whole host lost, link and all, is TestAHostLostBeforeOrDuringItsStepIsUnreachableNotFailed.
//
// The LB does not get a namespace of its own: traffic between two namespaces crosses the bridge,
// and on a machine with br_netfilter loaded (bridge-nf-call-iptables=1, as wherever Docker runs)
// the root namespace's FORWARD chain, Docker's policy DROP, would judge it; the tests touch no
// rule outside the namespaces they make.

// partitionLoad is the load of the partition tests through the LB: GET /, GET /slow?ms=100,
// HEAD / and POST /orders (an order, which no one may send twice).
func partitionLoad(t *testing.T, f *fleet) *load {
	return startLoad(t, f.listen, 60, kind{http.MethodGet, "/", 3}, kind{http.MethodGet, "/slow?ms=100", 1},
		kind{http.MethodHead, "/", 1}, kind{http.MethodPost, "/orders", 1})
}

// cutAtDrain returns a deploy's event hook that runs cut once, when host's drain begins, and
// when it did.
func cutAtDrain(t *testing.T, host string, cut func() error) (func(deployer.Event), func() time.Time) {
	var once sync.Once
	var mu sync.Mutex
	var at time.Time
	return func(e deployer.Event) {
			if e.Host != host || e.Step != deployer.StepDrain {
				return
			}
			once.Do(func() {
				mu.Lock()
				at = time.Now()
				mu.Unlock()
				if err := cut(); err != nil {
					t.Errorf("cut %s: %v", host, err)
				}
			})
		}, func() time.Time {
			mu.Lock()
			defer mu.Unlock()
			return at
		}
}

// The deployer is cut from host-03 mid-drain (its ssh port dropped there; the LB still reaches
// it): the deploy exits 1 saying host-03 is "unreachable after its step began: unknown", the rest
// of its batch deployed and the later batches not reached, each as the test sees them. Its step
// on the host goes on without the deployer, through the same handshake with the LB: it ends on
// v2 when it finishes before its sshd drops the silent session (about 3s), else it rolls itself
// back; either way not one request fails. Status says
// host-03 is unreachable over ssh; once it is reachable again and settled, a rerun converges
// with every host on v2, and still no request has failed.
func TestTheDeployerCutFromAHostMidDrain(t *testing.T) {
	t.Parallel()
	f := newFleet(t, 8, nil)
	f.startLB()
	f.fresh("v1")
	x := f.host("host-03")
	l := partitionLoad(t, f)

	seen := f.watchVersions()
	hook, cutAt := cutAtDrain(t, x.Name, func() error { return x.Block(22) })
	t.Cleanup(func() { _ = x.Unblock() })
	r := f.deploy("v2", how{onEvent: hook})
	rep, code := r.wait()
	requireHonest(t, "the deploy's report", rep, seen.stop(), f.running())
	if cutAt().IsZero() {
		t.Fatalf("host-03 never drained:\n%s", tail2(r.out.String(), 6000))
	}
	want := map[string]string{"host-01": report.OutcomeDeployed, "host-02": report.OutcomeDeployed, "host-03": report.OutcomeUnknown,
		"host-04": report.OutcomeDeployed, "host-05": report.OutcomeNotReached, "host-06": report.OutcomeNotReached,
		"host-07": report.OutcomeNotReached, "host-08": report.OutcomeNotReached}
	if code != 1 || fmt.Sprint(outcomes(rep)) != fmt.Sprint(want) {
		t.Fatalf("deploy with the deployer cut from host-03 mid-drain: exit %d, outcomes %v;\nwant exit 1, %v\n%s\n%s",
			code, outcomes(rep), want, reportText(rep), tail2(r.out.String(), 4000))
	}
	st, scode, out := f.status(false)
	if p := strings.Join(hostStatus(st, x.Name).Problems, "; "); scode != 1 || !strings.Contains(p, "unreachable over ssh") {
		t.Errorf("status with host-03's ssh cut: exit %d, host-03: %q; want 1, unreachable over ssh\n%s", scode, p, out)
	}

	if err := x.Unblock(); err != nil {
		t.Fatal(err)
	}
	settled := f.settled(90 * time.Second)
	t.Logf("host-03 once reachable: published %q, running %v", hostStatus(settled, x.Name).Published, f.running()[x.Name])
	f.deployed("v2", how{})
	requireAllOn(t, f, "v2")
	if bad := failures(l.stop(), ""); len(bad) > 0 {
		t.Errorf("%d requests failed with the deployer cut from host-03 (cut at %s), which the LB always reached; want none:\n%s",
			len(bad), cutAt().Format("15:04:05.000"), list(bad))
	}
}

// Host-02 is cut from the LB mid-drain (its service's port dropped there; ssh still answers):
// its old instance drains unseen, its new one is healthy on the host but never in rotation, so
// its step rolls back within rollout.healthy_deadline and the deploy exits 1 with every host on
// a version it was seen running and that it runs (host-02 rolled back or failed: known, read
// over ssh), the later batches not reached. Status says host-02 is out of rotation. Once the
// port is open again, a rerun converges with every host on v2. The only requests that may fail
// are those the LB cannot know the fate of: the POSTs sent to host-02 between the cut and its
// ejection, which wait out balancer.header_timeout. A GET or HEAD among them is resent once
// host-02's checks time out, whether the LB saw its drain's 503 first or not.
func TestAHostCutFromTheLBMidDrain(t *testing.T) {
	t.Parallel()
	f := newFleet(t, 8, func(cfg *config.Config) { cfg.Rollout.HealthyDeadline = 4 * time.Second })
	f.startLB()
	f.fresh("v1")
	x := f.host("host-02")
	l := partitionLoad(t, f)

	seen := f.watchVersions()
	hook, cutAt := cutAtDrain(t, x.Name, func() error { return x.Block(webPort) })
	t.Cleanup(func() { _ = x.Unblock() })
	r := f.deploy("v2", how{onEvent: hook})
	rep, code := r.wait()
	requireHonest(t, "the deploy's report", rep, seen.stop(), f.running())
	if cutAt().IsZero() {
		t.Fatalf("host-02 never drained:\n%s", tail2(r.out.String(), 6000))
	}
	got := outcomes(rep)
	if o := got[x.Name]; o != report.OutcomeRolledBack && o != report.OutcomeFailed {
		t.Errorf("host-02, cut from the LB mid-drain: %q; want rolled back, or failed (its rollback never in rotation either)", o)
	}
	delete(got, x.Name)
	want := map[string]string{"host-01": report.OutcomeDeployed, "host-03": report.OutcomeDeployed, "host-04": report.OutcomeDeployed,
		"host-05": report.OutcomeNotReached, "host-06": report.OutcomeNotReached, "host-07": report.OutcomeNotReached,
		"host-08": report.OutcomeNotReached}
	if code != 1 || fmt.Sprint(got) != fmt.Sprint(want) {
		t.Fatalf("deploy with host-02 cut from the LB mid-drain: exit %d, outcomes %v;\nwant exit 1, %v\n%s\n%s",
			code, outcomes(rep), want, reportText(rep), tail2(r.out.String(), 4000))
	}
	st, scode, out := f.status(false)
	if hs := hostStatus(st, x.Name); scode != 1 || !strings.Contains(fmt.Sprint(hs.Services), "not in rotation") {
		t.Errorf("status with host-02 cut from the LB: exit %d, host-02 %+v; want 1, out of rotation\n%s", scode, hs, out)
	}

	if err := x.Unblock(); err != nil {
		t.Fatal(err)
	}
	f.settled(60 * time.Second)
	f.deployed("v2", how{})
	requireAllOn(t, f, "v2")

	shots := l.stop()
	cut := cutAt()
	lbCannotKnow := func(s shot) bool { // a POST sent between host-02's cut and its ejection (with slack)
		return s.method == http.MethodPost && !s.start.Before(cut.Add(-time.Second)) && s.start.Before(cut.Add(2*time.Second))
	}
	var unknowable, bad []shot
	for _, s := range failures(shots, "") {
		if lbCannotKnow(s) {
			unknowable = append(unknowable, s)
		} else {
			bad = append(bad, s)
		}
	}
	own, err := f.lbOwnAnswers()
	if err != nil {
		t.Fatalf("the LB's metrics: %v", err)
	}
	t.Logf("%d requests; %d POSTs failed that were in flight to host-02 at its cut (the LB cannot know their fate); the LB's own error answers by backend: %v",
		len(shots), len(unknowable), own)
	if len(bad) > 0 {
		t.Errorf("%d requests failed that the LB could have saved (host-02 cut from it at %s):\n%s", len(bad), cut.Format("15:04:05.000"), list(bad))
	}
	for backend, n := range own {
		if n > 0 && backend != x.Address+":"+strconv.Itoa(webPort) {
			t.Errorf("the LB answered %d requests itself (502/503/504) for backend %s, which no partition touched", n, backend)
		}
	}
}

// requireAllOn fails t unless every host of f runs version, as the test sees it.
func requireAllOn(t *testing.T, f *fleet, version string) {
	t.Helper()
	for host, v := range f.running() {
		if v != version {
			t.Errorf("%s runs %q, want %s", host, v, version)
		}
	}
}
