// Package app is the service `zero502 app` runs: the demo's deployable unit and a worked example
// of the drain contract for users' own services. It answers / with its version, /health (503
// while draining, or when told to be unhealthy for the failure tests), POST /orders (each
// Idempotency-Key recorded in an append-only log so a duplicate execution is detectable across
// processes), GET /orders and /slow?ms=N, and on context cancel (SIGTERM) it runs the drain
// handshake of infra/drain. Its keep-alive idle timeout is a flag because invariant I7 ties it to
// the balancer's.
package app

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"os"
	"strconv"
	"strings"
	"sync/atomic"
	"syscall"
	"time"
	"unicode"

	"github.com/zero502/zero502/infra/clock"
	"github.com/zero502/zero502/infra/drain"
)

// Options configure one app process; the flags of `zero502 app` map onto them one to one.
type Options struct {
	// Version is what / answers and X-Version carries.
	Version string
	// Host and Port are where Run listens; Port 0 picks a free port (tests).
	Host string
	Port int
	// Drain is the drain window, Shutdown the in-flight budget after it (docs/ARCHITECTURE.md,
	// "The drain contract").
	Drain    time.Duration
	Shutdown time.Duration
	// IdleTimeout is how long an idle keep-alive connection stays open; it must exceed the
	// balancer's idle timeout (invariant I7).
	IdleTimeout time.Duration
	// StartUnhealthy makes /health answer 503 from the start (a version that never gets healthy).
	StartUnhealthy bool
	// FailHealthAfter > 0 makes /health answer 503 from that long after start on.
	FailHealthAfter time.Duration
	// ExitAfter > 0 makes Serve fail with ErrExitAfter that long after start (a gateway that dies
	// right after start); the command exits 1.
	ExitAfter time.Duration
	// OrdersLog is the file POST /orders appends one JSON line to; "" records in memory only.
	OrdersLog string
	// FailEvery > 0 makes every FailEvery-th request but /health answer 500 (1: every one), while
	// /health keeps answering 200: a bad version only what users get can tell.
	FailEvery int
	// FailFor > 0 makes every request but /health answer 500 for that long after start, while
	// /health answers 200: a version that fails while it warms up (a cold cache, a migration).
	FailFor time.Duration
	// Delay is added before every answer but /health's: a slow version.
	Delay time.Duration
	// Clock defaults to clock.Real{}; Logger to a JSON logger on stderr.
	Clock  clock.Clock
	Logger *slog.Logger
}

// Defaults of the flags (the source's numbers: drain 15 s, keep-alive 75 s).
const (
	DefaultHost        = "127.0.0.1"
	DefaultDrain       = 15 * time.Second
	DefaultShutdown    = 10 * time.Second
	DefaultIdleTimeout = 75 * time.Second
)

// ErrExitAfter is returned by Serve and Run when Options.ExitAfter ran out.
var ErrExitAfter = errors.New("exiting as told by --exit-after")

// App is one app process's state: its options, health and orders.
type App struct {
	opts     Options
	served   atomic.Uint64 // requests but /health, for FailEvery
	started  time.Time
	orders   *orderBook
	sessions sessions
}

// New checks opts and opens the orders log; Close releases it.
func New(opts Options) (*App, error) {
	if opts.Host == "" {
		opts.Host = DefaultHost
	}
	if opts.Clock == nil {
		opts.Clock = clock.Real{}
	}
	if opts.Logger == nil {
		opts.Logger = slog.New(slog.NewJSONHandler(os.Stderr, nil))
	}
	if err := opts.Validate(); err != nil {
		return nil, err
	}
	book, err := openOrderBook(opts.OrdersLog)
	if err != nil {
		return nil, err
	}
	return &App{opts: opts, started: opts.Clock.Now(), orders: book}, nil
}

// Validate says what is wrong with o, naming the flag, its value and the rule (New checks it).
func (o Options) Validate() error {
	switch {
	case strings.TrimSpace(o.Version) == "" || strings.IndexFunc(o.Version, func(r rune) bool { return unicode.IsSpace(r) || unicode.IsControl(r) }) >= 0:
		return fmt.Errorf("app: --version %q must be a non-empty word without spaces or control characters (e.g. v1): X-Version carries it", o.Version)
	case o.Port < 0 || o.Port > 65535:
		return fmt.Errorf("app: --port %d is out of range; use 1-65535", o.Port)
	case o.Drain < 0:
		return fmt.Errorf("app: --drain %s is negative; use the balancer's detection time plus margin (invariant I1)", o.Drain)
	case o.Shutdown < 0:
		return fmt.Errorf("app: --shutdown %s is negative; use 0 or more", o.Shutdown)
	case o.IdleTimeout <= 0:
		return fmt.Errorf("app: --idle-timeout %s must be positive and above the balancer's idle timeout (invariant I7)", o.IdleTimeout)
	case o.FailEvery < 0:
		return fmt.Errorf("app: --fail-every %d is negative; use 0 (never), 1 (every request) or N (every Nth)", o.FailEvery)
	case o.Delay < 0:
		return fmt.Errorf("app: --delay %s is negative; use 0 or more", o.Delay)
	case o.FailFor < 0:
		return fmt.Errorf("app: --fail-for %s is negative; use 0 (never) or more", o.FailFor)
	case o.FailHealthAfter < 0:
		return fmt.Errorf("app: --fail-health-after %s is negative; use 0 (never) or more", o.FailHealthAfter)
	case o.ExitAfter < 0:
		return fmt.Errorf("app: --exit-after %s is negative; use 0 (never) or more", o.ExitAfter)
	}
	return nil
}

// Close closes the orders log.
func (a *App) Close() error { return a.orders.close() }

// Run listens on opts.Host:opts.Port and serves until ctx is cancelled, then drains; it returns
// nil after a clean drain, ErrExitAfter (wrapped) when told to die, or the error that stopped it.
func Run(ctx context.Context, opts Options) error {
	a, err := New(opts)
	if err != nil {
		return err
	}
	defer a.Close()
	addr := net.JoinHostPort(a.opts.Host, strconv.Itoa(a.opts.Port))
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		var dnsErr *net.DNSError
		switch {
		case errors.Is(err, syscall.EADDRINUSE):
			return fmt.Errorf("app: listen on %s: %w (is another instance on --port %d?)", addr, err, a.opts.Port)
		case errors.Is(err, syscall.EADDRNOTAVAIL) || errors.As(err, &dnsErr):
			return fmt.Errorf("app: listen on %s: %w (--host %q must be an address of this machine)", addr, err, a.opts.Host)
		}
		return fmt.Errorf("app: listen on %s: %w", addr, err)
	}
	return a.Serve(ctx, ln)
}

// Serve serves on ln until ctx is cancelled and the drain handshake is done (nil), or until
// ExitAfter runs out (ErrExitAfter, connections dropped), or the listener fails.
func (a *App) Serve(ctx context.Context, ln net.Listener) error {
	addr := ln.Addr().String()
	log := a.opts.Logger
	srv := &http.Server{
		Handler:           a.Handler(addr),
		IdleTimeout:       a.opts.IdleTimeout,
		ReadHeaderTimeout: 10 * time.Second,
		ErrorLog:          slog.NewLogLogger(log.Handler(), slog.LevelWarn),
	}
	// The WebSocket sessions get their close frame (1001) within the shutdown budget: the
	// server's Shutdown does not wait for hijacked connections, so Serve does.
	sessionsDue, sessionsEnded := make(chan time.Time, 1), make(chan struct{})
	hs := drain.Handshake{
		Window:   a.opts.Drain,
		Shutdown: a.opts.Shutdown,
		Clock:    a.opts.Clock,
		Logger:   log.With("version", a.opts.Version),
		OnPhase: func(p drain.Phase, at time.Time) {
			if p == drain.PhaseStoppedAccepting {
				sessionsDue <- at.Add(a.opts.Shutdown)
				go func() { a.sessions.end(); close(sessionsEnded) }()
			}
		},
	}
	log.Info("app started", "version", a.opts.Version, "port", portOf(addr), "addr", addr,
		"pid", os.Getpid(), "drain", a.opts.Drain.String(), "shutdown", a.opts.Shutdown.String(),
		"idle_timeout", a.opts.IdleTimeout.String(), "start_unhealthy", a.opts.StartUnhealthy,
		"fail_health_after", a.opts.FailHealthAfter.String(), "exit_after", a.opts.ExitAfter.String(),
		"orders_log", a.opts.OrdersLog)

	served := make(chan error, 1)
	go func() { served <- drain.ServeServer(ctx, srv, ln, hs) }()
	var exit <-chan time.Time
	if a.opts.ExitAfter > 0 {
		exit = a.opts.Clock.After(a.opts.ExitAfter)
	}
	select {
	case err := <-served:
		select {
		case due := <-sessionsDue:
			select {
			case <-sessionsEnded:
			case <-a.opts.Clock.After(due.Sub(a.opts.Clock.Now())):
				log.Warn("WebSocket sessions still closing at the end of the shutdown budget", "shutdown", a.opts.Shutdown.String())
			}
		default: // never stopped accepting (the listener failed)
		}
		return err
	case <-exit:
		log.Error("exiting without drain as told", "version", a.opts.Version, "exit_after", a.opts.ExitAfter.String())
		ln.Close()
		srv.Close()
		<-served
		return fmt.Errorf("app %s on %s: %w (%s after start)", a.opts.Version, addr, ErrExitAfter, a.opts.ExitAfter)
	}
}

// healthy reports the app's own health verdict (the drain's 503 comes on top of it).
func (a *App) healthy() bool {
	if a.opts.StartUnhealthy {
		return false
	}
	if a.opts.FailHealthAfter > 0 && a.opts.Clock.Now().Sub(a.started) >= a.opts.FailHealthAfter {
		return false
	}
	return true
}

func portOf(addr string) int {
	_, p, _ := net.SplitHostPort(addr)
	n, _ := strconv.Atoi(p)
	return n
}
