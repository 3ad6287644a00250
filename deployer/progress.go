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
	d      *Deployer
	host   string
	timer  *time.Timer
	cancel context.CancelCauseFunc
	fired  chan struct{} // closed once the deadline passed and the step was told to stop
	cause  error         // set once the deadline passed (under progress.mu); then the clock no longer restarts
}

// watchProgress starts host h's progress clock for a step of it (a deploy's, or a rollback's)
// and returns the step's context, cancelled with an error wrapping ErrStalled once the step has
// reported nothing for rollout.progress_deadline (its first wait, for the host lock, may take
// --lock-timeout more). The caller ends the clock with end when the step returns.
func (d *Deployer) watchProgress(ctx context.Context, h config.Host) (context.Context, *stepClock) {
	ctx, cancel := context.WithCancelCause(ctx)
	deadline := d.cfg.Rollout.ProgressDeadline
	c := &stepClock{d: d, host: h.Name, cancel: cancel, fired: make(chan struct{})}
	d.progress.mu.Lock()
	defer d.progress.mu.Unlock()
	if d.progress.steps == nil {
		d.progress.steps = map[string]*stepClock{}
	}
	d.progress.steps[h.Name] = c
	c.timer = time.AfterFunc(d.opts.LockTimeout+deadline, func() {
		defer close(c.fired)
		cause := fmt.Errorf("host %s: its step reported nothing for rollout.progress_deadline %s (a frozen host, or a call "+
			"that never returns): it was told to stop, and rolls back by itself or is cut off: %w", h.Name, deadline, ErrStalled)
		d.progress.mu.Lock()
		c.cause = cause
		d.progress.mu.Unlock()
		d.emit(Event{Host: h.Name, Step: StepStalled, Message: cause.Error()})
		cancel(cause)
	})
	return ctx, c
}

// end stops the clock once its step returned err (and wrote repErr, its report's error): when
// the deadline had passed, both say so first.
func (c *stepClock) end(err *error, repErr *string) {
	// Stopped under the lock progressed restarts it under, and taken out of its reach at once:
	// else a Stop between progressed's Stop and Reset would find it stopped, wait for it to fire,
	// and have a step that ended report itself stalled a progress_deadline later.
	c.d.progress.mu.Lock()
	if c.d.progress.steps[c.host] == c {
		delete(c.d.progress.steps, c.host)
	}
	stopped := c.timer.Stop()
	c.d.progress.mu.Unlock()
	if !stopped {
		<-c.fired // it fired: its event and cancel are done before the step's end is told
	}
	c.d.progress.mu.Lock()
	cause := c.cause
	c.d.progress.mu.Unlock()
	c.cancel(nil)
	if cause != nil && *err != nil {
		*err = fmt.Errorf("%w; then: %v", cause, *err)
		*repErr = cause.Error() + "; then: " + *repErr
	}
}

// progressed restarts the progress clock of the step of e's host, if one runs: by
// rollout.progress_deadline, and by --lock-timeout more when the step now waits for its host lock.
// A clock that already ran out stays out (Stop fails once it fired).
func (d *Deployer) progressed(e Event) {
	if e.Host == "" {
		return
	}
	d.progress.mu.Lock()
	defer d.progress.mu.Unlock()
	c := d.progress.steps[e.Host]
	if c == nil || c.cause != nil || !c.timer.Stop() {
		return
	}
	wait := d.cfg.Rollout.ProgressDeadline
	if e.Step == stepLockWait {
		wait += d.opts.LockTimeout
	}
	c.timer.Reset(wait)
}
