package deployer

import (
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"
	"net/http/httputil"
	"net/url"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/zero502/zero502/deployer/balancer"
	"github.com/zero502/zero502/deployer/report"
	"github.com/zero502/zero502/infra/config"
	"github.com/zero502/zero502/infra/spec"
	"github.com/zero502/zero502/internal/testrig/lbprocess"
	"github.com/zero502/zero502/internal/testrig/tcpserver"
)

// A new stop-first instance with checks before traffic is held out at the balancer while it
// starts. Behind a tier of two real LBs where the hold's drain is applied at the first and
// refused at the second, the host is rolled back, and the rollback takes its old version back
// in at the first LB: the partly applied hold was recorded, so it is released. (It was recorded
// only after a drain that succeeded everywhere: the admin drain stuck at the first LB, the
// rollback's wait for the balancer ran out, and the host stayed out of rotation there.)
func TestPartlyAppliedHoldIsUndoneByTheRollback(t *testing.T) {
	t.Parallel()
	f := newFleet(t, 2)
	v := defaultValues()
	v.HealthyDeadline = 6 * time.Second // a rollback that never gets back in fails soon
	cfg := f.load(f.config("fleet.yaml", v))
	cfg.Services[0].Smoke = []config.SmokeRequest{{Method: "GET", Path: "/", ExpectStatus: 200, ExpectBody: "version {version}", Timeout: time.Second}}
	path := f.write("fleet.yaml", cfg)
	f.startLB(path)

	// The second LB: the same config on its own listen and admin addresses, its admin API
	// reached through a proxy that refuses drains while told to.
	second := f.load(path)
	ps := tcpserver.FreePorts(t, 2)
	second.Balancer.Listen, second.Balancer.Admin = fmt.Sprintf("127.0.0.1:%d", ps[0]), fmt.Sprintf("127.0.0.1:%d", ps[1])
	lbprocess.Start(t, bin, f.write("lb-b.yaml", second), second.Balancer.Admin, filepath.Join(f.dir, "lb-b.log"))
	var refuse atomic.Bool
	var refused atomic.Int32
	proxy := httputil.NewSingleHostReverseProxy(&url.URL{Scheme: "http", Host: second.Balancer.Admin})
	admin := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if refuse.Load() && r.Method == http.MethodPost && strings.HasSuffix(r.URL.Path, "/drain") {
			refused.Add(1)
			http.Error(w, "injected: drain refused", http.StatusServiceUnavailable)
			return
		}
		proxy.ServeHTTP(w, r)
	}))
	t.Cleanup(admin.Close)
	first := balancer.NewInHouse(f.admin, "")
	tier := balancer.Tier{first, balancer.NewInHouse(admin.Listener.Addr().String(), "")}

	ctx := context.Background()
	var ev1 eventLog
	if _, err := f.deployer(f.load(path), &ev1, Options{Balancer: tier}).Deploy(ctx, "v1"); err != nil {
		t.Fatalf("deploy v1 behind the tier: %v\nevents:\n%s", err, &ev1)
	}
	published, err := spec.Read(spec.Path(cfg.HostStateDir(cfg.Hosts[0])))
	if err != nil {
		t.Fatal(err)
	}
	web, _ := published.Service("web")

	refuse.Store(true)
	var ev eventLog
	rep, err := f.deployer(f.load(path), &ev, Options{Balancer: tier}).Deploy(ctx, "v2")
	if err == nil || !strings.Contains(err.Error(), "injected: drain refused") {
		t.Fatalf("deploy v2 with the hold refused at the second LB: %v; want the refused hold\nevents:\n%s", err, &ev)
	}
	if refused.Load() == 0 {
		t.Fatalf("no drain was refused at the second LB\nevents:\n%s", &ev)
	}
	if a := rep.Hosts[0]; a.Outcome != report.OutcomeRolledBack || a.Running != "v1" {
		t.Errorf("host-a: %s, runs %q (%s); want rolled back to v1\nevents:\n%s", a.Outcome, a.Running, a.Error, &ev)
	}
	if st, err := first.TargetState(ctx, web.Address); err != nil || !st.InRotation {
		t.Errorf("host-a's %s at the first LB, which applied the hold's drain: %+v, %v; want back in rotation", web.Address, st, err)
	}
}
