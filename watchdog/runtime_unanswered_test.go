package watchdog_test

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/zero502/zero502/infra/clock"
	"github.com/zero502/zero502/infra/config"
	"github.com/zero502/zero502/infra/runtime"
	"github.com/zero502/zero502/infra/spec"
	"github.com/zero502/zero502/watchdog"
)

// flakyListRuntime has one healthy running instance of worker (a service without a port); its
// List fails for the first failLists calls (a runtime API that does not answer: the docker
// daemon restarting, say), then answers.
type flakyListRuntime struct {
	mu        sync.Mutex
	lists     int
	failLists int
	did       []string
}

func (r *flakyListRuntime) Start(_ context.Context, _ string, svc spec.Service) (runtime.Instance, error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.did = append(r.did, "start "+svc.Version)
	return runtime.Instance{ID: "new", Service: svc.Name, State: runtime.StateRunning}, nil
}

func (r *flakyListRuntime) Stop(_ context.Context, in runtime.Instance, _ time.Duration) (runtime.Stopped, error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.did = append(r.did, "stop "+in.ID)
	return runtime.Stopped{}, nil
}

func (r *flakyListRuntime) List(context.Context, runtime.Filter) ([]runtime.Instance, error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.lists++
	if r.lists <= r.failLists {
		return nil, errors.New("Cannot connect to the Docker daemon: context deadline exceeded")
	}
	return []runtime.Instance{{ID: "healthy", Service: "worker", Version: "v1", State: runtime.StateRunning}}, nil
}

func (r *flakyListRuntime) Remove(context.Context, runtime.Instance) error { return nil }

// A runtime that does not answer (the Docker daemon restarting) says nothing of the service: its
// ticks are not counted as failures. Four such ticks stopped and recreated a service whose
// instance ran healthy all along.
func TestARuntimeThatCannotListIsNotAFailingService(t *testing.T) {
	state := t.TempDir()
	cfg, err := config.LoadBytes([]byte(fmt.Sprintf(`
rollout: {runtime: process}
watchdog: {interval: 60s, heal_after: 4, state_dir: %s, lock_path: %s/deploy.lock}
services: [{name: worker, command: [/bin/true]}]
hosts: [{name: h1, address: 127.0.0.1}]
`, state, state)), "test config")
	if err != nil {
		t.Fatal(err)
	}
	if err := spec.Publish(spec.Path(state), spec.Render(cfg, cfg.Hosts[0], "v1", "")); err != nil {
		t.Fatal(err)
	}
	rt := &flakyListRuntime{failLists: 4} // the check's List fails on 4 ticks; heal's List answers
	clk := clock.NewFake(time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC))
	w, err := watchdog.New(cfg, cfg.Hosts[0], watchdog.Options{Runtime: rt, Clock: clk})
	if err != nil {
		t.Fatal(err)
	}
	for i := 1; i <= 4; i++ {
		rep, err := w.Tick(context.Background())
		if err != nil {
			t.Fatal(err)
		}
		v := verdict(t, rep, "worker")
		t.Logf("tick %d: healthy=%v streak=%d healed=%v reason=%q", i, v.Healthy, v.Streak, v.Healed, v.Reason)
		clk.Advance(60 * time.Second)
	}
	rt.mu.Lock()
	defer rt.mu.Unlock()
	for _, d := range rt.did {
		if d == "stop healthy" {
			t.Fatalf("the watchdog stopped the running, healthy instance after the runtime failed to list 4 times: %v; "+
				"an unanswered List is no verdict on the service", rt.did)
		}
	}
}
