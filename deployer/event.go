package deployer

import "time"

// Steps of a deploy, as they appear in events.
const (
	stepPreflight    = "preflight"     // a preflight check passed (or a drift was accepted)
	stepRefused      = "refused"       // preflight refused the deploy; nothing was touched
	stepLockWait     = "lock-wait"     // the host lock is held by someone else; waiting
	StepLocked       = "locked"        // the host lock is ours
	StepPublish      = "publish"       // the host's new spec is published
	stepPull         = "pull"          // an image is being pulled (said every few seconds while it goes on)
	StepDrain        = "drain"         // SIGTERM sent: the drain handshake started
	stepLeftRotation = "left-rotation" // the balancer took the target out of rotation
	stepStopped      = "stopped"       // the old instance exited
	stepStart        = "start"         // the new instance runs
	stepHealthy      = "healthy"       // the new instance answers its health check directly
	stepSmoke        = "smoke"         // the new instance answered its smoke requests (services[].smoke)
	stepInRotation   = "in-rotation"   // the balancer put the target back in rotation
	stepStable       = "stable"        // every new instance stayed up for its stability window
	stepVerified     = "verified"      // every service on the host runs the right version
	StepCanary       = "canary"        // the first hosts are the canary (rollout.canary)
	stepPaused       = "paused"        // the deploy waits after its canary for promote or abort
	stepAnalysis     = "analysis"      // a batch is being judged by what users get (rollout.analysis)
	stepVerdict      = "verdict"       // the analysis passed, with its numbers
	stepUnchanged    = "unchanged"     // the host already ran the version, healthy: verified only
	stepRollback     = "rollback"      // the host is being rolled back to its previous spec
	stepRolledBack   = "rolled-back"   // the host runs its previous version again
	stepFailed       = "failed"        // the host (or the rollout) failed
	StepStalled      = "stalled"       // the host's step reported nothing for rollout.progress_deadline: told to stop
	stepDone         = "done"          // the host is finished; the lock is released
)

// Event is one step of a deploy, for live progress and for CI (one JSON object per line).
type Event struct {
	Time time.Time `json:"time"`
	Host string    `json:"host,omitempty"`
	// Service is set for steps of one service.
	Service string `json:"service,omitempty"`
	Step    string `json:"step"`
	// ElapsedMS is the time since the deploy started.
	ElapsedMS int64  `json:"elapsed_ms"`
	Message   string `json:"message,omitempty"`
	// Version is the version the step concerns (the new one, or the one rolled back to).
	Version string `json:"version,omitempty"`
}

// Elapsed is ElapsedMS as a duration.
func (e Event) Elapsed() time.Duration { return time.Duration(e.ElapsedMS) * time.Millisecond }

// emit stamps e and hands it to the Events callback, one at a time.
func (d *Deployer) emit(e Event) {
	d.progressed(e)
	d.noteInRotation(e)
	if d.opts.Events == nil {
		return
	}
	e.Time = d.clock.Now()
	e.ElapsedMS = e.Time.Sub(d.started).Milliseconds()
	d.emitMu.Lock()
	defer d.emitMu.Unlock()
	d.opts.Events(e)
}
