package deployer

import (
	"context"
	"errors"
	"fmt"
	"io"
	"strings"
	"testing"
	"time"

	"github.com/zero502/zero502/infra/config"
	"github.com/zero502/zero502/infra/runtime/process"
)

// slowPull is the process runtime with an image pull (imageEnsurer, as the Docker runtime's)
// that takes took for every image but v1's and writes a status line every say (0: none), as the engine
// streams them: a registry this machine has no slow copy of.
type slowPull struct {
	*process.Runtime
	took, say time.Duration
}

func (s slowPull) EnsureImageWith(ctx context.Context, ref string, progress io.Writer) error {
	if strings.HasSuffix(ref, ":v1") {
		return nil
	}
	done := time.After(s.took)
	var tick <-chan time.Time
	if s.say > 0 {
		t := time.NewTicker(s.say)
		defer t.Stop()
		tick = t.C
	}
	for n := 1; ; n++ {
		select {
		case <-done:
			return nil
		case <-tick:
			fmt.Fprintf(progress, "3f4e2a: Downloading %d%%\n", n*10)
		case <-ctx.Done():
			return context.Cause(ctx)
		}
	}
}

// An image pull longer than rollout.progress_deadline is progress while its stream goes on (a
// big image, a slow registry: the step says "pulling" every few seconds), and a stall once it
// stops (a registry that hangs): only that one is stopped, before anything on the host changed.
func TestAPullIsProgressWhileItsStreamGoesOn(t *testing.T) {
	t.Parallel()
	f := newFleet(t, 2)
	v := defaultValues()
	v.HealthyDeadline = 5 * time.Second
	cfg := f.load(f.config("fleet.yaml", v))
	cfg.Services[0].Image = "registry.example/app:{version}"
	cfg.Rollout.ProgressDeadline = 11 * time.Second // > 1s + 4s + 5s + 0 + 2 × 200ms = 10.4s (I16)
	path := f.write("fleet.yaml", cfg)
	cfg = f.load(path)
	f.startLB(path)
	deploy := func(version string, pull slowPull, events *eventLog) error {
		d := f.deployer(cfg, events, Options{LockTimeout: time.Second})
		d.opts.Runtime = func(h config.Host) (Runtime, error) {
			p := pull
			p.Runtime = f.runtimes[h.Name]
			return p, nil
		}
		_, err := d.Deploy(context.Background(), version)
		return err
	}
	if err := deploy("v1", slowPull{}, nil); err != nil {
		t.Fatalf("v1: %v", err)
	}

	var going eventLog
	if err := deploy("v2", slowPull{took: 13 * time.Second, say: time.Second}, &going); err != nil {
		t.Fatalf("v2 with a 13s pull whose stream goes on: %v; want it deployed (a pull that goes on is progress)\n%s", err, &going)
	}
	if !strings.Contains(going.String(), "pulling registry.example/app:v2: 3f4e2a: Downloading") {
		t.Errorf("the pull was not said while it went on:\n%s", &going)
	}

	var stuck eventLog
	err := deploy("v3", slowPull{took: 13 * time.Second}, &stuck)
	if !errors.Is(err, ErrStalled) || !strings.Contains(err.Error(), "nothing was changed on this host") {
		t.Fatalf("v3 with a 13s pull that says nothing: %v; want it stopped as stalled, with nothing changed\n%s", err, &stuck)
	}
	if got := f.versions(); got["host-a"] != "v2" || got["host-b"] != "v2" {
		t.Errorf("after the stalled pull the hosts run %v; want v2 everywhere", got)
	}
}
