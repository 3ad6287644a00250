package main

import (
	"encoding/json"
	"io"
	"net"
	"net/http"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/zero502/zero502/infra/adminapi"
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

// What the admin API changed goes with an in-place upgrade of the LB, as the edge's does: a
// deploy under way keeps its drain (who made it too) and its canary's weight, a backend added
// stays and one removed stays gone, maintenance stays on. The new process used to start from the
// configured backends alone: a backend drained to be stopped went back into rotation at its
// first good check, and the canary got an equal share.
func TestLBUpgradeKeepsWhatTheAdminAPIChanged(t *testing.T) {
	bin, dir := upgradeRig(t)
	a, b, c, d := namedBackend(t, "a"), namedBackend(t, "b"), namedBackend(t, "c"), namedBackend(t, "d")
	listen, admin := freeAddr(t), freeAddr(t)
	_, port, _ := net.SplitHostPort(listen)
	pidFile := filepath.Join(dir, "run", "lb.pid")
	startServer(t, bin, filepath.Join(dir, "lb.log"), pidFile, "lb", "--admin", admin, "--pid-file", pidFile, "--drain", "8s",
		"--health-interval", "250ms", "--health-timeout", "200ms", port, a, b, c)
	poll.Until(t, 10*time.Second, "the LB serves", func() bool { return answeredBy(listen) != "" })
	for _, w := range []struct {
		method, path, body string
		want               int
	}{
		{"POST", "/admin/backends/" + a + "/drain?by=deploy", "", http.StatusOK},
		{"PUT", "/admin/backends/" + b + "/weight", `{"weight": 5}`, http.StatusOK},
		{"POST", "/admin/backends/" + c + "/drain", "", http.StatusOK},
		{"DELETE", "/admin/backends/" + c, "", http.StatusNoContent},
		{"PUT", "/admin/backends/" + d, "", http.StatusCreated},
	} {
		if code := adminSend(t, w.method, "http://"+admin+w.path, w.body); code != w.want {
			t.Fatalf("%s %s: %d, want %d", w.method, w.path, code, w.want)
		}
	}
	poll.Until(t, 10*time.Second, "d in rotation in the old process", func() bool { return backendOf(t, admin, d).InRotation })

	if out, code := runBin(t, bin, "lb", "upgrade", "--pid-file", pidFile); code != 0 {
		t.Fatalf("lb upgrade: exit %d, %q\n%s", code, out, readLog(t, dir, "lb.log"))
	}
	if st := backendOf(t, admin, a); !st.AdminDrained || st.DrainedBy != "deploy" || st.InRotation {
		t.Errorf("a after the upgrade: %+v; want still drained by deploy, out of rotation\n%s", st, readLog(t, dir, "lb.log"))
	}
	if st := backendOf(t, admin, b); st.Weight != 5 {
		t.Errorf("b after the upgrade: weight %d, want 5", st.Weight)
	}
	if st := backendOf(t, admin, c); st.Address != "" {
		t.Errorf("c after the upgrade: %+v; want gone (removed before it)", st)
	}
	poll.Until(t, 10*time.Second, "d in rotation in the new process", func() bool { return backendOf(t, admin, d).InRotation })
	seen := map[string]int{}
	for range 60 {
		seen[answeredBy(listen)]++
	}
	if seen["a"] > 0 || seen["c"] > 0 || seen[""] > 0 || seen["d"] == 0 || seen["b"] >= seen["d"] {
		t.Errorf("after the upgrade, requests went %v; want none to a (drained), c (removed) or failed, and b (weight 5) below d (%d)",
			seen, adminapi.DefaultWeight)
	}
}

// namedBackend is an HTTP server on loopback answering every request 200 with name.
func namedBackend(t *testing.T, name string) string { return serveName(t, name, nil) }

// adminSend is adminDo with a body.
func adminSend(t *testing.T, method, url, body string) int {
	t.Helper()
	req, err := http.NewRequest(method, url, strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set(adminapi.ClientHeader, "1")
	c := &http.Client{Timeout: 3 * time.Second, Transport: &http.Transport{DisableKeepAlives: true}}
	resp, err := c.Do(req)
	if err != nil {
		t.Fatalf("%s %s: %v", method, url, err)
	}
	defer resp.Body.Close()
	_, _ = io.Copy(io.Discard, resp.Body)
	return resp.StatusCode
}

// backendOf is the LB's admin view of backend addr (zero when it has none).
func backendOf(t *testing.T, admin, addr string) adminapi.BackendStatus {
	t.Helper()
	c := &http.Client{Timeout: 3 * time.Second, Transport: &http.Transport{DisableKeepAlives: true}}
	resp, err := c.Get("http://" + admin + "/admin/backends/" + addr)
	if err != nil {
		t.Fatalf("admin: %v", err)
	}
	defer resp.Body.Close()
	var st adminapi.BackendStatus
	if resp.StatusCode == http.StatusOK {
		if err := json.NewDecoder(resp.Body).Decode(&st); err != nil {
			t.Fatalf("admin: %v", err)
		}
	}
	return st
}
