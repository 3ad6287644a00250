package main

import (
	"encoding/json"
	"net/http"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/zero502/zero502/internal/testrig/poll"
)

// Once an LB handed its sockets to an upgraded process, only the new process answers on the
// admin listener, even while the old one still drains (here --drain 8s): an admin change the
// old process took would be gone when it exits. The upgrade reloads a changed config (another
// health interval), so /admin/settings says which process answered.
func TestLBUpgradeLeavesTheAdminListenerToTheNewProcess(t *testing.T) {
	bin, dir := upgradeRig(t)
	port := backends(t, "127.0.0.1", "127.0.0.2")
	listen, admin := freeAddr(t), freeAddr(t)
	cfg := filepath.Join(dir, "lb.yaml")
	writeFile(t, cfg, lbUpgradeConfig(listen, admin, port, "250ms", "127.0.0.1", "127.0.0.2"))
	pidFile := filepath.Join(dir, "run", "lb.pid")
	old := startServer(t, bin, filepath.Join(dir, "lb.log"), pidFile, "lb", "--config", cfg, "--drain", "8s", "--pid-file", pidFile)
	poll.Until(t, 10*time.Second, "the LB serves", func() bool { return get(t, "http://"+listen+"/") == 200 })

	writeFile(t, cfg, lbUpgradeConfig(listen, admin, port, "300ms", "127.0.0.1", "127.0.0.2"))
	out, code := runBin(t, bin, "lb", "upgrade", "--pid-file", pidFile)
	if code != 0 || !strings.Contains(out, "upgraded: pid") {
		t.Fatalf("lb upgrade: exit %d, %q\n%s", code, out, readLog(t, dir, "lb.log"))
	}
	c := &http.Client{Timeout: 3 * time.Second, Transport: &http.Transport{DisableKeepAlives: true}}
	for i := range 12 { // each on a new connection, which either process could accept
		var settings struct{ Interval string }
		resp, err := c.Get("http://" + admin + "/admin/settings")
		if err != nil {
			t.Fatalf("admin request %d after the upgrade: %v", i, err)
		}
		err = json.NewDecoder(resp.Body).Decode(&settings)
		_ = resp.Body.Close()
		if err != nil {
			t.Fatalf("admin request %d after the upgrade: %v", i, err)
		}
		if settings.Interval != "300ms" {
			t.Fatalf("admin request %d after the upgrade answered by the old process (interval %q, want the new config's 300ms)", i, settings.Interval)
		}
	}
	select {
	case <-old.exited:
		t.Fatal("the old LB exited before the admin requests: the test did not cover its drain")
	default:
	}
}
