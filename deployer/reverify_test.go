package deployer

import (
	"context"
	"net"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/zero502/zero502/deployer/report"
	"github.com/zero502/zero502/infra/config"
)

// After the last batch a host is vouched for without a look on it only when its service names
// the deployed version in its own answer (services[].verify): a healthy service that names
// another version, or one that cannot name any, gets the full look.
func TestTheLastReverifyVouchesOnlyForAServiceThatNamesTheVersion(t *testing.T) {
	var serving atomic.Value
	serving.Store("v2")
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("X-Version", serving.Load().(string))
		w.WriteHeader(http.StatusOK)
	}))
	defer srv.Close()
	_, port, _ := net.SplitHostPort(srv.Listener.Addr().String())
	p, _ := strconv.Atoi(port)

	cfg := config.Defaults()
	cfg.Balancer.Kind = config.BalancerNone
	cfg.Rollout.Runtime = config.RuntimeProcess
	cfg.Services = []config.Service{{Name: "web", Command: []string{"app"}, Port: p,
		Health: config.ServiceHealth{Path: "/health"}, Verify: config.ServiceVerify{VersionHeader: "X-Version"}}}
	cfg.Hosts = []config.Host{{Name: "host-a", Address: "127.0.0.1"}}
	d := New(cfg, Options{Self: "zero502"})
	h, svc := cfg.Hosts[0], cfg.Services[0]
	ctx := context.Background()

	if !d.vouched(ctx, h, svc, "v2", "", true) {
		t.Error("a healthy service answering X-Version v2 is not vouched for as running v2")
	}
	if !d.vouched(ctx, h, svc, "v2", "", false) {
		t.Error("between batches, a healthy service is not vouched for")
	}
	serving.Store("v1")
	if d.vouched(ctx, h, svc, "v2", "", true) {
		t.Error("a service answering X-Version v1 was vouched for as running v2 after the last batch")
	}
	cfg.Services[0].Verify = config.ServiceVerify{}
	if d.vouched(ctx, h, cfg.Services[0], "v1", "", true) {
		t.Error("a service that names no version was vouched for after the last batch: it needs the full look")
	}
}

// A host over ssh that passed its step and whose instance then dies is failed by the next
// re-verify; here it ran nothing before (a first deploy), so there is nothing to roll back to.
// The report must not say it runs the version the re-verify just saw it not run: what it runs
// is read back (nothing), and its error says what the re-verify saw.
func TestAHostOverSSHFailedByReverifyClaimsNoVersionItWasNotSeenRunning(t *testing.T) {
	t.Parallel()
	s := startSSHD(t)
	f := newFleet(t, 2)
	path, cfg := f.remoteConfig(s, "reverify.yaml", 1)
	f.startLB(path)
	var ev eventLog
	d := f.deployer(cfg, nil, Options{RemoteBinary: bin})
	killed := false
	d.opts.Events = func(e Event) {
		ev.add(e)
		if e.Host != "host-b" || e.Step != stepVerified || killed {
			return
		}
		// host-a's step reported v1 long ago; its instance dies now, before the last re-verify.
		killed = true
		if in, ok := f.instances("host-a")["web"]; ok {
			if _, err := f.runtimes["host-a"].Stop(context.Background(), in, 0); err != nil {
				t.Errorf("kill host-a's web: %v", err)
			}
		}
	}
	rep, err := d.Deploy(context.Background(), "v1")
	if !killed {
		t.Fatalf("host-b never verified: %v\nevents:\n%s", err, &ev)
	}
	if err == nil || !strings.Contains(err.Error(), "host host-a") {
		t.Errorf("deploy with host-a's instance dead at the last re-verify: %v; want an error naming host-a", err)
	}
	if v := f.versions()["host-a"]; v != "" {
		t.Fatalf("host-a runs %q; the rig was meant to leave nothing running there", v)
	}
	a := rep.Hosts[0]
	if a.Running == "v1" || a.Running != "" || a.Outcome != report.OutcomeFailed {
		t.Errorf("host-a: %q, runs %q; want %q running nothing (read back): the re-verify saw no v1 run\nevents:\n%s",
			a.Outcome, a.Running, report.OutcomeFailed, &ev)
	}
	if !strings.Contains(a.Error, "no instance runs") {
		t.Errorf("host-a's error does not say what the re-verify saw (no instance runs): %s", a.Error)
	}
}
