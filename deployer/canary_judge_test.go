package deployer

import (
	"context"
	"errors"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/zero502/zero502/deployer/balancer"
	"github.com/zero502/zero502/infra/adminapi"
	"github.com/zero502/zero502/infra/config"
)

// pauseGuard is a deploy's events, with ctx cancelled the moment the deploy pauses after its
// canary: a test that must not pause ends there instead of waiting for a promote.
type pauseGuard struct {
	eventLog
	cancel context.CancelFunc
	paused bool
}

func (g *pauseGuard) add(e Event) {
	g.eventLog.add(e)
	if e.Step == stepPaused {
		g.mu.Lock()
		g.paused = true
		g.mu.Unlock()
		g.cancel()
	}
}

func (g *pauseGuard) didPause() bool {
	g.mu.Lock()
	defer g.mu.Unlock()
	return g.paused
}

// weightsAt is every target's weight at the fleet's LB now.
func weightsAt(t *testing.T, admin string) map[string]int {
	t.Helper()
	o, err := balancer.NewInHouse(admin, "").Outcomes(context.Background())
	if err != nil {
		t.Error(err)
		return nil
	}
	ws := map[string]int{}
	for addr, sts := range o {
		if len(sts) > 0 {
			ws[addr] = sts[0].Weight
		}
	}
	return ws
}

// shareOf is target's share, in %, of the weights ws.
func shareOf(ws map[string]int, target string) float64 {
	total := 0
	for _, w := range ws {
		total += w
	}
	if total == 0 {
		return 0
	}
	return 100 * float64(ws[target]) / float64(total)
}

// A host just added at the head of hosts[] is the canary of the next deploy with nothing on it
// before. In rotation it serves users, and the other hosts' old version is the baseline: a
// version that fails every request is judged there and rolled back, never paused after as if
// it had passed.
func TestFreshCanaryHostInAServingFleetIsJudged(t *testing.T) {
	t.Parallel()
	f := newFleet(t, 3)
	values := defaultValues()
	cfg := f.load(f.config("good.yaml", values))
	judged(cfg, analysisWindow, canaryFor)
	cfg.Rollout.Analysis.MinRequests = 10
	good := f.write("good.yaml", cfg)
	values.AppFlags = []string{"--fail-every", "1"}
	v2cfg := f.load(f.config("v2.yaml", values))
	v2cfg.Rollout, v2cfg.Balancer.HeaderTimeout = cfg.Rollout, cfg.Balancer.HeaderTimeout
	v2 := f.write("v2.yaml", v2cfg)
	f.startLB(good)
	old := f.load(good)
	old.Hosts = old.Hosts[1:] // host-a is added to the fleet after v1
	if _, err := f.deployer(old, nil, Options{}).Deploy(context.Background(), "v1"); err != nil {
		t.Fatalf("deploy v1 onto host-b and host-c: %v", err)
	}
	m := startMeasureAt(t, f.listen, analysisRate, "/", "/orders", "/health")
	time.Sleep(300 * time.Millisecond)
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	ev := &pauseGuard{cancel: cancel}
	_, err := f.deployer(f.load(v2), nil, Options{PauseAfterCanary: true, Events: ev.add}).Deploy(ctx, "v2")
	m.stop(t)
	if ev.didPause() {
		t.Fatalf("the deploy paused after its canary host-a (fresh, failing every request): %v\nevents:\n%s", err, &ev.eventLog)
	}
	var verdict *VerdictError
	if !errors.As(err, &verdict) || !slices.Contains(verdict.Hosts, "host-a") {
		t.Fatalf("deploy of a version failing every request onto a fresh canary: %v; want host-a's failed verdict\nevents:\n%s", err, &ev.eventLog)
	}
	if verdict.Verdict.Baseline.Requests == 0 {
		t.Errorf("verdict %s: want host-b and host-c (v1) as its baseline", verdict.Verdict.Reason)
	}
	for _, h := range []string{"host-b", "host-c"} {
		if v := f.versions()[h]; v != "v1" {
			t.Errorf("%s runs %q after the canary's failed verdict; want v1 (never reached)", h, v)
		}
	}
}

// A first deploy onto empty hosts has nothing to judge its canary by: it says so, does not
// pause even when asked to (a pause follows only a verdict that passed), and leaves no weight
// on the canary: every host ends with the same share of new requests.
func TestFirstDeployCanaryIsNeitherPausedAfterNorWeighed(t *testing.T) {
	t.Parallel()
	f, path := judgedFleet(t, false)
	canary := f.load(path).Targets()[0]
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	ev := &pauseGuard{cancel: cancel}
	var mu sync.Mutex
	var atLast map[string]int // the weights once the last host is in
	events := func(e Event) {
		ev.add(e)
		if e.Step == stepVerified && e.Host == "host-c" {
			ws := weightsAt(t, f.admin)
			mu.Lock()
			atLast = ws
			mu.Unlock()
		}
	}
	if _, err := f.deployer(f.load(path), nil, Options{PauseAfterCanary: true, Events: events}).Deploy(ctx, "v1"); err != nil {
		t.Fatalf("first deploy of v1 with --pause-after-canary: %v (paused: %v)\nevents:\n%s", err, ev.didPause(), &ev.eventLog)
	}
	said := false
	for _, e := range ev.events {
		said = said || e.Step == StepCanary && strings.Contains(e.Message, "canary not judged: host-a")
	}
	if !said {
		t.Errorf("no event says the canary was not judged\nevents:\n%s", &ev.eventLog)
	}
	mu.Lock()
	defer mu.Unlock()
	if w := atLast[canary]; w != adminapi.DefaultWeight || len(atLast) != 3 {
		t.Errorf("weights once host-c is in: %v; want every target of %v at %d (the canary %s takes %.0f%% of new requests)",
			atLast, f.load(path).Targets(), adminapi.DefaultWeight, canary, shareOf(atLast, canary))
	}
}

// Paused after its canary, the deploy keeps the canary at rollout.canary.weight for as long as
// it waits, and puts it back once promoted, before the next batch starts.
func TestPausedCanaryKeepsItsWeightUntilPromoted(t *testing.T) {
	t.Parallel()
	f, path := judgedFleet(t, true)
	canary := f.load(path).Targets()[0]
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	var ev eventLog
	paused := make(chan struct{})
	var mu sync.Mutex
	var atNext map[string]int // the weights as host-b, the next batch, is published
	events := func(e Event) {
		ev.add(e)
		switch {
		case e.Step == stepPaused && strings.HasPrefix(e.Message, "paused after the canary"):
			close(paused)
		case e.Step == StepPublish && e.Host == "host-b":
			ws := weightsAt(t, f.admin)
			mu.Lock()
			atNext = ws
			mu.Unlock()
		}
	}
	done := make(chan error, 1)
	go func() {
		_, err := f.deployer(f.load(path), nil, Options{PauseAfterCanary: true, Events: events}).Deploy(ctx, "v2")
		done <- err
	}()
	select {
	case <-paused:
	case err := <-done:
		t.Fatalf("the deploy ended without pausing: %v\nevents:\n%s", err, &ev)
	}
	time.Sleep(500 * time.Millisecond) // a while into the pause
	ws, weight := weightsAt(t, f.admin), f.load(path).Rollout.Canary.Weight
	if share := shareOf(ws, canary); ws[canary] == adminapi.DefaultWeight || share > 2*float64(weight) {
		t.Errorf("paused: the canary %s at weight %d of %v: %.0f%% of new requests; want about rollout.canary.weight %d%%",
			canary, ws[canary], ws, share, weight)
	}
	if _, err := Decide(context.Background(), f.load(path), Promote, Options{}, 30*time.Second); err != nil {
		t.Fatalf("promote: %v\nevents:\n%s", err, &ev)
	}
	if err := <-done; err != nil {
		t.Fatalf("the promoted deploy: %v\nevents:\n%s", err, &ev)
	}
	mu.Lock()
	defer mu.Unlock()
	if w := atNext[canary]; w != adminapi.DefaultWeight {
		t.Errorf("the canary %s at weight %d as host-b is published after the promote (weights %v); want %d",
			canary, w, atNext, adminapi.DefaultWeight)
	}
	if w := weightsAt(t, f.admin)[canary]; w != adminapi.DefaultWeight {
		t.Errorf("the canary %s at weight %d after the deploy; want %d", canary, w, adminapi.DefaultWeight)
	}
}

// inRotationShare is target's share, in %, of new requests at the fleet's LB now: its weight over
// the weights of every target in rotation (a start-first port not in use gets none).
func inRotationShare(t *testing.T, admin, target string) (float64, map[string]int) {
	t.Helper()
	o, err := balancer.NewInHouse(admin, "").Outcomes(context.Background())
	if err != nil {
		t.Error(err)
		return 0, nil
	}
	ws, total := map[string]int{}, 0
	for addr, sts := range o {
		if len(sts) > 0 && sts[0].InRotation {
			ws[addr] = sts[0].Weight
			total += sts[0].Weight
		}
	}
	if total == 0 {
		return 0, ws
	}
	return 100 * float64(ws[target]) / float64(total), ws
}

// Under start-first the canary's new instance takes the host's other port. It must have the
// canary's share of new requests from the moment the balancer puts it in rotation, through its
// bake, as a stop-first canary has (docs/deploy.md, "What a bad version costs"): v2 takes the
// port v1 left free (a backend of the LB's config), v3 the port v2's deploy retired (the LB
// forgot it), and neither may serve its bake at a full host's share.
func TestStartFirstCanaryHasItsShareThroughItsBake(t *testing.T) {
	t.Parallel()
	f := newFleet(t, 2)
	values := defaultValues()
	values.Bake = 2 * time.Second
	cfg := f.load(f.config("surge.yaml", values))
	judged(cfg, analysisWindow, canaryFor)
	cfg.Rollout.Strategy = config.StartFirst
	cfg.Services[0].Ports = []int{f.base, f.gatewayBase()}
	path := f.write("surge.yaml", cfg)
	f.startLB(path)
	if _, err := f.deployer(f.load(path), nil, Options{}).Deploy(context.Background(), "v1"); err != nil {
		t.Fatalf("deploy v1: %v", err)
	}
	c := f.load(path)
	svc, _ := c.BalancedService()
	ports := c.Hosts[0].ServiceAddrs(svc)
	for i, version := range []string{"v2", "v3"} {
		target := ports[(i+1)%2] // v1 took the first port, v2 takes the other, v3 the first again
		var ev eventLog
		var mu sync.Mutex
		var inBake float64 = -1
		var weights map[string]int
		events := func(e Event) {
			ev.add(e)
			if e.Step == stepInRotation && e.Host == "host-a" && e.Version == version {
				share, ws := inRotationShare(t, f.admin, target)
				mu.Lock()
				inBake, weights = share, ws
				mu.Unlock()
			}
		}
		ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
		_, err := f.deployer(f.load(path), nil, Options{Events: events}).Deploy(ctx, version)
		cancel()
		if err != nil {
			t.Fatalf("deploy %s: %v\nevents:\n%s", version, err, &ev)
		}
		mu.Lock()
		if weight := float64(c.Rollout.Canary.Weight); inBake < 0 || inBake > 2*weight {
			t.Errorf("%s: the canary's new instance %s in rotation for its bake with %.0f%% of new requests (weights in rotation %v); "+
				"want about rollout.canary.weight %.0f%%\nevents:\n%s", version, target, inBake, weights, weight, &ev)
		}
		mu.Unlock()
	}
}
