package deployer

import (
	"context"
	"errors"
	"net/http"
	"net/http/httptest"
	"net/http/httputil"
	"net/url"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/zero502/zero502/deployer/balancer"
	"github.com/zero502/zero502/deployer/report"
	"github.com/zero502/zero502/infra/adminapi"
	"github.com/zero502/zero502/infra/config"
	"github.com/zero502/zero502/infra/lb"
	"github.com/zero502/zero502/internal/testrig/lbinproc"
	"github.com/zero502/zero502/internal/testrig/poll"
)

// weighLB runs a real in-house LB in front of backends, with fast health checks, and returns its
// admin address and a client of its admin API once every backend is in rotation.
func weighLB(t *testing.T, backends ...string) (string, *balancer.InHouse) {
	t.Helper()
	set := lb.LabSettings("127.0.0.1:0", backends)
	set.Admin = "127.0.0.1:0"
	set.Interval, set.Timeout = 100*time.Millisecond, 80*time.Millisecond
	addr := lbinproc.Start(t, set).AdminAddr()
	admin := balancer.NewInHouse(addr, "")
	poll.Until(t, 5*time.Second, "every backend in rotation at "+admin.Name(), func() bool {
		o, err := admin.Outcomes(context.Background())
		if err != nil {
			t.Fatal(err)
		}
		for _, b := range backends {
			if sts := o[b]; len(sts) == 0 || !sts[0].InRotation {
				return false
			}
		}
		return true
	})
	return addr, admin
}

// lateAdmin is an admin API in front of the one at realAddr that applies every weight change there but
// answers only once its client gave up (the admin client's 3 s timeout): a change that took
// while the deployer saw it fail. Everything else passes straight through.
func lateAdmin(t *testing.T, realAddr string) *balancer.InHouse {
	t.Helper()
	proxy := httputil.NewSingleHostReverseProxy(&url.URL{Scheme: "http", Host: realAddr})
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Method != http.MethodPut || !strings.HasSuffix(r.URL.Path, "/weight") {
			proxy.ServeHTTP(w, r)
			return
		}
		rec := httptest.NewRecorder()
		proxy.ServeHTTP(rec, r) // applied at the real LB
		select {
		case <-r.Context().Done(): // the client timed out
		case <-time.After(10 * time.Second):
		}
		w.WriteHeader(rec.Code)
		_, _ = w.Write(rec.Body.Bytes())
	}))
	t.Cleanup(srv.Close)
	return balancer.NewInHouse(srv.Listener.Addr().String(), "")
}

func weightAt(t *testing.T, admin *balancer.InHouse, target string) int {
	t.Helper()
	o, err := admin.Outcomes(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	if sts := o[target]; len(sts) > 0 {
		return sts[0].Weight
	}
	return 0
}

func healthyTarget(t *testing.T) string {
	t.Helper()
	srv := httptest.NewServer(http.HandlerFunc(func(http.ResponseWriter, *http.Request) {}))
	t.Cleanup(srv.Close)
	return srv.Listener.Addr().String()
}

// canaryDeployer is a Deployer behind bal whose events land in the returned func's answer.
func canaryDeployer(bal balancer.Balancer) (*Deployer, func() []Event) {
	cfg := config.Defaults()
	cfg.Rollout.Canary.Weight = 10
	var mu sync.Mutex
	var events []Event
	d := New(cfg, Options{Events: func(e Event) {
		mu.Lock()
		defer mu.Unlock()
		events = append(events, e)
	}})
	d.bal, d.view = bal, true
	return d, func() []Event {
		mu.Lock()
		defer mu.Unlock()
		return append([]Event(nil), events...)
	}
}

// TestCanaryWeightSetInPartIsPutBack: the canary's weight reaches one LB of a tier, and the
// other applies it but answers after the admin client's timeout, or a lone LB does so. The
// weight must still be put back everywhere it was set, and a restore that fails is told, naming
// the target and the instance.
func TestCanaryWeightSetInPartIsPutBack(t *testing.T) {
	t.Parallel()
	ctx := context.Background()

	t.Run("tier", func(t *testing.T) {
		t.Parallel()
		canary, other := healthyTarget(t), healthyTarget(t)
		_, a := weighLB(t, canary, other)
		bAddr, b := weighLB(t, canary, other)
		late := lateAdmin(t, bAddr)
		d, events := canaryDeployer(balancer.Tier{a, late})

		said := d.weighCanary(ctx, []string{canary})
		if strings.Contains(said, "every target at the same weight") {
			t.Errorf("weighCanary said %q with the weight set at %s", said, a.Name())
		}
		if w := weightAt(t, a, canary); w == adminapi.DefaultWeight {
			t.Fatalf("weight at %s after weighCanary: %d, want the canary's (the test's premise)", a.Name(), w)
		}
		d.unweighCanary(ctx, "v2")
		for _, one := range []*balancer.InHouse{a, b} {
			if w := weightAt(t, one, canary); w != adminapi.DefaultWeight {
				t.Errorf("weight of the canary %s at %s after unweighCanary: %d, want %d", canary, one.Name(), w, adminapi.DefaultWeight)
			}
		}
		told := false
		for _, e := range events() {
			told = told || strings.Contains(e.Message, canary) && strings.Contains(e.Message, late.Name())
		}
		if !told {
			t.Errorf("events %+v: want the failed restore told, naming %s and %s", events(), canary, late.Name())
		}
	})

	t.Run("one LB that answers late", func(t *testing.T) {
		t.Parallel()
		canary, other := healthyTarget(t), healthyTarget(t)
		bAddr, b := weighLB(t, canary, other)
		late := lateAdmin(t, bAddr)
		d, _ := canaryDeployer(late)

		d.weighCanary(ctx, []string{canary})
		if w := weightAt(t, b, canary); w == adminapi.DefaultWeight {
			t.Fatalf("weight at %s after weighCanary: %d, want the canary's (the test's premise)", b.Name(), w)
		}
		d.unweighCanary(ctx, "v2")
		if w := weightAt(t, b, canary); w != adminapi.DefaultWeight {
			t.Errorf("weight of the canary %s at %s after unweighCanary: %d, want %d", canary, b.Name(), w, adminapi.DefaultWeight)
		}
	})
}

// With no other target in rotation (a first deploy onto empty hosts) there is nothing to weigh
// the canary against: at the maximum weight it would take most new requests once the others
// join at the default weight, so it is not weighed at all.
func TestCanaryIsNotWeighedWithNoOtherTargetInRotation(t *testing.T) {
	t.Parallel()
	canary := healthyTarget(t)
	_, lb := weighLB(t, canary)
	d, _ := canaryDeployer(lb)
	said := d.weighCanary(context.Background(), []string{canary})
	if w := weightAt(t, lb, canary); w != adminapi.DefaultWeight || !strings.Contains(said, "no other target in rotation") {
		t.Errorf("weighCanary alone at the LB: weight %d, said %q; want %d, saying no other target is in rotation", w, said, adminapi.DefaultWeight)
	}
}

// canaryBatch is a Deployer behind bal with hosts host-a (the canary) and host-b, and the report
// of a deploy of v2 in which host-a was just deployed at target canary and each host ran from
// before ("" on a host with nothing on it).
func canaryBatch(bal balancer.Balancer, canary string, outcome string, from ...string) (*Deployer, func() []Event, *report.Report) {
	d, events := canaryDeployer(bal)
	d.cfg.Hosts = []config.Host{{Name: "host-a"}, {Name: "host-b"}}
	rep := &report.Report{Version: "v2"}
	for i, h := range d.cfg.Hosts {
		rep.Hosts = append(rep.Hosts, report.HostReport{Host: h.Name, From: from[i], To: "v2", Outcome: report.OutcomeNotReached})
	}
	rep.Hosts[0].Outcome, rep.Hosts[0].Running, rep.Hosts[0].Target = outcome, "v2", canary
	return d, events, rep
}

// A canary weighed ahead of its deploy that turns out not judged (here: a first deploy, no host
// serving before it) is put back at once, not left at its weight for the rest of the deploy.
func TestCanaryNotJudgedIsPutBackAtOnce(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	canary, other := healthyTarget(t), healthyTarget(t)
	_, lb := weighLB(t, canary, other)
	d, events, rep := canaryBatch(lb, canary, report.OutcomeDeployed, "", "")
	d.weighCanary(ctx, []string{canary}) // as weighCanaryAhead does
	if w := weightAt(t, lb, canary); w == adminapi.DefaultWeight {
		t.Fatalf("weight after weighCanary: %d, want the canary's (the test's premise)", w)
	}
	window, err := d.judgeBatch(ctx, "v2", rep, batch{first: 0, end: 1, canary: true})
	if window != 0 || err != nil {
		t.Fatalf("judgeBatch of a first deploy's canary: %s, %v; want not judged (0), no error", window, err)
	}
	if w := weightAt(t, lb, canary); w != adminapi.DefaultWeight {
		t.Errorf("the canary %s at weight %d once found not judged; want it put back at %d", canary, w, adminapi.DefaultWeight)
	}
	said := false
	for _, e := range events() {
		said = said || strings.HasPrefix(e.Message, "canary not judged: host-a: a first deploy")
	}
	if !said {
		t.Errorf("events %+v: want one saying the canary was not judged, and why", events())
	}
}

// In a fleet that serves users, a canary the deploy could not judge (its host already ran the
// version) is no reason to pause: --pause-after-canary refuses, and the deploy stops before the
// rest rolls, saying why and what to do.
func TestUnjudgedCanaryOfAServingFleetRefusesThePause(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	canary, other := healthyTarget(t), healthyTarget(t)
	_, lb := weighLB(t, canary, other)
	d, _, rep := canaryBatch(lb, canary, report.OutcomeUnchanged, "v2", "v1")
	d.opts.PauseAfterCanary = true
	window, err := d.judgeBatch(ctx, "v2", rep, batch{first: 0, end: 1, canary: true})
	if window != 0 || err == nil || !strings.Contains(err.Error(), "canary not judged: host-a") || !strings.Contains(err.Error(), "--pause-after-canary") {
		t.Fatalf("judgeBatch of a canary not judged, pause asked: %s, %v; want not judged (0) and the pause refused", window, err)
	}
	var verdict *VerdictError
	if errors.As(err, &verdict) {
		t.Errorf("the refusal %v is a failed verdict: the canary would be rolled back though nothing found it bad", err)
	}
}
