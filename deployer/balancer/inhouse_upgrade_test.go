package balancer_test

import (
	"context"
	"net/http"
	"net/http/httptest"
	"net/http/httputil"
	"net/url"
	"path/filepath"
	"testing"
	"time"

	"github.com/zero502/zero502/deployer/balancer"
)

// An LB upgrading in place answers admin writes 503 with Retry-After until the attempt ends
// (adminapi.Gate): its state is being handed to the new process. A deploy's drain that lands
// then is made once the attempt ends, as the answer asks, rather than failing the deploy's step.
func TestADrainDuringAnLBUpgradeIsMadeOnceTheAttemptEnds(t *testing.T) {
	t.Parallel()
	app := healthyApp(t)
	srv, direct := inHouseLB(t, app)
	ctx := context.Background()
	waitFor(t, 5*time.Second, "the app in rotation", func() (bool, error) {
		st, err := direct.TargetState(ctx, app)
		return st.InRotation, err
	})

	// The deployer talks to the admin through a proxy that says when the admin refused a write.
	admin, err := url.Parse("http://" + srv.AdminAddr())
	if err != nil {
		t.Fatal(err)
	}
	refused := make(chan struct{}, 1)
	proxy := httputil.NewSingleHostReverseProxy(admin)
	proxy.ModifyResponse = func(r *http.Response) error {
		if r.StatusCode == http.StatusServiceUnavailable {
			select {
			case refused <- struct{}{}:
			default:
			}
		}
		return nil
	}
	front := httptest.NewServer(proxy)
	t.Cleanup(front.Close)
	rot := balancer.NewInHouse(front.Listener.Addr().String(), "")

	// An upgrade attempt starts: the LB hands its admin state over and holds writes.
	if err := srv.PrepareHandoff(filepath.Join(t.TempDir(), "lb.pid.admin.json")); err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() { done <- rot.Drain(ctx, app) }()
	select {
	case <-refused:
	case err := <-done:
		t.Fatalf("Drain during the upgrade attempt returned %v before the LB refused it", err)
	case <-time.After(10 * time.Second):
		t.Fatal("the LB did not refuse the drain during the upgrade attempt within 10s")
	}
	srv.HandoffFailed() // the attempt ends: this LB keeps serving and takes writes again
	select {
	case err := <-done:
		if err != nil {
			t.Fatalf("a drain refused while the LB upgraded: %v, want it made once the attempt ended", err)
		}
	case <-time.After(30 * time.Second):
		t.Fatal("the drain did not end within 30s of the attempt's end")
	}
	if got := drainedBy(t, srv.AdminAddr(), app); got != "deploy" {
		t.Errorf("after the drain the LB says drained_by %q, want %q", got, "deploy")
	}
}
