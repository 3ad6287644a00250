package handoff

import (
	"context"
	"errors"
	"fmt"
	"os"
	"runtime"
	"syscall"
	"time"

	"github.com/zero502/zero502/infra/clock"
)

// errFailed is wrapped by Request.Do when the new process did not become ready: the old one
// keeps serving.
var errFailed = errors.New("upgrade failed")

// pollEvery is how often Request reads the attempt file while it waits.
const pollEvery = 50 * time.Millisecond

// Request asks the server named by a pid file to upgrade, and waits for the outcome.
type Request struct {
	// PIDFile is the server's pid file (its --pid-file).
	PIDFile string
	// Timeout bounds the wait for the outcome; it should exceed the server's upgrade timeout
	// (DefaultTimeout) so the server's own verdict arrives first.
	Timeout time.Duration
	// Clock paces the wait; nil is the wall clock.
	Clock clock.Clock
}

// Outcome is a finished upgrade.
type Outcome struct {
	OldPID, NewPID int
	Seq            int
	Took           time.Duration
}

// Do sends SIGHUP to the process in the pid file (one that started after the file was written
// is refused: a reused pid) and waits until its attempt file records that
// the new process is ready (the old one now drains) or failed (errFailed, with the reason; the
// old one keeps serving). An attempt already under way (another request's) is this request's
// too once it succeeds: the server starts no second one.
func (r Request) Do(ctx context.Context) (Outcome, error) {
	clk := r.Clock
	if clk == nil {
		clk = clock.Real{}
	}
	if runtime.GOOS == "windows" {
		return Outcome{}, errors.New("upgrade is not supported on Windows: listening sockets cannot be handed to a new process there; restart the server instead")
	}
	if r.Timeout <= 0 {
		return Outcome{}, fmt.Errorf("timeout %s: must be positive (longer than the server's upgrade timeout, %s by default)", r.Timeout, DefaultTimeout)
	}
	pid, err := ReadPID(r.PIDFile)
	if err != nil {
		return Outcome{}, err
	}
	proc, err := os.FindProcess(pid)
	if err == nil {
		err = proc.Signal(syscall.Signal(0))
	}
	if errors.Is(err, syscall.EPERM) {
		// It runs, as a user this one may not signal (root's server, another user's).
		return Outcome{}, fmt.Errorf("pid %d (from %s) runs as a user this one may not signal (%w); nothing was signalled: "+
			"ask for the upgrade as the server's user or root", pid, r.PIDFile, err)
	}
	if err != nil {
		return Outcome{}, fmt.Errorf("pid %d (from %s) is not running (%w); start the server, or remove the stale pid file", pid, r.PIDFile, err)
	}
	// A process that started after the pid file was written is not the server that wrote it:
	// that one is gone (killed before it could remove the file) and its pid was reused.
	if fi, err := os.Stat(r.PIDFile); err == nil {
		if at, err := startedAt(pid); err == nil && at.After(fi.ModTime().Add(2*time.Second)) {
			return Outcome{}, fmt.Errorf("pid %d (from %s) started at %s, after the pid file was written (%s): the server that wrote "+
				"it is gone and its pid was reused; nothing was signalled: start the server, or remove the stale pid file",
				pid, r.PIDFile, at.Format(time.RFC3339), fi.ModTime().Format(time.RFC3339))
		}
	}
	path := attemptPath(r.PIDFile)
	before, err := readAttempt(path)
	if err != nil {
		return Outcome{}, err
	}
	// An attempt of this server under way (another request's) answers this one too: once it
	// succeeds the server hands over and starts no other, so its outcome is this request's;
	// once it fails, this request's SIGHUP starts the next attempt, whose outcome is.
	underway := before.PID == pid && before.State == Starting
	ours := func(a Attempt) bool {
		return a.PID == pid && (a.Seq > before.Seq || underway && a.Seq == before.Seq && a.State == Ready)
	}
	start := clk.Now()
	if err := proc.Signal(syscall.SIGHUP); err != nil {
		return Outcome{}, fmt.Errorf("send SIGHUP to pid %d (from %s): %w", pid, r.PIDFile, err)
	}
	deadline := clk.After(r.Timeout)
	for {
		a, err := readAttempt(path)
		if err != nil {
			return Outcome{}, err
		}
		if ours(a) && a.Final() {
			out := Outcome{OldPID: pid, NewPID: a.NewPID, Seq: a.Seq, Took: clk.Now().Sub(start)}
			if a.State == Failed {
				return out, fmt.Errorf("%w: pid %d keeps serving: %s", errFailed, pid, a.Reason)
			}
			return out, nil
		}
		if proc.Signal(syscall.Signal(0)) != nil {
			if a, err := readAttempt(path); err == nil && ours(a) && a.State == Ready {
				return Outcome{OldPID: pid, NewPID: a.NewPID, Seq: a.Seq, Took: clk.Now().Sub(start)}, nil
			}
			return Outcome{OldPID: pid}, fmt.Errorf("%w: pid %d exited during the upgrade without recording an outcome; see its log", errFailed, pid)
		}
		select {
		case <-ctx.Done():
			return Outcome{OldPID: pid}, ctx.Err()
		case <-deadline:
			return Outcome{OldPID: pid}, fmt.Errorf("%w: no outcome recorded in %s within %s (last state %q); see the server's log",
				errFailed, path, r.Timeout, a.State)
		case <-clk.After(pollEvery):
		}
	}
}
