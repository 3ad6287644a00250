package watchdog_test

import (
	"context"
	"encoding/json"
	"fmt"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/zero502/zero502/infra/clock"
	"github.com/zero502/zero502/infra/config"
	"github.com/zero502/zero502/infra/runtime"
	"github.com/zero502/zero502/infra/spec"
	"github.com/zero502/zero502/invariants"
	"github.com/zero502/zero502/watchdog"
)

// recordingRuntime runs nothing: it lists one running instance of web at addr (the one a drain
// keeps answering 503) and records what the watchdog asks of it. The watchdog's counting is
// under test, not a runtime.
type recordingRuntime struct {
	addr      string
	mu        sync.Mutex
	did       []string
	failStart bool // every Start fails (after being recorded)
}

func (r *recordingRuntime) Start(_ context.Context, _ string, svc spec.Service) (runtime.Instance, error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.did = append(r.did, "start "+svc.Version)
	if r.failStart {
		return runtime.Instance{}, fmt.Errorf("start %s: no space left on device", svc.Name)
	}
	return runtime.Instance{ID: "new", Service: svc.Name, Address: svc.Address, State: runtime.StateRunning}, nil
}

func (r *recordingRuntime) Stop(_ context.Context, in runtime.Instance, _ time.Duration) (runtime.Stopped, error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.did = append(r.did, "stop "+in.ID)
	return runtime.Stopped{}, nil
}

func (r *recordingRuntime) List(context.Context, runtime.Filter) ([]runtime.Instance, error) {
	return []runtime.Instance{{ID: "draining", Service: "web", Version: "v1", Address: r.addr, State: runtime.StateRunning}}, nil
}

func (r *recordingRuntime) Remove(context.Context, runtime.Instance) error { return nil }

func (r *recordingRuntime) actions() []string {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]string(nil), r.did...)
}

// drainingHost is a host whose one service, web, answers 503 to every check (a drain that never
// ends), under a config with the watchdog and drain numbers given (YAML flow mappings), its spec
// published and its watchdog on a fake clock.
type drainingHost struct {
	cfg   *config.Config
	rt    *recordingRuntime
	clk   *clock.Fake
	w     *watchdog.Watchdog
	state string
}

func newDrainingHost(t *testing.T, watchdogYAML, drainYAML string) *drainingHost {
	t.Helper()
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		w.WriteHeader(http.StatusServiceUnavailable)
	}))
	t.Cleanup(srv.Close)
	host, port, err := net.SplitHostPort(srv.Listener.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	state := t.TempDir()
	cfg, err := config.LoadBytes([]byte(fmt.Sprintf(`
rollout: {runtime: process}
watchdog: {%s, state_dir: %s, lock_path: %s/deploy.lock}
drain: {%s}
services: [{name: web, command: [/bin/true], port: %s}]
hosts: [{name: h1, address: %s}]
`, watchdogYAML, state, state, drainYAML, port, host)), "test config")
	if err != nil {
		t.Fatal(err)
	}
	if err := spec.Publish(spec.Path(state), spec.Render(cfg, cfg.Hosts[0], "v1", "")); err != nil {
		t.Fatal(err)
	}
	d := &drainingHost{cfg: cfg, rt: &recordingRuntime{addr: srv.Listener.Addr().String()},
		clk: clock.NewFake(time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)), state: state}
	if d.w, err = watchdog.New(cfg, cfg.Hosts[0], watchdog.Options{Runtime: d.rt, Clock: d.clk}); err != nil {
		t.Fatal(err)
	}
	return d
}

// tick runs one tick and returns web's verdict.
func (d *drainingHost) tick(t *testing.T) watchdog.Verdict {
	t.Helper()
	rep, err := d.w.Tick(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	return verdict(t, rep, "web")
}

// I5 holds for interval 90s, heal_after 3, drain 140s + 10s: (3 − 1) × 90s = 180s > 150s. Yet
// with ticks 60s apart (the shipped timer's OnUnitActiveSec=60s beside this config, or a run by
// hand or --loop beside the timer) every failure counted once it came half an interval after the
// last, and the third, 120s into the drain, healed the service that was only draining. A failure
// now counts once per interval, and the heal_after-th only (heal_after − 1) × interval after the
// first: the heal comes after the drain, 240s in, on the fifth tick.
func TestI5HoldsAndTicksSoonerThanTheIntervalNeverHealADrainingService(t *testing.T) {
	d := newDrainingHost(t, "interval: 90s, heal_after: 3", "window: 140s, shutdown: 10s, stop_grace: 170s")
	for _, v := range invariants.Evaluate(d.cfg) {
		if v.ID == "I5" && v.Status != invariants.Holds {
			t.Fatalf("I5 should hold: %s", v.Sentence)
		}
	}
	drain := d.cfg.Drain.Window + d.cfg.Drain.Shutdown
	healedAt := time.Duration(-1)
	for in := time.Duration(0); in <= 5*time.Minute; in += 60 * time.Second {
		if in > 0 {
			d.clk.Advance(60 * time.Second)
		}
		v := d.tick(t)
		if v.Healed {
			healedAt = in
			break
		}
		if in == 60*time.Second && (v.Streak != 1 || !strings.Contains(v.Reason, "not counted: 1m0s after the last counted failure, under watchdog.interval 1m30s")) {
			t.Errorf("the tick 60s after the first failure: %+v; want it reported as not counted, saying why", v)
		}
	}
	if healedAt <= drain {
		t.Fatalf("healed %s into a %s drain (%v), although I5 holds", healedAt, drain, d.rt.actions())
	}
	if want := 4 * time.Minute; healedAt != want {
		t.Errorf("healed %s after the first failure, want %s: the first tick at or past (3 − 1) × 90s after it with a counted failure between", healedAt, want)
	}
	if got := strings.Join(d.rt.actions(), ", "); got != "stop draining, start v1" {
		t.Errorf("the heal did %s; want the draining instance stopped and v1 started", got)
	}
}

// Ticks within CountTolerance of the interval count (a timer's tick whose check of the service
// came a little sooner after its start than the last tick's did), but never add up to a heal
// sooner than (heal_after − 1) × interval after the first failure: that failure is reported as
// not counted, and the next tick heals.
func TestTicksAWhiskerUnderTheIntervalCountButNeverHealSoonerThanI5Says(t *testing.T) {
	d := newDrainingHost(t, "interval: 60s, heal_after: 4", "window: 15s, shutdown: 10s, stop_grace: 30s")
	interval := d.cfg.Watchdog.Interval
	early := interval - watchdog.CountTolerance(interval)/2
	if early >= interval || early <= interval-watchdog.CountTolerance(interval) {
		t.Fatalf("tolerance %s: nothing to test", watchdog.CountTolerance(interval))
	}
	start := d.clk.Now()
	for i := 1; i <= 3; i++ {
		if v := d.tick(t); v.Streak != i || v.Healed || strings.Contains(v.Reason, "not counted") {
			t.Fatalf("tick %d, %s after the last: %+v; want failure %d counted", i, early, v, i)
		}
		d.clk.Advance(early)
	}
	v := d.tick(t) // 3 × 58.5s = 2m55.5s after the first failure: under 3 × 60s
	if v.Healed || v.Streak != 3 || !strings.Contains(v.Reason, "not counted: it would be failure 4 of watchdog.heal_after 4, 2m55.5s after the streak's first, under (watchdog.heal_after − 1) × watchdog.interval 1m0s = 3m0s") {
		t.Fatalf("the 4th failure %s after the first: %+v; want it not counted, saying why", d.clk.Now().Sub(start), v)
	}
	d.clk.Advance(early)
	if v := d.tick(t); !v.Healed {
		t.Fatalf("the next failure, %s after the first: %+v; want the heal", d.clk.Now().Sub(start), v)
	}
}

// A streak counted by an older zero502 has no failing_since: it is taken to begin at its last
// counted failure, so the heal comes later than it would have, never sooner.
func TestAStreakWithoutItsStartHealsNoSooner(t *testing.T) {
	d := newDrainingHost(t, "interval: 60s, heal_after: 4", "window: 15s, shutdown: 10s, stop_grace: 30s")
	// The spec it was counted against (a newer one starts every streak over).
	published, err := spec.Read(spec.Path(d.state))
	if err != nil {
		t.Fatal(err)
	}
	old, err := json.Marshal(map[string]any{"host": "h1", "spec_published_at": published.PublishedAt,
		"services": map[string]any{"web": map[string]any{"consecutive_failures": 3, "last_error": "503", "last_check": d.clk.Now()}}})
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(d.state, watchdog.StateFile), old, 0o644); err != nil {
		t.Fatal(err)
	}
	for i := 1; i <= 2; i++ {
		d.clk.Advance(d.cfg.Watchdog.Interval)
		if v := d.tick(t); v.Healed || v.Streak != 3 {
			t.Fatalf("tick %d after the old streak of 3: %+v; want no heal before 3 intervals from its last failure", i, v)
		}
	}
	d.clk.Advance(d.cfg.Watchdog.Interval)
	if v := d.tick(t); !v.Healed {
		t.Fatalf("3 intervals after the old streak's last failure: %+v; want the heal", v)
	}
}

// A wall clock that went back (a step of NTP) counts the failure, as before, and the streak is
// taken to have begun an interval before each counted failure: the heal is neither hastened nor
// held up until the clock catches up.
func TestAClockThatWentBackCountsAndHealsOnTime(t *testing.T) {
	d := newDrainingHost(t, "interval: 60s, heal_after: 4", "window: 15s, shutdown: 10s, stop_grace: 30s")
	interval := d.cfg.Watchdog.Interval
	if v := d.tick(t); v.Streak != 1 {
		t.Fatalf("first failure: %+v", v)
	}
	d.clk.Advance(-10 * time.Minute)
	if v := d.tick(t); v.Streak != 2 || strings.Contains(v.Reason, "not counted") {
		t.Fatalf("a failure after the clock went back 10 minutes: %+v; want it counted", v)
	}
	d.clk.Advance(interval)
	if v := d.tick(t); v.Streak != 3 {
		t.Fatalf("the next, an interval later: %+v; want failure 3", v)
	}
	d.clk.Advance(interval)
	if v := d.tick(t); !v.Healed {
		t.Fatalf("the fourth counted failure, 3 intervals into the streak as re-anchored: %+v; want the heal", v)
	}
}

// A heal that failed is tried again once per watchdog.interval, as a failure counts: a tick run
// by hand or by --loop beside the timer does not stop and start the service again sooner.
func TestAFailedHealIsTriedAgainOncePerInterval(t *testing.T) {
	d := newDrainingHost(t, "interval: 60s, heal_after: 4", "window: 15s, shutdown: 10s, stop_grace: 30s")
	d.rt.failStart = true
	interval := d.cfg.Watchdog.Interval
	for i := 1; i <= 3; i++ {
		if v := d.tick(t); v.Streak != i || v.HealError != "" {
			t.Fatalf("tick %d: %+v; want failure %d counted, no heal yet", i, v, i)
		}
		d.clk.Advance(interval)
	}
	if v := d.tick(t); v.HealError == "" || v.Healed {
		t.Fatalf("the 4th failure: %+v; want the heal tried and failed", v)
	}
	starts := func() (n int) {
		for _, a := range d.rt.actions() {
			if strings.HasPrefix(a, "start ") {
				n++
			}
		}
		return n
	}
	d.clk.Advance(10 * time.Second) // a tick by hand, 10s after the failed heal
	if v := d.tick(t); v.HealError != "" || starts() != 1 || !strings.Contains(v.Reason, "not counted") {
		t.Fatalf("a tick 10s after a failed heal: %+v, %d starts (%v); want no second try before an interval, said not counted",
			v, starts(), d.rt.actions())
	}
	d.clk.Advance(interval - 10*time.Second)
	if v := d.tick(t); v.HealError == "" || starts() != 2 {
		t.Fatalf("a tick an interval after the failed heal: %+v, %d starts; want the heal tried again", v, starts())
	}
}
