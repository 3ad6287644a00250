//go:build linux

package fleettest

import (
	"fmt"
	"io"
	"net/http"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/zero502/zero502/deployer"
	"github.com/zero502/zero502/deployer/report"
	"github.com/zero502/zero502/internal/testrig/poll"
)

// Two hosts of the last batch are lost during a deploy of 8 (batches of 4), each by its link cut
// (a pulled cable: no answer, no reset): host-08 while the first batch rolls, before its own
// step; host-06 while its step drains. The deploy exits 1 and says host-08 is "unreachable, not
// changed" (still on v1, as the test sees it) and host-06 "unreachable after its step began:
// unknown" (no version claimed), neither "failed"; the other hosts are on v2. `zero502 status`
// says both are unreachable over ssh. Once the links are back and host-06's step has rolled
// itself back, a rerun converges: every host on v2, exit 0, and status agrees.
func TestAHostLostBeforeOrDuringItsStepIsUnreachableNotFailed(t *testing.T) {
	t.Parallel()
	f := newFleet(t, 8, nil)
	f.startLB()
	f.fresh("v1")

	before, during := f.host("host-08"), f.host("host-06")
	seen := f.watchVersions()
	var mu sync.Mutex
	cut := map[string]bool{}
	cutOnce := func(h string, do func() error) {
		mu.Lock()
		defer mu.Unlock()
		if cut[h] {
			return
		}
		cut[h] = true
		if err := do(); err != nil {
			t.Errorf("cut %s: %v", h, err)
		}
	}
	r := f.deploy("v2", how{other: true, onEvent: func(e deployer.Event) {
		switch {
		case e.Host == "host-01" && e.Step == deployer.StepLocked:
			cutOnce(before.Name, before.Cut)
		case e.Host == during.Name && e.Step == deployer.StepDrain:
			cutOnce(during.Name, during.Cut)
		}
	}})
	t.Cleanup(func() { _ = before.Restore(); _ = during.Restore() })
	rep, code := r.wait()
	truth := f.running()
	requireHonest(t, "the deploy's report", rep, seen.stop(), truth)
	if !cut[before.Name] || !cut[during.Name] {
		t.Fatalf("the deploy never reached the points to cut at (cut: %v)\n%s", cut, tail2(r.out.String(), 6000))
	}
	want := map[string]string{"host-01": report.OutcomeDeployed, "host-02": report.OutcomeDeployed, "host-03": report.OutcomeDeployed,
		"host-04": report.OutcomeDeployed, "host-05": report.OutcomeDeployed, "host-06": report.OutcomeUnknown,
		"host-07": report.OutcomeDeployed, "host-08": report.OutcomeUnreachable}
	if code != 1 || fmt.Sprint(outcomes(rep)) != fmt.Sprint(want) {
		t.Fatalf("deploy with host-08 cut before its step and host-06 during it: exit %d, outcomes %v;\nwant exit 1, %v\n%s\n%s",
			code, outcomes(rep), want, reportText(rep), tail2(r.out.String(), 4000))
	}
	for _, h := range rep.Hosts {
		switch h.Host {
		case before.Name:
			if h.Running != "v1" || !strings.Contains(h.Error, "unreachable and was not changed") {
				t.Errorf("%s: runs %q, error %q; want v1 (not changed) and why", h.Host, h.Running, h.Error)
			}
		case during.Name:
			if h.Running != "" || !strings.Contains(h.Error, "lost the step on host host-06 after it began") {
				t.Errorf("%s: runs %q, error %q; want no version claimed, and why", h.Host, h.Running, h.Error)
			}
		default:
			if h.Running != "v2" {
				t.Errorf("%s: runs %q, want v2", h.Host, h.Running)
			}
		}
	}

	// zero502 status, from another machine, says the same: those two are unreachable over ssh.
	st, scode, out := f.status(true)
	if scode != 1 {
		t.Errorf("status with two hosts cut: exit %d, want 1\n%s", scode, out)
	}
	for _, h := range []string{before.Name, during.Name} {
		if p := strings.Join(hostStatus(st, h).Problems, "; "); !strings.Contains(p, "unreachable over ssh") {
			t.Errorf("status of %s (cut): %q; want it unreachable over ssh", h, p)
		}
	}
	for _, h := range []string{"host-01", "host-05", "host-07"} {
		if hs := hostStatus(st, h); hs.Published != "v2" || len(hs.Problems) > 0 {
			t.Errorf("status of %s: %+v; want v2, agreeing", h, hs)
		}
	}

	for _, h := range []interface{ Restore() error }{before, during} {
		if err := h.Restore(); err != nil {
			t.Fatal(err)
		}
	}
	settled := f.settled(90 * time.Second)
	t.Logf("host-06 once reachable and settled: published %q, running %q", hostStatus(settled, during.Name).Published, f.running()[during.Name])
	again := f.deployed("v2", how{other: true})
	for _, h := range again.Hosts {
		wantOutcome := report.OutcomeUnchanged
		if h.Host == before.Name || h.Host == during.Name && h.From != "v2" {
			wantOutcome = report.OutcomeDeployed
		}
		if h.Outcome != wantOutcome {
			t.Errorf("rerun: %s (from %q) is %q, want %q", h.Host, h.From, h.Outcome, wantOutcome)
		}
	}
	poll.UntilNil(t, 15*time.Second, "status agrees after the rerun", func() error {
		if st, code, out := f.status(false); code != 0 || !st.OK() {
			return fmt.Errorf("exit %d\n%s", code, out)
		}
		return nil
	})
}

// lbOwnAnswers are the LB's own error answers (502, 503, 504) caused by a failed attempt at a
// backend, by backend, from its metrics (zero502_lb_backend_own_responses_total).
func (f *fleet) lbOwnAnswers() (map[string]int, error) {
	req, _ := http.NewRequest(http.MethodGet, "http://"+f.cfg.Balancer.Admin+"/metrics", nil)
	req.Header.Set("Authorization", "Bearer "+f.cfg.Balancer.AdminToken)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return nil, err
	}
	defer resp.Body.Close()
	data, err := io.ReadAll(resp.Body)
	if err != nil {
		return nil, err
	}
	out := map[string]int{}
	const name = "zero502_lb_backend_own_responses_total{"
	for _, line := range strings.Split(string(data), "\n") {
		labels, value, ok := strings.Cut(strings.TrimPrefix(line, name), "} ")
		if !ok || !strings.HasPrefix(line, name) {
			continue
		}
		backend := ""
		for _, l := range strings.Split(labels, ",") {
			if k, v, _ := strings.Cut(l, "="); k == "backend" {
				backend = strings.Trim(v, `"`)
			}
		}
		n, err := strconv.ParseFloat(value, 64)
		if err != nil {
			return nil, fmt.Errorf("metrics line %q: %w", line, err)
		}
		out[backend] += int(n)
	}
	return out, nil
}
