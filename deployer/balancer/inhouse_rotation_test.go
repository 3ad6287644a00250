package balancer_test

import (
	"context"
	"encoding/json"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/zero502/zero502/deployer/balancer"
	"github.com/zero502/zero502/infra/adminapi"
	"github.com/zero502/zero502/infra/lb"
	"github.com/zero502/zero502/internal/testrig/lbinproc"
	"github.com/zero502/zero502/internal/testrig/poll"
)

// inHouseLB runs a real in-house LB in-process on loopback in front of backends, with fast
// health checks, and returns it with a client of its admin API.
func inHouseLB(t *testing.T, backends ...string) (*lb.Server, *balancer.InHouse) {
	t.Helper()
	set := lb.LabSettings("127.0.0.1:0", backends)
	set.Admin = "127.0.0.1:0"
	set.Interval, set.Timeout = 100*time.Millisecond, 80*time.Millisecond
	s := lbinproc.Start(t, set).Server
	return s, balancer.NewInHouse(s.AdminAddr(), "")
}

func healthyApp(t *testing.T) string {
	t.Helper()
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {}))
	t.Cleanup(srv.Close)
	return srv.Listener.Addr().String()
}

// waitFor polls cond until it holds or d passes; an error from cond fails the test at once, with
// what and the error, rather than being waited out.
func waitFor(t *testing.T, d time.Duration, what string, cond func() (bool, error)) {
	t.Helper()
	poll.Until(t, d, what, func() bool {
		ok, err := cond()
		if err != nil {
			t.Fatalf("%s: %v", what, err)
		}
		return ok
	})
}

func TestInHouseRotationAgainstARealLB(t *testing.T) {
	t.Parallel()
	old, fresh := healthyApp(t), healthyApp(t)
	srv, rot := inHouseLB(t, old)
	var _ balancer.Rotation = rot
	ctx := context.Background()

	// start-first: the new target joins, out of rotation until the LB's checks pass
	if err := rot.Add(ctx, fresh); err != nil {
		t.Fatalf("Add: %v", err)
	}
	if st, err := rot.TargetState(ctx, fresh); err != nil || st.InRotation {
		t.Fatalf("right after Add: %+v, %v; want known and out of rotation", st, err)
	}
	waitFor(t, 5*time.Second, "the added target in rotation", func() (bool, error) {
		st, err := rot.TargetState(ctx, fresh)
		return st.InRotation, err
	})
	if err := rot.Add(ctx, fresh); err != nil {
		t.Errorf("Add of a target already in rotation: %v, want no-op", err)
	}

	// the old target: drain, wait until drained, remove
	if ok, err := rot.Drained(ctx, old); err != nil || ok {
		t.Fatalf("Drained before Drain: %v, %v; want false", ok, err)
	}
	err := rot.Remove(ctx, old)
	if err == nil || !strings.Contains(err.Error(), old) || !strings.Contains(err.Error(), "409") || !strings.Contains(err.Error(), "drain it first") {
		t.Fatalf("Remove of a target in rotation: %v, want the LB's 409 naming the target", err)
	}
	if err := rot.Drain(ctx, old); err != nil {
		t.Fatalf("Drain: %v", err)
	}
	if st, err := rot.TargetState(ctx, old); err != nil || st.InRotation || st.State != "draining" {
		t.Fatalf("after Drain: %+v, %v; want draining, out of rotation", st, err)
	}
	waitFor(t, 5*time.Second, "the old target drained", func() (bool, error) { return rot.Drained(ctx, old) })
	if err := rot.Remove(ctx, old); err != nil {
		t.Fatalf("Remove: %v", err)
	}
	if err := rot.Remove(ctx, old); err != nil {
		t.Errorf("Remove of a target already gone: %v, want nil", err)
	}
	if ok, err := rot.Drained(ctx, old); err != nil || !ok {
		t.Errorf("Drained of a removed target: %v, %v; want true", ok, err)
	}

	// errors name the admin address, the target and the LB's answer
	err = rot.Drain(ctx, old)
	if err == nil || !strings.Contains(err.Error(), srv.AdminAddr()) || !strings.Contains(err.Error(), old) || !strings.Contains(err.Error(), "404") {
		t.Errorf("Drain of an unknown target: %v, want an error naming the admin, the target and 404", err)
	}
	err = rot.Add(ctx, "not-an-address")
	if err == nil || !strings.Contains(err.Error(), "400") || !strings.Contains(err.Error(), "host:port") {
		t.Errorf("Add of a bad address: %v, want the LB's 400 and its rule", err)
	}
}

// drainedBy is who GET /admin/backends of the LB at admin says drained target ("" when it says
// nobody), read as an operator would.
func drainedBy(t *testing.T, admin, target string) string {
	t.Helper()
	req, err := http.NewRequest(http.MethodGet, "http://"+admin+"/admin/backends", nil)
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set(adminapi.ClientHeader, "1")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var body struct {
		Backends []adminapi.BackendStatus `json:"backends"`
	}
	if err := json.NewDecoder(resp.Body).Decode(&body); err != nil || resp.StatusCode != http.StatusOK {
		t.Fatalf("GET http://%s/admin/backends: %s, %v", admin, resp.Status, err)
	}
	for _, be := range body.Backends {
		if be.Address == target {
			return be.DrainedBy
		}
	}
	t.Fatalf("GET http://%s/admin/backends does not list %s: %+v", admin, target, body.Backends)
	return ""
}

// A drain the deployer makes is recorded at the LB as the deploy's (drained_by deploy), not as
// an operator's (admin): mesh lb-sync and people tell it apart. Through one LB and through a tier
// of two, whose drain reaches each instance.
func TestTheDeployersDrainsAreRecordedAsTheDeploys(t *testing.T) {
	t.Parallel()
	one, tierApp := healthyApp(t), healthyApp(t)
	srv, rot := inHouseLB(t, one)
	lb1, a := inHouseLB(t, tierApp)
	lb2, b := inHouseLB(t, tierApp)
	tier := balancer.Tier{a, b}
	ctx := context.Background()
	waitFor(t, 5*time.Second, "the apps in rotation", func() (bool, error) {
		st1, err := rot.TargetState(ctx, one)
		if err != nil {
			return false, err
		}
		st2, err := tier.TargetState(ctx, tierApp)
		return st1.InRotation && st2.InRotation, err
	})

	if err := rot.Drain(ctx, one); err != nil {
		t.Fatalf("Drain: %v", err)
	}
	if got := drainedBy(t, srv.AdminAddr(), one); got != "deploy" {
		t.Errorf("after the adapter's drain the LB says drained_by %q, want %q", got, "deploy")
	}
	if err := tier.Drain(ctx, tierApp); err != nil {
		t.Fatalf("the tier's Drain: %v", err)
	}
	for _, s := range []*lb.Server{lb1, lb2} {
		if got := drainedBy(t, s.AdminAddr(), tierApp); got != "deploy" {
			t.Errorf("after the tier's drain the LB at %s says drained_by %q, want %q", s.AdminAddr(), got, "deploy")
		}
	}
}

func TestInHouseRotationErrorsWhenTheLBIsDown(t *testing.T) {
	t.Parallel()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := ln.Addr().String()
	_ = ln.Close()
	rot := balancer.NewInHouse(addr, "")
	err = rot.Drain(context.Background(), "10.0.0.1:8080")
	if err == nil || !strings.Contains(err.Error(), addr) || !strings.Contains(err.Error(), "10.0.0.1:8080") {
		t.Errorf("Drain with no LB: %v, want an error naming the admin address and the target", err)
	}
}
