package deployer

import (
	"context"
	"errors"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/zero502/zero502/deployer/balancer"
	"github.com/zero502/zero502/infra/adminapi"
	"github.com/zero502/zero502/infra/config"
	"github.com/zero502/zero502/internal/testrig/poll"
)

// A deploy runs while the LB shows the maintenance page: the users see the page and nothing
// else, the new version rolls out on the health checks alone, and after maintenance off the
// traffic reaches it.
func TestDeployDuringMaintenanceRollsOutBehindThePage(t *testing.T) {
	t.Parallel()
	f := newFleet(t, 2)
	path := f.config("fleet.yaml", defaultValues())
	cfg := f.load(path)
	f.startLB(path)
	ctx := context.Background()
	if _, err := f.deployer(cfg, nil, Options{}).Deploy(ctx, "v1"); err != nil {
		t.Fatalf("first deploy: %v", err)
	}

	if _, err := MaintenancePage(ctx, cfg, MaintenanceOnOp, &adminapi.MaintenanceChange{RetryAfter: adminapi.Duration(time.Minute)}); err != nil {
		t.Fatal(err)
	}
	on := adminapi.MaintenanceChange{Message: "Upgrading to v2", RetryAfter: adminapi.Duration(2 * time.Minute)}
	states, err := MaintenancePage(ctx, cfg, MaintenanceOnOp, &on)
	if err != nil || len(states) != 1 || !states[0].On || states[0].Message != on.Message || states[0].Admin != f.admin {
		t.Fatalf("maintenance on: %+v %v, want the one LB on with the message", states, err)
	}
	if s := states[0].String(); !strings.Contains(s, "on since") || !strings.Contains(s, "Retry-After 2m0s") {
		t.Errorf("maintenance on's line: %q", s)
	}

	client := &http.Client{Timeout: 5 * time.Second}
	users := make(chan string, 1)
	stop := make(chan struct{})
	go func() { // a user during the deploy: every answer must be the page
		var bad string
		for n := 0; ; n++ {
			select {
			case <-stop:
				users <- bad
				return
			default:
			}
			resp, err := client.Get("http://" + f.listen + "/")
			if err != nil {
				bad = err.Error()
				continue
			}
			body, _ := io.ReadAll(resp.Body)
			resp.Body.Close()
			if resp.StatusCode != 503 || resp.Header.Get("Retry-After") != "120" || !strings.Contains(string(body), "Upgrading to v2") {
				bad = resp.Status + " " + resp.Header.Get("X-Version") + " " + string(body)
			}
			time.Sleep(20 * time.Millisecond)
		}
	}()
	var events eventLog
	rep, err := f.deployer(cfg, &events, Options{}).Deploy(ctx, "v2")
	close(stop)
	if bad := <-users; bad != "" {
		t.Errorf("a user during the deploy in maintenance got %q, want only the maintenance page", bad)
	}
	if err != nil {
		t.Fatalf("deploy in maintenance: %v\nevents:\n%s", err, &events)
	}
	for _, h := range rep.Hosts {
		requireDeployed(t, h, "v1", "v2")
	}

	states, err = MaintenancePage(ctx, cfg, MaintenanceStatusOp, nil)
	if err != nil || !states[0].On || states[0].Answered == 0 {
		t.Fatalf("maintenance status after the deploy: %+v %v, want still on, pages answered", states, err)
	}
	if states, err = MaintenancePage(ctx, cfg, MaintenanceOffOp, nil); err != nil || states[0].On {
		t.Fatalf("maintenance off: %+v %v", states, err)
	}
	poll.Until(t, 5*time.Second, "v2 answering through the LB after maintenance off", func() bool {
		resp, err := client.Get("http://" + f.listen + "/")
		if err != nil {
			return false
		}
		resp.Body.Close()
		return resp.StatusCode == 200 && resp.Header.Get("X-Version") == "v2"
	})

	// what the switch refuses, before asking any LB
	bad := *cfg
	bad.Balancer.Kind = config.BalancerALB
	if _, err := MaintenancePage(ctx, &bad, MaintenanceOnOp, &on); !errors.Is(err, balancer.ErrNoMaintenance) || !strings.Contains(err.Error(), "fixed-response") {
		t.Errorf("maintenance on an ALB: %v, want ErrNoMaintenance saying to use a fixed-response rule", err)
	}
	if _, err := MaintenancePage(ctx, cfg, MaintenanceOnOp, &adminapi.MaintenanceChange{RetryAfter: adminapi.Duration(time.Millisecond)}); !errors.Is(err, adminapi.ErrBadMaintenance) ||
		!strings.Contains(err.Error(), "retry_after 1ms") {
		t.Errorf("maintenance on with retry-after 1ms: %v, want ErrBadMaintenance naming the value", err)
	}
	// an LB instance that does not answer: the others are still switched, and the error names it
	down := *cfg
	down.Balancer.Admins = []string{f.admin, "127.0.0.1:1"}
	states, err = MaintenancePage(ctx, &down, MaintenanceOnOp, &on)
	if err == nil || !strings.Contains(err.Error(), "127.0.0.1:1") || len(states) != 2 || !states[0].On || states[1].Error == "" {
		t.Errorf("maintenance on with one LB down: %+v %v, want the live one on and the dead one named", states, err)
	}
	if _, err := MaintenancePage(ctx, cfg, MaintenanceOffOp, nil); err != nil {
		t.Fatal(err)
	}
}
