package deployer

import (
	"context"
	"net/http"
	"net/http/httptest"
	"net/http/httputil"
	"net/url"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/zero502/zero502/deployer/balancer"
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
