package watchdog_test

import (
	"context"
	"errors"
	"os"
	"strings"
	"testing"
	"time"

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
