package deployer

import (
	"context"
	"net"
	"net/http"
	"net/http/httptest"
	"strconv"
	"sync/atomic"
	"testing"

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
