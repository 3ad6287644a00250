package deployer

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/zero502/zero502/infra/config"
)

// ErrStalled is what a host's step is stopped for when it reported nothing for
// rollout.progress_deadline.
var ErrStalled = errors.New("the step stalled")

// progress holds the progress clock of each host's step while it runs, by host name: the
// rollout.progress_deadline of Kubernetes' and Argo Rollouts' progressDeadlineSeconds. Every
// event of the step (its own, or relayed from its host over ssh) restarts the clock; a step
// that lets it run out is stopped, so a frozen host or a call that never returns cannot hold its
// batch, and the fleet lock, for ever. I16 keeps the deadline longer than any wait a step makes
// without an event.
type progress struct {
	mu    sync.Mutex
	steps map[string]*stepClock
}

// stepClock is one step's progress clock.
type stepClock struct {
	timer *time.Timer
	cause error // set once the deadline passed; then the clock no longer restarts
}

// watchProgress starts host h's progress clock for its step and returns the step's context,
// cancelled with an error wrapping ErrStalled once the step has reported nothing for
// rollout.progress_deadline (its first wait, for the host lock, may take --lock-timeout more),
// and end, which stops the clock and returns that error if the deadline passed (nil if not).
func (d *Deployer) watchProgress(ctx context.Context, h config.Host) (context.Context, func() error) {
	ctx, cancel := context.WithCancelCause(ctx)
	deadline := d.cfg.Rollout.ProgressDeadline
	c := &stepClock{}
	d.progress.mu.Lock()
	if d.progress.steps == nil {
		d.progress.steps = map[string]*stepClock{}
	}
	d.progress.steps[h.Name] = c
	c.timer = time.AfterFunc(d.opts.LockTimeout+deadline, func() {
		cause := fmt.Errorf("host %s: its step reported nothing for rollout.progress_deadline %s (a frozen host, or a call "+
			"that never returns): it was told to stop, and rolls back by itself or is cut off: %w", h.Name, deadline, ErrStalled)
		d.progress.mu.Lock()
		c.cause = cause
		d.progress.mu.Unlock()
		d.emit(Event{Host: h.Name, Step: StepStalled, Message: cause.Error()})
		cancel(cause)
	})
	d.progress.mu.Unlock()
	return ctx, func() error {
		c.timer.Stop()
		d.progress.mu.Lock()
		defer d.progress.mu.Unlock()
		if d.progress.steps[h.Name] == c {
			delete(d.progress.steps, h.Name)
		}
		cancel(nil)
		return c.cause
	}
}

// progressed restarts the progress clock of the step of e's host, if one runs: by
// rollout.progress_deadline, and by --lock-timeout more when the step now waits for its host lock.
func (d *Deployer) progressed(e Event) {
	if e.Host == "" {
		return
	}
	d.progress.mu.Lock()
	defer d.progress.mu.Unlock()
	c := d.progress.steps[e.Host]
	if c == nil || c.cause != nil {
		return
	}
	wait := d.cfg.Rollout.ProgressDeadline
	if e.Step == stepLockWait {
		wait += d.opts.LockTimeout
	}
	c.timer.Reset(wait)
}
