package watchdog_test

import (
	"fmt"
	"net"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/zero502/zero502/infra/config"
	"github.com/zero502/zero502/infra/runtime/process"
	"github.com/zero502/zero502/infra/spec"
)

// listenHealth serves h on a real listener on a free port of 127.0.0.1 until the test ends and
// returns the port.
func listenHealth(t *testing.T, h http.HandlerFunc) int {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	srv := &http.Server{Handler: h}
	go srv.Serve(l)
	t.Cleanup(func() { srv.Close() })
	return l.Addr().(*net.TCPAddr).Port
}

// ruleFixture is a process-runtime host whose services are the given YAML list items, each
// answering on a port of this test process, with watchdog.check_timeout 500ms. Its spec is
// published as rendered, after edit; the watchdog checks the services over HTTP only (they have
// a port), so nothing is started.
func ruleFixture(t *testing.T, services string, edit func(*spec.Spec)) *fixture {
	t.Helper()
	dir := t.TempDir()
	cfg, err := config.LoadBytes([]byte(fmt.Sprintf(`
rollout: {runtime: process}
watchdog: {interval: 1s, heal_after: 4, check_timeout: 500ms, state_dir: %[1]s}
services:
%[2]s
hosts:
  - {name: h1, address: 127.0.0.1, state_dir: %[1]s}
`, dir, services)), "test config")
	if err != nil {
		t.Fatal(err)
	}
	rt, err := process.New(dir)
	if err != nil {
		t.Fatal(err)
	}
	f := newFixture(t, cfg, rt)
	s := spec.Render(cfg, f.host, "v1", "")
	if edit != nil {
		edit(&s)
	}
	if err := spec.Publish(spec.Path(f.dir), s); err != nil {
		t.Fatal(err)
	}
	return f
}

// The watchdog judges a service by the service's own health rule from the spec: an answer in
// 800ms is healthy under services[].health.timeout 2s, whatever watchdog.check_timeout (500ms)
// says, so four ticks heal nothing. check_timeout bounds only a spec that carries no timeout.
func TestTheWatchdogWaitsTheServicesOwnHealthTimeoutNotCheckTimeout(t *testing.T) {
	slow := func(w http.ResponseWriter, r *http.Request) {
		time.Sleep(800 * time.Millisecond) // the service is slow; the test asserts on the verdicts
		w.WriteHeader(http.StatusOK)
	}
	slowPort, legacyPort := listenHealth(t, slow), listenHealth(t, slow)
	f := ruleFixture(t, fmt.Sprintf(`
  - {name: slow, command: [slow], port: %d, health: {path: /health, timeout: 2s}}
  - {name: legacy, command: [legacy], port: %d, health: {path: /health, timeout: 2s}}`, slowPort, legacyPort),
		func(s *spec.Spec) {
			for i := range s.Services {
				if s.Services[i].Name == "legacy" {
					s.Services[i].HealthTimeout = 0 // published before the spec carried the timeout
				}
			}
		})
	for i := 1; i <= 4; i++ {
		rep := f.tick()
		if v := verdict(t, rep, "slow"); !v.Healthy || v.Streak != 0 || v.Healed {
			t.Fatalf("tick %d: slow (answers in 800ms, health.timeout 2s): %+v, want healthy and never healed", i, v)
		}
		if v := verdict(t, rep, "legacy"); v.Healthy || v.Streak != i || !strings.Contains(v.Reason, "no answer within 500ms") {
			t.Fatalf("tick %d: legacy (no timeout in its spec): %+v, want failing on watchdog.check_timeout 500ms, streak %d", i, v, i)
		}
	}
}

// The watchdog never follows a redirect: a service expecting 301 whose health path redirects is
// healthy, and one expecting 200 whose health path answers 301 is not.
func TestTheWatchdogJudgesARedirectByTheExpectedStatus(t *testing.T) {
	redirect := func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/health" {
			http.Redirect(w, r, "/landing", http.StatusMovedPermanently)
			return
		}
		w.WriteHeader(http.StatusOK) // /landing: healthy, were the redirect followed
	}
	movedPort, plainPort := listenHealth(t, redirect), listenHealth(t, redirect)
	f := ruleFixture(t, fmt.Sprintf(`
  - {name: moved, command: [moved], port: %d, health: {path: /health, expect_status: 301}}
  - {name: plain, command: [plain], port: %d, health: {path: /health}}`, movedPort, plainPort), nil)
	rep := f.tick()
	if v := verdict(t, rep, "moved"); !v.Healthy || v.Streak != 0 {
		t.Fatalf("moved (expects 301, answers 301): %+v, want healthy", v)
	}
	if v := verdict(t, rep, "plain"); v.Healthy || v.Streak != 1 || !strings.Contains(v.Reason, "answered 301, want 200") {
		t.Fatalf("plain (expects 200, answers 301): %+v, want failing with answered 301, want 200", v)
	}
}
