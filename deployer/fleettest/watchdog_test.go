//go:build linux

package fleettest

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/zero502/zero502/deployer/ssh"
	"github.com/zero502/zero502/infra/config"
	"github.com/zero502/zero502/internal/testrig/netfleet"
	"github.com/zero502/zero502/watchdog"
)

// slowHealth is a service that knows nothing of zero502: Python's http.server answering every
// path at once, except /health, which it answers after 800ms: 200, or 503 while the file named
// by its third argument exists (a service that has gone bad). Python dies at once on SIGTERM.
const slowHealth = `import http.server, os, sys, time
port, version, sick, address = int(sys.argv[1]), sys.argv[2], sys.argv[3], sys.argv[4]
class Handler(http.server.BaseHTTPRequestHandler):
    def do_GET(self):
        code = 200
        if self.path == "/health":
            time.sleep(0.8)
            code = 503 if os.path.exists(sick) else 200
        body = ("version %s\n" % version).encode()
        self.send_response(code)
        self.send_header("X-Version", version)
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)
    def log_message(self, *args):
        pass
http.server.ThreadingHTTPServer((address, port), Handler).serve_forever()
`

// The watchdog on each of 8 hosts, ticking there through their sshd as its systemd timer would,
// judges a service by the service's own health rule. Beside the web service behind the LB, each
// host runs "slow", whose /health answers in 800ms, under
// services[].health.timeout 2s, so five ticks find it healthy on every host and restart nothing
// (watchdog.check_timeout is 500ms: a watchdog that used it would heal on the fourth). The same
// ticks do heal a host whose service has really gone bad (503), on the heal_after-th tick, and
// only that host: the watchdog there checks, over the host's own network, what it should.
func TestTheWatchdogOnEachHostJudgesBySlowServicesOwnHealthRule(t *testing.T) {
	t.Parallel()
	f := newFleet(t, 8, func(cfg *config.Config) {
		cfg.Watchdog.CheckTimeout = 500 * time.Millisecond
		cfg.Services = append(cfg.Services, config.Service{Name: "slow", Port: 8100, Verify: config.ServiceVerify{VersionHeader: "X-Version"},
			Health:  config.ServiceHealth{Path: "/health", Timeout: 2 * time.Second},
			Command: []string{"python3", "-c", slowHealth, "{port}", "{version}", filepath.Join(hostsRoot(cfg), "{host}", "sick"), "{address}"}})
	})
	f.startLB()
	began := time.Now()
	f.fresh("v1")
	t.Logf("first deploy: %s", time.Since(began).Round(time.Millisecond))
	before := f.instances("slow")
	if len(before) != 8 {
		t.Fatalf("instances after the first deploy: %v, want one on each of the 8 hosts", before)
	}

	began = time.Now()
	ticks := f.tickWatchdogs(f.nf.Hosts, 5)
	t.Logf("five ticks on every host: %s", time.Since(began).Round(time.Millisecond))
	for _, h := range f.nf.Hosts {
		for i, rep := range ticks[h.Name] {
			v, ok := verdictOf(rep, "slow")
			if !ok || !v.Healthy || v.Streak != 0 || v.Healed || rep.Skipped {
				t.Errorf("%s tick %d: %+v (skipped %v); want slow healthy (800ms within health.timeout 2s), streak 0, not healed",
					h.Name, i+1, v, rep.Skipped)
			}
		}
	}
	if after := f.instances("slow"); fmt.Sprint(after) != fmt.Sprint(before) {
		t.Errorf("instances after five healthy ticks: %v; want them untouched: %v", after, before)
	}

	// host-02's service goes bad: its watchdog heals it on the fourth failing tick; host-01's,
	// ticking beside it, still finds its own healthy.
	sick := filepath.Join(f.hosts, "host-02", "sick")
	if err := os.WriteFile(sick, nil, 0o644); err != nil {
		t.Fatal(err)
	}
	ticks = f.tickWatchdogs([]*netfleet.Host{f.host("host-01"), f.host("host-02")}, f.cfg.Watchdog.HealAfter)
	for i, rep := range ticks["host-02"] {
		v, _ := verdictOf(rep, "slow")
		last := i == len(ticks["host-02"])-1
		if v.Healthy || v.Healed != last || !strings.Contains(v.Reason, "503") {
			t.Errorf("host-02 (503) tick %d: %+v; want failing on its 503, healed on tick %d (heal_after) only", i+1, v, f.cfg.Watchdog.HealAfter)
		}
	}
	for i, rep := range ticks["host-01"] {
		if v, _ := verdictOf(rep, "slow"); !v.Healthy || v.Healed {
			t.Errorf("host-01 tick %d beside host-02's heal: %+v; want healthy, not healed", i+1, v)
		}
	}
	after := f.instances("slow")
	if after["host-02"] == before["host-02"] || after["host-01"] != before["host-01"] {
		t.Errorf("instances after host-02's heal: %v (before %v); want host-02's replaced, the others untouched", after, before)
	}
}

// hostsRoot is the parent of the hosts' state dirs in a config newFleet is making.
func hostsRoot(cfg *config.Config) string { return filepath.Dir(cfg.Hosts[0].StateDir) }

// tickWatchdogs runs `zero502 watchdog --json` n times, paced as its timer, on each of hosts, there over
// ssh (as its systemd timer runs it on the host), all hosts at once, and returns each host's
// reports in order.
func (f *fleet) tickWatchdogs(hosts []*netfleet.Host, n int) map[string][]watchdog.Report {
	f.t.Helper()
	var mu sync.Mutex
	out := map[string][]watchdog.Report{}
	var wg sync.WaitGroup
	for _, h := range hosts {
		wg.Add(1)
		go func() {
			defer wg.Done()
			tick := ssh.ShellQuote(bin) + " watchdog --json --config " + ssh.ShellQuote(f.path) + " --host " + h.Name
			var last time.Time
			for i := range n {
				// As the systemd timer does: a tick starts watchdog.interval after the one before,
				// or a little later, never sooner (the watchdog counts a failure once per interval
				// and heals only (heal_after − 1) × interval after a streak's first, so a tick
				// whose check came a few ms early would heal one tick late).
				time.Sleep(time.Until(last.Add(f.cfg.Watchdog.Interval + f.cfg.Watchdog.Interval/10)))
				last = time.Now()
				ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
				data, err := f.nf.SSHCommand(ctx, h, tick).Output()
				cancel()
				var rep watchdog.Report
				if jerr := json.Unmarshal(data, &rep); err != nil || jerr != nil {
					f.t.Errorf("watchdog tick %d on %s: %v %v\n%s%s", i+1, h.Name, err, jerr, data, stderrOf(err))
					return
				}
				mu.Lock()
				out[h.Name] = append(out[h.Name], rep)
				mu.Unlock()
			}
		}()
	}
	wg.Wait()
	if f.t.Failed() {
		f.t.FailNow()
	}
	return out
}

func verdictOf(rep watchdog.Report, service string) (watchdog.Verdict, bool) {
	for _, v := range rep.Services {
		if v.Service == service {
			return v, true
		}
	}
	return watchdog.Verdict{}, false
}

// instances maps each host to the id of its running instance of service (from its records).
func (f *fleet) instances(service string) map[string]string {
	f.t.Helper()
	out := map[string]string{}
	for _, h := range f.cfg.Hosts {
		for _, in := range f.records(h, service) {
			if in.Running() {
				out[h.Name] = in.ID
			}
		}
	}
	return out
}
