package deployer

import (
	"context"
	goruntime "runtime"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/zero502/zero502/deployer/balancer"
	"github.com/zero502/zero502/infra/config"
	"github.com/zero502/zero502/infra/runtime"
)

// hangingRuntime is a runtime whose List stops answering once hang is set (a Docker Engine that
// accepts on its socket but answers nothing), honouring only its context.
type hangingRuntime struct {
	Runtime
	hang *atomic.Bool
}

func (r hangingRuntime) List(ctx context.Context, f runtime.Filter) ([]runtime.Instance, error) {
	if r.hang.Load() {
		<-ctx.Done()
		return nil, ctx.Err()
	}
	return r.Runtime.List(ctx, f)
}

// An interrupted deploy ends though a local host's runtime stopped answering: the read-back of
// each host is bounded (as a remote host's look is), and a host it could not read in time is
// reported as running an unknown version, so Deploy returns and the fleet lock is released.
func TestAnInterruptedDeployEndsThoughItsRuntimeStoppedAnswering(t *testing.T) {
	t.Parallel()
	f := newFleet(t, 2)
	v := defaultValues()
	v.Kind = "none"
	cfg := f.load(f.config("hang.yaml", v))
	var hang atomic.Bool
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	d := f.deployer(cfg, nil, Options{Balancer: balancer.None{}, lookBudget: 2 * time.Second})
	d.opts.Runtime = func(h config.Host) (Runtime, error) { return hangingRuntime{f.runtimes[h.Name], &hang}, nil }
	d.opts.Events = func(e Event) {
		if e.Step == StepLocked && e.Host != "" && !hang.Load() { // host-a's step has its lock: the engine hangs, the user presses Ctrl-C
			hang.Store(true)
			cancel()
		}
	}
	type result struct {
		running string
		err     error
	}
	done := make(chan result, 1)
	go func() {
		rep, err := d.Deploy(ctx, "v1")
		r := result{err: err}
		if rep != nil && len(rep.Hosts) > 0 {
			r.running = rep.Hosts[0].Running
		}
		done <- r
	}()
	select {
	case r := <-done:
		if r.err == nil {
			t.Errorf("the interrupted deploy succeeded")
		}
		if r.running != "unknown" {
			t.Errorf("host-a: report says it runs %q; its runtime never answered the read-back: want %q", r.running, "unknown")
		}
	case <-time.After(60 * time.Second):
		buf := make([]byte, 1<<20)
		stacks := string(buf[:goruntime.Stack(buf, true)])
		if i := strings.Index(stacks, "readBackHost"); i >= 0 {
			t.Logf("stuck in: %s", stacks[max(0, i-600):i+200])
		}
		t.Fatalf("the interrupted deploy has not ended 60s after its runtime stopped answering: its read-back waits for ever")
	}
}
