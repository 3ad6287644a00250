package process

import (
	"context"
	"errors"
	"fmt"
	"syscall"
	"time"

	"github.com/zero502/zero502/infra/runtime"
)

// pollEvery is how often Stop looks at a process that is not its child (its own children it
// waits for directly).
const pollEvery = 10 * time.Millisecond

// killWait bounds the wait for a SIGKILLed process to disappear.
const killWait = 10 * time.Second

// Stop sends the instance's stop signal (recorded at Start from the spec's stop_signal; SIGTERM
// by default) to its process (which starts its drain handshake), waits up to grace for it to exit, then SIGKILLs its process group: Stopped.Killed and an error wrapping
// runtime.ErrKilled (invariant I2). grace 0 SIGKILLs at once without an error (the naive
// deploy). An instance that already exited is reported as stopped with its exit code, but what
// it left alive in its process group (a wrapper script's server it did not exec, a sidecar
// started with &) gets the stop signal, the grace and SIGKILL all the same. If ctx ends first,
// Stop returns ctx's error and the process keeps draining.
func (rt *Runtime) Stop(ctx context.Context, inst runtime.Instance, grace time.Duration) (runtime.Stopped, error) {
	if grace < 0 {
		return runtime.Stopped{}, fmt.Errorf("stop %s %s: grace %s is negative; use the config's drain.stop_grace", inst.Service, inst.ID, grace)
	}
	r, err := rt.recordOf(inst)
	if err != nil {
		return runtime.Stopped{}, err
	}
	sig, err := runtime.StopSignal(r.StopSignal)
	if err != nil {
		return runtime.Stopped{}, fmt.Errorf("stop %s %s: %w", r.Service, r.id(), err)
	}
	sigName := r.StopSignal
	if sigName == "" {
		sigName = runtime.DefaultStopSignal
	}
	begin := time.Now()
	if done, code := rt.exited(r); done {
		// It exited before this stop (a crash: its exit code says how), but what it started may
		// live on in its process group, holding its port: that is stopped as the service would be.
		if !leftBehind(r) {
			return runtime.Stopped{ExitCode: code}, nil
		}
		killed, err := rt.stopLeftovers(ctx, r, sig, grace, begin)
		st := runtime.Stopped{ExitCode: code, Killed: killed, Took: time.Since(begin)}
		if err != nil || !killed || grace == 0 {
			return st, err
		}
		return st, fmt.Errorf("host %s: service %s %s (%s) had exited with code %d before this stop, but what it left in its process "+
			"group (a server a wrapper script started without exec, a sidecar started with &?) did not exit within the stop grace %s of %s "+
			"and was SIGKILLed: %w", r.Host, r.Service, r.Version, r.id(), code, grace, sigName, runtime.ErrKilled)
	}
	if grace == 0 {
		code, err := rt.kill(ctx, r)
		return runtime.Stopped{ExitCode: code, Killed: true, Took: time.Since(begin)}, err
	}

	if err := signal(r.PID, sig); err != nil && !errors.Is(err, syscall.ESRCH) {
		return runtime.Stopped{}, fmt.Errorf("stop %s %s: %s: %w", r.Service, r.id(), sigName, err)
	}
	gone, code, err := rt.waitExit(ctx, r, grace)
	if err != nil {
		return runtime.Stopped{}, fmt.Errorf("stop %s %s: %w (%s sent %s ago; the process is still draining)",
			r.Service, r.id(), err, sigName, time.Since(begin).Round(time.Millisecond))
	}
	if gone {
		// What the service left in its process group (a wrapper script's server it did not
		// exec, which never got the signal) gets it now, and the rest of the grace.
		killed, err := rt.stopLeftovers(ctx, r, sig, grace, begin)
		st := runtime.Stopped{ExitCode: code, Killed: killed, Took: time.Since(begin)}
		if err != nil || !killed {
			return st, err
		}
		return st, fmt.Errorf("host %s: service %s %s (%s) exited on %s, but what it left in its process group (a server a wrapper script "+
			"started without exec?) did not exit within the stop grace %s of the same signal and was SIGKILLed: %w",
			r.Host, r.Service, r.Version, r.id(), sigName, grace, runtime.ErrKilled)
	}
	code, err = rt.kill(ctx, r)
	st := runtime.Stopped{ExitCode: code, Killed: true, Took: time.Since(begin)}
	if err != nil {
		return st, err
	}
	return st, fmt.Errorf("host %s: service %s %s (%s) did not exit within the stop grace %s after %s and was SIGKILLed: %w",
		r.Host, r.Service, r.Version, r.id(), grace, sigName, runtime.ErrKilled)
}

// stopLeftovers stops what r's exited leader left in its process group: sig, what is left of
// grace since begin, then SIGKILL (at once with grace 0), and waits until none of it is left, so
// Remove may forget the instance. killed reports that a live leftover had to be SIGKILLed. If
// ctx ends first, it returns ctx's error and the leftovers keep draining.
func (rt *Runtime) stopLeftovers(ctx context.Context, r record, sig syscall.Signal, grace time.Duration, begin time.Time) (bool, error) {
	killed := false
	if groupLives(r.PID) {
		if grace > 0 {
			_ = signalGroup(r.PID, sig)
			killed = !rt.waitGroup(ctx, r.PID, grace-time.Since(begin))
			if err := ctx.Err(); killed && err != nil {
				return false, fmt.Errorf("stop %s %s: %w (what it left in its process group %d got the stop signal and is still draining)",
					r.Service, r.id(), err, r.PID)
			}
		} else {
			killed = true
		}
	}
	_ = killGroup(r.PID) // whatever is left (where groupLives cannot see: no /proc) goes with it
	if killed && !rt.waitGroup(context.WithoutCancel(ctx), r.PID, killWait) {
		return true, fmt.Errorf("stop %s %s: what it left in its process group %d is still there %s after SIGKILL (uninterruptible sleep?)",
			r.Service, r.id(), r.PID, killWait)
	}
	return killed, nil
}

// kill SIGKILLs r's process group and waits for the process to be gone; the exit code is 137.
func (rt *Runtime) kill(ctx context.Context, r record) (int, error) {
	if err := killGroup(r.PID); err != nil && !errors.Is(err, syscall.ESRCH) {
		return 0, fmt.Errorf("stop %s %s: SIGKILL: %w", r.Service, r.id(), err)
	}
	gone, code, err := rt.waitExit(ctx, r, killWait)
	if err != nil {
		return 0, fmt.Errorf("stop %s %s: %w after SIGKILL", r.Service, r.id(), err)
	}
	if !gone {
		return 0, fmt.Errorf("stop %s %s: still there %s after SIGKILL (uninterruptible sleep? check /proc/%d/stat)",
			r.Service, r.id(), killWait, r.PID)
	}
	if code == -1 {
		code = 128 + int(syscall.SIGKILL)
		rt.noteExit(r, code, time.Now())
	}
	return code, nil
}

// waitGroup waits up to d for no live process to be left in the group led by pid; false when
// one still is (or ctx ended).
func (rt *Runtime) waitGroup(ctx context.Context, pid int, d time.Duration) bool {
	limit := time.NewTimer(max(d, 0))
	defer limit.Stop()
	tick := time.NewTicker(pollEvery)
	defer tick.Stop()
	for groupLives(pid) {
		select {
		case <-tick.C:
		case <-limit.C:
			return !groupLives(pid)
		case <-ctx.Done():
			return false
		}
	}
	return true
}

// waitExit waits up to d for r's process to exit: on its done channel when it is our child, by
// polling /proc otherwise. It returns whether it exited and its exit code (-1 unknown).
func (rt *Runtime) waitExit(ctx context.Context, r record, d time.Duration) (bool, int, error) {
	limit := time.NewTimer(d)
	defer limit.Stop()
	rt.cmu.Lock()
	c := rt.children[r.PID]
	rt.cmu.Unlock()
	var reaped, noted chan struct{}
	if c != nil && c.start == r.ProcStart {
		reaped, noted = c.done, c.noted
	}
	tick := time.NewTicker(pollEvery)
	defer tick.Stop()
	for {
		if done, code := rt.exited(r); done {
			if noted != nil {
				<-noted // our child's record says "exited" before Stop returns
			}
			return true, code, nil
		}
		select {
		case <-reaped:
		case <-tick.C:
		case <-limit.C:
			done, code := rt.exited(r)
			if done && noted != nil {
				<-noted
			}
			return done, code, nil
		case <-ctx.Done():
			return false, 0, ctx.Err()
		}
	}
}
