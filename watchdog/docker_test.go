package watchdog_test

import (
	"context"
	"fmt"
	"math"
	"net/http"
	"testing"
	"time"

	"github.com/zero502/zero502/infra/config"
	"github.com/zero502/zero502/infra/runtime"
	"github.com/zero502/zero502/infra/runtime/docker/dockertest"
	"github.com/zero502/zero502/infra/spec"
	"github.com/zero502/zero502/internal/testrig/poll"
	"github.com/zero502/zero502/internal/testrig/tcpserver"
)

// dockerFixture is a host of the docker runtime running `zero502 app` as web, with the numbers
// of the shipped examples/local.yaml (drain 1.5s, shutdown 1s, stop grace 4s, watchdog every 1s,
// heal after 4).
func dockerFixture(t *testing.T) *fixture {
	t.Helper()
	rt := dockertest.Engine(t)
	image := dockertest.Image(t, rt)
	host := dockertest.HostName(t, rt)
	cfg, err := config.Load("../examples/local.yaml")
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	cfg.Rollout.Runtime = config.RuntimeDocker
	cfg.Watchdog.StateDir = dir
	cfg.Services = []config.Service{{
		Name: "web", Image: image, Port: tcpserver.FreePort(t), HealthPath: "/health",
		Command: []string{"/zero502", "app", "--host", "0.0.0.0", "--port", "{port}", "--version", "{version}",
			"--drain", "{drain}", "--shutdown", "{shutdown}", "--idle-timeout", "{idle_timeout}"},
	}}
	cfg.Hosts = []config.Host{{Name: host, Address: "127.0.0.1", StateDir: dir}}
	return newFixture(t, cfg, rt)
}

func TestDockerKilledContainerIsHealedOnTheFourthFailingTickAtThePublishedVersion(t *testing.T) {
	f := dockerFixture(t)
	f.deploy("v7")
	addr := f.host.ServiceAddr(f.cfg.Services[0])
	old := f.running("web")
	f.kill("web")
	for i := 1; i < f.cfg.Watchdog.HealAfter; i++ {
		v := verdict(t, f.tick(), "web")
		if v.Healed || v.Streak != i {
			t.Fatalf("tick %d after the kill: %+v, want streak %d and no heal", i, v, i)
		}
		if n := len(f.running("web")); n != 0 {
			t.Fatalf("tick %d: %d containers run; nothing may be started before the 4th failure", i, n)
		}
	}
	v := verdict(t, f.tick(), "web")
	if !v.Healed || v.Streak != 0 {
		t.Fatalf("4th failing tick: %+v, want healed", v)
	}
	waitVersion(t, addr, "v7")
	now := f.running("web")
	if len(now) != 1 || now[0].Version != "v7" || now[0].ID == old[0].ID || now[0].ID != v.Instance {
		t.Fatalf("after the heal: %+v, want one new container of v7 (%s)", now, v.Instance)
	}
	all, err := f.rt.List(context.Background(), runtime.Filter{Host: f.host.Name})
	if err != nil || len(all) != 1 {
		t.Fatalf("containers of the host after the heal: %+v, %v; the killed one must be removed", all, err)
	}
}

func TestDockerHeldLockSkipsTicksAndTouchesNoCounter(t *testing.T) {
	f := dockerFixture(t)
	f.deploy("v1")
	f.kill("web")
	f.tick()
	state, metrics := readFile(t, statePath(f)), readFile(t, metricsPath(f))
	release := holdWithFlock(t, f.cfg.HostLockPath(f.host))
	for i := 0; i < 2*f.cfg.Watchdog.HealAfter; i++ {
		if rep := f.tick(); !rep.Skipped {
			t.Fatalf("tick %d under flock(1): %+v, want skipped", i, rep)
		}
	}
	if readFile(t, statePath(f)) != state || readFile(t, metricsPath(f)) != metrics {
		t.Fatal("the state or the textfile changed while the lock was held")
	}
	if n := len(f.running("web")); n != 0 {
		t.Fatal("a container was started while the lock was held")
	}
	release()
	if v := verdict(t, f.tick(), "web"); v.Streak != 2 {
		t.Fatalf("first tick after the lock is free: %+v, want streak 2 (1 before the lock, untouched since)", v)
	}
}

// I5: without the lock, a service draining under a deploy fails its checks for at most
// drain + shutdown; with the shipped numbers fewer ticks than heal_after fit in that window, so
// the watchdog never heals it. The ticks are driven at the shipped interval from the moment the
// health check first fails, the worst alignment.
func TestDockerDrainingServiceIsNotHealedWithinDrainPlusShutdown(t *testing.T) {
	f := dockerFixture(t)
	f.deploy("v1")
	addr := f.host.ServiceAddr(f.cfg.Services[0])
	inst := f.running("web")[0]
	window := f.cfg.Drain.Window + f.cfg.Drain.Shutdown

	t0 := time.Now()
	stopped := make(chan error, 1)
	go func() { // the deployer's stop, without the lock
		st, err := f.rt.Stop(context.Background(), inst, f.cfg.Drain.StopGrace)
		if err == nil && (st.Killed || st.ExitCode != 0) {
			err = fmt.Errorf("stop ended %+v, want a clean exit within the grace (I2)", st)
		}
		stopped <- err
	}()
	waitHealthNot200(t, addr)

	first := time.Now()
	ticks := 0
	for at := first; at.Before(t0.Add(window)); at = at.Add(f.cfg.Watchdog.Interval) {
		time.Sleep(time.Until(at))
		ticks++
		v := verdict(t, f.tick(), "web")
		if v.Healed {
			t.Fatalf("tick %d, %s after SIGTERM: the draining service was healed: %+v", ticks, time.Since(t0), v)
		}
		if v.Healthy || v.Streak != ticks {
			t.Fatalf("tick %d, %s after SIGTERM: %+v, want failing with streak %d (the drain must be seen)", ticks, time.Since(t0), v, ticks)
		}
	}
	if ticks < 2 || ticks >= f.cfg.Watchdog.HealAfter {
		t.Fatalf("%d failing ticks fit in drain+shutdown %s at interval %s; want 2..%d", ticks, window, f.cfg.Watchdog.Interval, f.cfg.Watchdog.HealAfter-1)
	}
	if err := <-stopped; err != nil {
		t.Fatal(err)
	}
	// The deployer starts the new instance; the next tick finds it healthy and the streak ends.
	s, _ := spec.Read(spec.Path(f.dir))
	web, _ := s.Service("web")
	if err := f.rt.Remove(context.Background(), inst); err != nil {
		t.Fatal(err)
	}
	if _, err := f.rt.Start(context.Background(), f.host.Name, web); err != nil {
		t.Fatal(err)
	}
	waitVersion(t, addr, "v1")
	if v := verdict(t, f.tick(), "web"); !v.Healthy || v.Streak != 0 {
		t.Fatalf("tick after the new instance started: %+v, want healthy, streak reset", v)
	}
}

// waitHealthNot200 polls addr's /health until it stops answering 200 (the drain began).
func waitHealthNot200(t *testing.T, addr string) {
	t.Helper()
	c := &http.Client{Timeout: time.Second, Transport: &http.Transport{DisableKeepAlives: true}}
	poll.Until(t, 10*time.Second, "the health check never failed after SIGTERM", func() bool {
		resp, err := c.Get("http://" + addr + "/health")
		if err != nil {
			return true
		}
		resp.Body.Close()
		return resp.StatusCode != http.StatusOK
	})
}

// With every shipped config, even ticks aligned worst (one at the very start of the window) fit
// fewer than heal_after into drain + shutdown: the tick-counting form of I5.
func TestShippedNumbersFitFewerFailingTicksThanHealAfterInADrain(t *testing.T) {
	cfgs := map[string]*config.Config{"embedded defaults": config.Defaults()}
	for _, p := range []string{"../examples/local.yaml", "../examples/production.yaml"} {
		c, err := config.Load(p)
		if err != nil {
			t.Fatal(err)
		}
		cfgs[p] = c
	}
	for name, c := range cfgs {
		window := c.Drain.Window + c.Drain.Shutdown
		worst := int(math.Floor(float64(window)/float64(c.Watchdog.Interval))) + 1
		if worst >= c.Watchdog.HealAfter {
			t.Errorf("%s: up to %d ticks every %s fit in drain %s + shutdown %s, heal_after is %d: a draining service could be healed",
				name, worst, c.Watchdog.Interval, c.Drain.Window, c.Drain.Shutdown, c.Watchdog.HealAfter)
		}
	}
}
