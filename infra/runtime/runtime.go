// Package runtime defines what zero502 needs of a service runtime: start an instance of a
// service from its published spec, stop it with a grace period (its stop signal, SIGTERM unless
// services[].stop_signal says otherwise, which starts the drain handshake, then SIGKILL when the
// grace runs out), inspect and list instances by host, service
// and version, remove them. Two implementations live beside it: process (local processes that
// outlive the command that started them) and docker (the Docker Engine API). A process service's
// environment is ServiceEnv: a fixed base (BaseEnv) under its configured env, never the
// environment of whoever starts it; a container gets exactly its configured env (EnvList). Consumers (the
// deployer, the watchdog) define the narrower interfaces they need; Runtime here is the full set
// both implementations provide.
package runtime

import (
	"context"
	"errors"
	"time"

	"github.com/zero502/zero502/infra/spec"
)

// Instance is one running (or exited) instance of a service on a host.
type Instance struct {
	// ID is the runtime's handle: a process instance's "pid:<n>", a container's id.
	ID      string `json:"id"`
	Host    string `json:"host"`
	Service string `json:"service"`
	Version string `json:"version"`
	// Address is host:port where the instance answers; empty for a service without a port.
	Address string `json:"address,omitempty"`
	// State is StateRunning or StateExited.
	State string `json:"state"`
	// ExitCode is the exit code once exited (137 after a SIGKILL).
	ExitCode int `json:"exit_code"`
	// Health is the runtime's own health verdict where it has one (Docker HEALTHCHECK):
	// "healthy", "unhealthy", "starting", or "" when the runtime has none.
	Health    string    `json:"health,omitempty"`
	StartedAt time.Time `json:"started_at"`
	// StopSignal is the signal Stop sends first (the spec's stop_signal at Start); "" is SIGTERM.
	StopSignal string `json:"stop_signal,omitempty"`
	// Digest is the spec.Service.Digest the instance was started from; "" for an instance
	// started before runtimes recorded it.
	Digest string `json:"digest,omitempty"`
}

// Instance states.
const (
	StateRunning = "running"
	StateExited  = "exited"
)

// Running reports whether the instance is running.
func (i Instance) Running() bool { return i.State == StateRunning }

// Runs reports whether the instance is one of svc as the spec has it: its version, on its
// address (where both have one), started from its config (where the instance recorded one).
func (i Instance) Runs(svc spec.Service) bool {
	return i.Version == svc.Version &&
		(i.Address == "" || svc.Address == "" || i.Address == svc.Address) &&
		(i.Digest == "" || i.Digest == svc.Digest())
}

// Filter selects instances; an empty field matches everything.
type Filter struct {
	Host, Service, Version string
}

// Stopped is how a Stop ended.
type Stopped struct {
	// ExitCode is the instance's exit code.
	ExitCode int
	// Killed is true when the grace period ran out and the runtime had to SIGKILL (or the
	// kernel OOM-killed it): a violation of invariant I2, never hidden.
	Killed bool
	// Took is how long the stop took from the stop signal to exit.
	Took time.Duration
}

// ErrKilled is wrapped by Stop's error when the instance had to be killed: drain + shutdown did
// not fit in the stop grace (invariant I2).
var ErrKilled = errors.New("killed after the stop grace ran out (invariant I2: drain + shutdown must be < stop_grace)")

// ErrNotFound is wrapped when an instance id is unknown to the runtime.
var ErrNotFound = errors.New("no such instance")

// Runtime is the whole contract both implementations provide.
type Runtime interface {
	// Start creates and starts an instance of svc on host and returns once it runs (not once it
	// is healthy: health is the caller's business).
	Start(ctx context.Context, host string, svc spec.Service) (Instance, error)
	// Stop sends the instance's stop signal (SIGTERM unless the spec's stop_signal says
	// otherwise), waits up to grace for the exit, then SIGKILLs. grace 0 kills at once
	// (the naive deploy). A kill returns Stopped.Killed and an error wrapping ErrKilled, unless
	// grace was 0.
	Stop(ctx context.Context, inst Instance, grace time.Duration) (Stopped, error)
	// Inspect returns the instance's current state.
	Inspect(ctx context.Context, id string) (Instance, error)
	// List returns the instances that match f, running or exited.
	List(ctx context.Context, f Filter) ([]Instance, error)
	// Remove forgets an exited instance (removes the container, the process record).
	Remove(ctx context.Context, inst Instance) error
}
