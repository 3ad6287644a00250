package watchdog_test

import (
	"context"
	"errors"
	"os"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/zero502/zero502/infra/config"
	"github.com/zero502/zero502/infra/runtime/process"
	"github.com/zero502/zero502/infra/spec"
	"github.com/zero502/zero502/internal/testrig/tcpserver"
	"github.com/zero502/zero502/watchdog"
)

// processFixture is a host of the process runtime running web and worker at v1.
func processFixture(t *testing.T) *fixture {
	t.Helper()
	dir := t.TempDir()
	cfg := processConfig(t, dir, tcpserver.FreePort(t))
	rt, err := process.New(dir)
	if err != nil {
		t.Fatal(err)
	}
	f := newFixture(t, cfg, rt)
	f.deploy("v1")
	return f
}

func TestHealsOnTheFourthConsecutiveFailureNotTheThird(t *testing.T) {
	f := processFixture(t)
	if rep := f.tick(); verdict(t, rep, "web").Streak != 0 || !verdict(t, rep, "web").Healthy {
		t.Fatalf("healthy web: %+v", rep)
	}
	f.kill("web")    // checked over HTTP
	f.kill("worker") // no port: checked by its process state
	for i := 1; i <= 3; i++ {
		rep := f.tick()
		for _, svc := range []string{"web", "worker"} {
			v := verdict(t, rep, svc)
			if v.Healthy || v.Healed || v.Streak != i {
				t.Fatalf("tick %d after the kill: %+v, want failing with streak %d and no heal", i, v, i)
			}
			if n := len(f.running(svc)); n != 0 {
				t.Fatalf("tick %d: %d %s instances run; the watchdog must not act before the 4th failure", i, n, svc)
			}
		}
	}
	rep := f.tick()
	for _, svc := range []string{"web", "worker"} {
		if v := verdict(t, rep, svc); !v.Healed || v.Streak != 0 || v.Instance == "" {
			t.Fatalf("4th failing tick: %+v, want %s healed with the streak reset", v, svc)
		}
		if got := f.running(svc); len(got) != 1 || got[0].Version != "v1" {
			t.Fatalf("after the heal %s runs %+v, want one instance of the published v1", svc, got)
		}
	}
	waitVersion(t, f.cfg.Hosts[0].ServiceAddr(f.cfg.Services[0]), "v1")
	if v := verdict(t, f.tick(), "web"); !v.Healthy || v.Streak != 0 {
		t.Fatalf("tick after the heal: %+v, want healthy", v)
	}
	if !strings.Contains(f.logs.String(), `"msg":"heal"`) || !strings.Contains(f.logs.String(), `"service":"web"`) {
		t.Errorf("no JSON heal line in the log:\n%s", f.logs)
	}
	m := samples(t, metricsPath(f))
	for series, want := range map[string]float64{
		`zero502_watchdog_heals_total{service="web"}`:          1,
		`zero502_watchdog_heals_total{service="worker"}`:       1,
		`zero502_watchdog_consecutive_failures{service="web"}`: 0,
		"zero502_watchdog_last_tick_timestamp_seconds":         float64(f.clk.Now().Add(-f.cfg.Watchdog.Interval).Unix()),
	} {
		if got, ok := m[series]; !ok || got != want {
			t.Errorf("textfile: %s = %v (present %v), want %v:\n%s", series, got, ok, want, readFile(t, metricsPath(f)))
		}
	}
}

func TestASuccessResetsTheStreak(t *testing.T) {
	f := processFixture(t)
	f.kill("worker")
	for i := 1; i <= 3; i++ {
		if v := verdict(t, f.tick(), "worker"); v.Streak != i || !strings.Contains(v.Reason, "not running") {
			t.Fatalf("tick %d: %+v, want streak %d, reason not running", i, v, i)
		}
	}
	// The instance comes back by other hands before the 4th tick (an operator, a deploy).
	s, _ := spec.Read(spec.Path(f.dir))
	worker, _ := s.Service("worker")
	if _, err := f.rt.Start(context.Background(), f.host.Name, worker); err != nil {
		t.Fatal(err)
	}
	if v := verdict(t, f.tick(), "worker"); !v.Healthy || v.Streak != 0 {
		t.Fatalf("tick with the worker back: %+v, want healthy, streak 0", v)
	}
	f.kill("worker")
	for i := 1; i <= 3; i++ {
		if v := verdict(t, f.tick(), "worker"); v.Healed || v.Streak != i {
			t.Fatalf("tick %d of the second run: %+v, want streak %d and no heal (the success reset it)", i, v, i)
		}
	}
}

// A deploy publishes a new spec: the failures counted against the old instances do not carry
// over to the new ones, so a new version is healed on its own 4th failure, not its first.
func TestANewSpecStartsEveryStreakOver(t *testing.T) {
	f := processFixture(t)
	f.kill("web")
	for i := 1; i <= 3; i++ {
		if v := verdict(t, f.tick(), "web"); v.Streak != i || v.Healed {
			t.Fatalf("tick %d: %+v, want streak %d and no heal", i, v, i)
		}
	}
	f.kill("worker")
	f.deploy("v2") // a deploy: the spec republished, web and worker v2 started and healthy
	f.kill("web")  // and then down once
	if v := verdict(t, f.tick(), "web"); v.Streak != 1 || v.Healed {
		t.Fatalf("v2's first failed check after v1's three: %+v, want streak 1 and no heal", v)
	}
}

func TestAHeldLockSkipsTheTickAndLeavesTheCountersUntouched(t *testing.T) {
	f := processFixture(t)
	f.kill("web")
	f.tick()
	f.tick() // web failing twice
	state, metrics := readFile(t, statePath(f)), readFile(t, metricsPath(f))

	release := holdWithFlock(t, f.cfg.HostLockPath(f.host))
	for i := 0; i < 5; i++ {
		rep := f.tick()
		if !rep.Skipped || len(rep.Services) != 0 {
			t.Fatalf("tick %d under a flock(1) lock: %+v, want skipped", i, rep)
		}
	}
	if got := readFile(t, statePath(f)); got != state {
		t.Fatalf("state changed while the lock was held:\n%s\nwas:\n%s", got, state)
	}
	if got := readFile(t, metricsPath(f)); got != metrics {
		t.Fatalf("textfile changed while the lock was held")
	}
	if n := len(f.running("web")); n != 0 {
		t.Fatal("the watchdog started web while the lock was held")
	}
	if !strings.Contains(f.logs.String(), "host lock held") {
		t.Errorf("no log line naming the held lock:\n%s", f.logs)
	}

	release()
	if v := verdict(t, f.tick(), "web"); v.Streak != 3 || v.Healed {
		t.Fatalf("first tick after the lock is free: %+v, want the streak to go on from 2 to 3", v)
	}
	if v := verdict(t, f.tick(), "web"); !v.Healed {
		t.Fatalf("second tick after the lock is free: %+v, want healed (4th failure)", v)
	}
}

func TestAServiceTheSpecMarksStoppedIsNeverStarted(t *testing.T) {
	f := processFixture(t)
	f.kill("worker")
	s, err := spec.Read(spec.Path(f.dir))
	if err != nil {
		t.Fatal(err)
	}
	for i := range s.Services {
		if s.Services[i].Name == "worker" {
			s.Services[i].Stopped = true
		}
	}
	if err := spec.Publish(spec.Path(f.dir), s); err != nil {
		t.Fatal(err)
	}
	for i := 0; i < 2*f.cfg.Watchdog.HealAfter; i++ {
		if v := verdict(t, f.tick(), "worker"); !v.Stopped || v.Healed || v.Streak != 0 {
			t.Fatalf("tick %d: %+v, want the stopped worker left alone", i, v)
		}
	}
	if n := len(f.running("worker")); n != 0 {
		t.Fatalf("%d worker instances run; the spec says stopped", n)
	}
	if strings.Contains(readFile(t, metricsPath(f)), `service="worker"`) {
		t.Errorf("a stopped service has no streak to export")
	}
}

func TestTheWatchdogNeverWritesTheSpec(t *testing.T) {
	f := processFixture(t)
	before := readFile(t, spec.Path(f.dir))
	st, _ := os.Stat(spec.Path(f.dir))
	f.kill("web")
	for i := 0; i < f.cfg.Watchdog.HealAfter; i++ {
		f.tick()
	}
	if len(f.running("web")) != 1 {
		t.Fatal("web was not healed")
	}
	after, _ := os.Stat(spec.Path(f.dir))
	if readFile(t, spec.Path(f.dir)) != before || !after.ModTime().Equal(st.ModTime()) {
		t.Fatal("the spec changed: only the deployer writes it")
	}
}

func TestACorruptStateFileIsResetWithAWarning(t *testing.T) {
	for name, content := range map[string]string{
		"garbage":          "{not json",
		"negative streak":  `{"services":{"web":{"consecutive_failures":-3}}}`,
		"null service":     `{"services":{"web":null}}`,
		"wrong type":       `{"services":[1,2]}`,
		"empty file":       "",
		"a directory name": "",
	} {
		t.Run(name, func(t *testing.T) {
			f := processFixture(t)
			f.kill("web")
			if name == "a directory name" {
				if err := os.Mkdir(statePath(f), 0o755); err != nil {
					t.Fatal(err)
				}
				t.Cleanup(func() { os.RemoveAll(statePath(f)) })
				// An unreadable state is reset, but it cannot be written over either: the
				// tick says so instead of crashing.
				if _, err := f.w.Tick(context.Background()); err == nil || !strings.Contains(err.Error(), watchdog.StateFile) {
					t.Fatalf("tick over a directory state = %v, want an error naming %s", err, watchdog.StateFile)
				}
				return
			}
			if err := os.WriteFile(statePath(f), []byte(content), 0o644); err != nil {
				t.Fatal(err)
			}
			if v := verdict(t, f.tick(), "web"); v.Streak != 1 {
				t.Fatalf("tick over a corrupt state: %+v, want a fresh streak of 1", v)
			}
			if !strings.Contains(f.logs.String(), `"level":"WARN"`) || !strings.Contains(f.logs.String(), "starting every streak from zero") {
				t.Errorf("no warning about the reset:\n%s", f.logs)
			}
			if v := verdict(t, f.tick(), "web"); v.Streak != 2 {
				t.Fatalf("next tick: %+v, want 2: the rewritten state is good again", v)
			}
		})
	}
}

func TestNoPublishedSpecMeansNothingToWatch(t *testing.T) {
	dir := t.TempDir()
	cfg := processConfig(t, dir, tcpserver.FreePort(t))
	rt, err := process.New(dir)
	if err != nil {
		t.Fatal(err)
	}
	f := newFixture(t, cfg, rt)
	rep := f.tick()
	if !rep.NoSpec || len(rep.Services) != 0 {
		t.Fatalf("tick on a fresh host: %+v, want NoSpec", rep)
	}
	if _, err := os.Stat(spec.Path(dir)); !os.IsNotExist(err) {
		t.Fatal("the watchdog wrote a spec")
	}
	if !strings.Contains(readFile(t, metricsPath(f)), "zero502_watchdog_last_tick_timestamp_seconds") {
		t.Error("the textfile should still say when the watchdog last ticked")
	}
}

func TestACorruptSpecIsAnErrorAndNothingIsHealed(t *testing.T) {
	f := processFixture(t)
	f.kill("web")
	if err := os.WriteFile(spec.Path(f.dir), []byte("{half a spec"), 0o644); err != nil {
		t.Fatal(err)
	}
	for i := 0; i < f.cfg.Watchdog.HealAfter+1; i++ {
		_, err := f.w.Tick(context.Background())
		if err == nil || !errors.Is(err, spec.ErrCorrupt) || !strings.Contains(err.Error(), "zero502 deploy --version V sets it aside") {
			t.Fatalf("tick %d over a corrupt spec = %v, want an error saying to republish", i, err)
		}
	}
	if n := len(f.running("web")); n != 0 {
		t.Fatal("the watchdog healed from a corrupt spec")
	}
}

func TestHostsPicksTheNamedHostOrTheLocalOnes(t *testing.T) {
	cfg := processConfig(t, t.TempDir(), tcpserver.FreePort(t))
	hs, err := watchdog.Hosts(cfg, "h1")
	if err != nil || len(hs) != 1 || hs[0].Name != "h1" {
		t.Fatalf("Hosts(h1) = %v, %v", hs, err)
	}
	if _, err := watchdog.Hosts(cfg, "nope"); err == nil || !strings.Contains(err.Error(), "hosts: h1") {
		t.Fatalf("Hosts(nope) = %v, want an error listing the hosts", err)
	}
	if hs, err := watchdog.Hosts(cfg, ""); err != nil || len(hs) != 1 {
		t.Fatalf("Hosts(\"\") = %v, %v, want the host without ssh", hs, err)
	}
	// a host over ssh beside the local one: which one this machine is, only a name can say
	mixed := *cfg
	mixed.Hosts = append(slices.Clone(cfg.Hosts), config.Host{Name: "app-2", Address: "10.0.0.2", SSH: "deploy@app-2"})
	if hs, err := watchdog.Hosts(&mixed, ""); err == nil || !strings.Contains(err.Error(), "--host") {
		t.Fatalf("Hosts(\"\") with a host over ssh beside the local one = %v, %v; want a request for --host", hs, err)
	}
	cfg.Hosts[0].SSH = "deploy@elsewhere"
	if _, err := watchdog.Hosts(cfg, ""); err == nil || !strings.Contains(err.Error(), "--host") {
		t.Fatalf("Hosts(\"\") with only remote hosts = %v, want a request for --host", err)
	}
}

func TestLoopTicksEveryIntervalUntilCancelled(t *testing.T) {
	f := processFixture(t)
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	reps := make(chan watchdog.Report, 10)
	go func() {
		defer close(done)
		watchdog.Loop(ctx, []*watchdog.Watchdog{f.w}, time.Minute, func(r watchdog.Report, err error) {
			if err != nil {
				t.Error(err)
			}
			reps <- r
		})
	}()
	<-reps // the first tick is immediate
	for i := 0; i < 2; i++ {
		deadline := time.Now().Add(30 * time.Second)
		for f.clk.Waiters() == 0 && time.Now().Before(deadline) {
			time.Sleep(time.Millisecond)
		}
		f.clk.Advance(time.Minute)
		select {
		case <-reps:
		case <-time.After(30 * time.Second):
			t.Fatalf("no tick %d after the interval", i+2)
		}
	}
	cancel()
	<-done
}

// A deploy cut short between its steps can leave a spec naming an instance that does not run
// (start-first: the new version's port) while the old instance still serves on its own port,
// the one the balancer routes to. The watchdog counts the failures but never stops the instance
// that passes to start the unverified version: the heal is refused, naming both and what to do.
func TestNoHealStopsAnInstanceThatPassesAtAnotherAddress(t *testing.T) {
	f := processFixture(t) // web v1 on its port, healthy
	moved := *f.cfg
	moved.Services = slices.Clone(f.cfg.Services)
	moved.Services[0].Port = tcpserver.FreePort(t) // nothing listens there
	cut := spec.Render(&moved, f.host, "v2", "")
	if err := spec.Publish(spec.Path(f.dir), cut); err != nil {
		t.Fatal(err)
	}
	oldAddr := f.cfg.Hosts[0].ServiceAddr(f.cfg.Services[0])
	var rep watchdog.Report
	for range f.cfg.Watchdog.HealAfter + 1 {
		rep = f.tick()
	}
	v := verdict(t, rep, "web")
	if v.Healed || !strings.Contains(v.HealError, "not healed: web v1 at "+oldAddr) || !strings.Contains(v.HealError, "zero502 deploy --version v2") {
		t.Errorf("verdict %+v; want the heal refused, naming v1 at %s and how to finish the deploy", v, oldAddr)
	}
	if rep.Err() == nil {
		t.Error("the tick that refused to heal exits 0; want it flagged")
	}
	if got := f.running("web"); len(got) != 1 || got[0].Version != "v1" {
		t.Fatalf("web instances %+v; want v1 alone, still running", got)
	}
	waitVersion(t, oldAddr, "v1")
}

// A tick called off (SIGTERM, Ctrl-C) counts no failure and heals nothing: its checks were cut
// short, not failed.
func TestACalledOffTickCountsNothingAndHealsNothing(t *testing.T) {
	f := processFixture(t)
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	for i := range f.cfg.Watchdog.HealAfter + 1 {
		rep, err := f.w.Tick(ctx)
		if err == nil || !errors.Is(err, context.Canceled) {
			t.Fatalf("called-off tick %d: %v; want an error saying so", i+1, err)
		}
		if v := verdict(t, rep, "web"); v.Healed || v.Streak != 0 {
			t.Fatalf("called-off tick %d: %+v; want nothing counted or healed", i+1, v)
		}
		f.clk.Advance(f.cfg.Watchdog.Interval)
	}
	if got := f.running("web"); len(got) != 1 || got[0].Version != "v1" {
		t.Fatalf("web instances %+v; want v1 still running", got)
	}
	if v := verdict(t, f.tick(), "web"); !v.Healthy || v.Streak != 0 {
		t.Errorf("the next tick: %+v; want healthy with no streak", v)
	}
}

// A spec published for another host (two hosts of one machine sharing a state dir) is refused:
// healing it would start that host's services under this host's name.
func TestASpecOfAnotherHostIsRefused(t *testing.T) {
	f := processFixture(t)
	other := spec.Render(f.cfg, config.Host{Name: "app-2", Address: "127.0.0.1"}, "v1", "")
	if err := spec.Publish(spec.Path(f.dir), other); err != nil {
		t.Fatal(err)
	}
	f.kill("web")
	for i := range f.cfg.Watchdog.HealAfter {
		rep, err := f.w.Tick(context.Background())
		if err == nil || !strings.Contains(err.Error(), `published for host "app-2"`) || len(rep.Services) != 0 {
			t.Fatalf("tick %d over app-2's spec: %+v, %v; want it refused naming app-2", i+1, rep, err)
		}
		f.clk.Advance(f.cfg.Watchdog.Interval)
	}
	if got := f.running("web"); len(got) != 0 {
		t.Fatalf("web instances %+v; want none started from another host's spec", got)
	}
}

// A failure counts once per tick of the timer: checks less than an interval (less
// CountTolerance) after the last counted one (a manual run beside the timer) are reported, never
// counted, so quick runs never heal before heal_after ticks' time (I5). Not even 0.6 of an
// interval after it, which the first rule (half an interval) counted.
func TestQuickRunsBesideTheTimerDoNotHastenAHeal(t *testing.T) {
	f := processFixture(t)
	f.kill("web")
	tick := func(advance time.Duration) watchdog.Verdict {
		t.Helper()
		rep, err := f.w.Tick(context.Background())
		if err != nil {
			t.Fatal(err)
		}
		f.clk.Advance(advance)
		return verdict(t, rep, "web")
	}
	interval := f.cfg.Watchdog.Interval
	quick := interval / 8
	for i := range 4 { // 4 runs within 3/8 of an interval
		if v := tick(quick); v.Healed || v.Streak != 1 || (i > 0 && !strings.Contains(v.Reason, "not counted")) {
			t.Fatalf("quick run %d: %+v; want one counted failure, the rest reported as not counted", i+1, v)
		}
	}
	f.clk.Advance(interval / 10) // 0.6 of an interval after the counted failure
	if v := tick(interval * 4 / 10); v.Healed || v.Streak != 1 || !strings.Contains(v.Reason, "not counted") {
		t.Fatalf("a run 0.6 of an interval after the counted failure: %+v; want it reported as not counted", v)
	}
	for i := 2; i < f.cfg.Watchdog.HealAfter; i++ {
		if v := tick(interval); v.Healed || v.Streak != i {
			t.Fatalf("tick %d an interval apart: %+v; want streak %d", i, v, i)
		}
	}
	if v := tick(interval); !v.Healed {
		t.Fatalf("the heal_after-th counted failure: %+v; want the heal", v)
	}
}
