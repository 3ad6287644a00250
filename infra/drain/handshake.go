// Package drain implements the drain handshake for zero502's own servers: after SIGTERM (a
// cancelled context) a server keeps serving real traffic and keeps accepting new connections
// while its health endpoint answers 503, long enough (the drain window) for the balancer to take
// it out of rotation; only then does it stop accepting, and it finishes in-flight work within the
// shutdown budget. Serve and ServeServer do this for an http.Server, ServeTCP for a plain
// net.Listener server (the edge forwarder). Time is injected (infra/clock) so a 15 s window is
// tested in milliseconds. See docs/ARCHITECTURE.md, "The drain contract", for the timeline.
package drain

import (
	"fmt"
	"log/slog"
	"time"

	"github.com/zero502/zero502/infra/clock"
)

// defaultHealthPath is the health path when Handshake.HealthPath is empty.
const defaultHealthPath = "/health"

// Handshake holds the numbers and hooks of one server's drain.
type Handshake struct {
	// Window is how long the server keeps serving (and accepting) after the drain starts, with
	// its health answering 503: longer than the balancer needs to notice (invariant I1).
	Window time.Duration
	// Shutdown is the budget for in-flight work once the server stopped accepting; what is still
	// open after it is closed. Window + Shutdown must fit in the stop grace (invariant I2).
	Shutdown time.Duration
	// HealthPath answers 503 during the drain (HTTP variants only); default /health.
	HealthPath string
	// Clock drives the window and the budget; default clock.Real{}.
	Clock clock.Clock
	// Logger gets one line per phase; nil logs nothing.
	Logger *slog.Logger
	// OnPhase, when set, is called as each phase begins (PhaseDraining first, synchronously,
	// before the window starts: the place for a server to start reporting itself unhealthy).
	OnPhase func(p Phase, at time.Time)
}

// Phase is a step of the handshake.
type Phase string

// The phases, in order.
const (
	// PhaseDraining: the drain started; health answers 503, everything else is served.
	PhaseDraining Phase = "draining"
	// PhaseStoppedAccepting: the window ended; the listener is closed, in-flight work finishes.
	PhaseStoppedAccepting Phase = "stopped_accepting"
	// PhaseDone: every connection is finished or was closed at the end of the shutdown budget.
	PhaseDone Phase = "done"
)

// timeline is when each phase began; cut counts connections still open when the shutdown budget
// ran out (closed by force).
type timeline struct {
	drainStarted     time.Time
	stoppedAccepting time.Time
	done             time.Time
	cut              int
}

// prepare fills defaults and checks the numbers before anything is served.
func (hs Handshake) prepare() (Handshake, error) {
	if hs.Window < 0 {
		return hs, fmt.Errorf("drain window %s is negative; use 0 or more (it must outlast the balancer's detection, invariant I1)", hs.Window)
	}
	if hs.Shutdown < 0 {
		return hs, fmt.Errorf("drain shutdown %s is negative; use 0 or more", hs.Shutdown)
	}
	if hs.HealthPath == "" {
		hs.HealthPath = defaultHealthPath
	}
	if hs.HealthPath[0] != '/' {
		return hs, fmt.Errorf("drain health path %q must start with /", hs.HealthPath)
	}
	if hs.Clock == nil {
		hs.Clock = clock.Real{}
	}
	return hs, nil
}

// enter records phase p at the clock's now, logs it and calls OnPhase.
func (hs Handshake) enter(tl *timeline, p Phase, addr string) {
	now := hs.Clock.Now()
	switch p {
	case PhaseDraining:
		tl.drainStarted = now
		hs.log("drain started: health answers 503, still serving and accepting",
			"phase", p, "addr", addr, "window", hs.Window.String(), "health_path", hs.HealthPath)
	case PhaseStoppedAccepting:
		tl.stoppedAccepting = now
		hs.log("drain window over: stopped accepting, finishing in-flight",
			"phase", p, "addr", addr, "after", now.Sub(tl.drainStarted).String(), "shutdown", hs.Shutdown.String())
	case PhaseDone:
		tl.done = now
		hs.log("drain done", "phase", p, "addr", addr,
			"took", now.Sub(tl.drainStarted).String(),
			"in_flight_for", now.Sub(tl.stoppedAccepting).String(), "cut", tl.cut)
	}
	if hs.OnPhase != nil {
		hs.OnPhase(p, now)
	}
}

func (hs Handshake) log(msg string, args ...any) {
	if hs.Logger != nil {
		hs.Logger.Info(msg, args...)
	}
}
