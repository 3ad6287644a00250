// Package lb is zero502's own HTTP/1.1 load balancer: a reverse proxy whose forwarding path,
// message framing, header handling and timeouts are its own code on package net (net/http
// serves only the admin API, metrics and status page). It owns smooth weighted round robin over
// healthy backends (strict round robin at equal weights), active health checks with the drain
// state (a backend whose health answers 503 leaves rotation at once), passive ejection and safe
// retries (a request with a body is never replayed; a GET waiting on a backend that left
// rotation for failing is resent at once, resend.go), an upstream keep-alive pool, RFC 9112 §6.3
// smuggling defences, and the LB's own drain handshake on SIGTERM (docs/ARCHITECTURE.md, "The
// drain contract"). The admin API is documented in docs/lb.md ("Admin API").
//
// The event loops (loop_linux.go, one per CPU) are the fast path: they forward the common case
// themselves with non-blocking system calls, and an idle keep-alive client there costs about
// 0.5 KiB of RSS. The goroutine path (conn.go, proxy.go, relay.go) is the slow path for what
// they hand off: a large, slow or chunked request body, Expect: 100-continue, an Upgrade
// (WebSockets, tunnel.go), a close-delimited response, a new connection on a listener that
// accepts PROXY headers. Systems without epoll (macOS, Windows) serve everything on the slow
// path, where an idle keep-alive client keeps its goroutine but no read buffer (a zero-copy
// peek, awaitRequest); tests run every case through the slow path too
// (ZERO502_TEST_LB_ENGINE=goroutines). Request scratch memory comes from pools, so neither
// path allocates per request.
package lb

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/netip"
	"os"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/zero502/zero502/infra/adminapi"
	"github.com/zero502/zero502/infra/backoff"
	"github.com/zero502/zero502/infra/config"
	"github.com/zero502/zero502/infra/http1"
	"github.com/zero502/zero502/infra/standing"

	"github.com/zero502/zero502/infra/clock"
)

// Server is one running load balancer.
type Server struct {
	set       Settings
	clock     clock.Clock
	log       *slog.Logger
	access    *slog.Logger // nil unless Settings.AccessLog: one JSON line per request
	trim      func()       // WithMemoryTrim: shrinks the process after many connections went idle
	accessOut io.Writer

	proxyFrom []netip.Prefix // Settings.AcceptProxyFrom: connections are sniffed for a PROXY header
	// forwardedFrom is Settings.TrustedProxies: clients whose X-Forwarded-For is kept.
	forwardedFrom []netip.Prefix

	members *backendSet // the current backends (the admin API changes them)
	rot     *rotation
	check   *checker
	metrics *metrics

	retries    atomic.Uint64
	ejections  atomic.Uint64
	resent     atomic.Uint64 // requests resent after their backend left rotation (resend.go)
	overBudget atomic.Uint64 // resends the resend budget refused (budget.go)
	// localShortage counts attempts that found no connection for lack of the LB's own
	// descriptors, memory or ports (attemptLocal).
	localShortage atomic.Uint64
	budget        *resendBudget
	outages       atomic.Uint64 // every backend's outages: the event loops look when it moves

	tracked      atomic.Int64  // len(conns), readable without mu (max_conns)
	redirecting  atomic.Int64  // the TLS redirect listener's open connections (max_conns, tls.go)
	connsRefused atomic.Uint64 // connections closed at accept: max_conns reached
	proxyRefused atomic.Uint64 // connections closed over a PROXY header from an untrusted peer
	slow         *slowBodies   // max_slow_bodies_per_ip
	tunnels      tunnels       // upgraded connections (WebSockets)

	maint    maintenance // maintenance.go: every request answered 503 and a page while on
	draining atomic.Bool // own drain window: health 503, responses carry Connection: close
	// handedOff: this drain follows a hand-off of the listeners to an upgrade (WithHandoff), whose
	// process serves the same address: own health stays 200 (drainingHealth).
	handedOff atomic.Bool
	handoff   func() bool
	// inherit is the admin state handed over by the process this one replaces (WithInherited);
	// gate holds the admin API's writes while this one hands its own over (handoff.go).
	inherit *adminapi.Handoff
	gate    adminapi.Gate
	// acceptStopped: the listeners take no new connection (stopAccepting): from the drain's
	// StopAccepting on, or at once after a hand-off (the successor accepts on the same sockets)
	acceptStopped atomic.Bool
	closing       atomic.Bool // the drain stopped accepting: idle client connections leave
	aborting      atomic.Bool // the shutdown budget ran out: every client connection is closed

	mu    sync.Mutex
	conns map[*clientConn]struct{} // client connections on the goroutine path

	ln      net.Listener
	adminLn net.Listener
	tls     *tlsFront // nil without balancer.tls
	loops   *loops    // the event loops; nil where there are none (slow path only)

	// listen opens the listeners (WithListen); nil is net.Listen
	listen func(network, addr string) (net.Listener, error)
}

// Option changes how New builds a Server.
type Option func(*Server)

// withClock makes the health checker wait on c (tests use clock.Fake).
func withClock(c clock.Clock) Option { return func(s *Server) { s.clock = c } }

// WithHandoff tells the LB, when its context ends, whether that is a hand-off of its listeners
// to an upgraded process (handedOff true: handoff.Upgrader.HandedOff) rather than a stop. Its
// drain then keeps its own health at 200: the process that shares the listening socket now
// serves the address, and a health check landing on this one must not take the address out.
// Its admin listener closes at once: the new process shares that socket too, and answers every
// admin request from then on (a change made here would be gone when this process exits).
func WithHandoff(handedOff func() bool) Option { return func(s *Server) { s.handoff = handedOff } }

// WithLogger sends the LB's logs (and access log) to l.
func WithLogger(l *slog.Logger) Option { return func(s *Server) { s.log = l } }

// WithListen opens the proxy and admin listeners with listen instead of net.Listen: the zero502
// lb command passes infra/handoff's, so an upgraded process serves on the sockets of the one it
// replaces.
func WithListen(listen func(network, addr string) (net.Listener, error)) Option {
	return func(s *Server) { s.listen = listen }
}

// WithSlowPathOnly serves every connection on the goroutine path, as on a system without the
// event loops: for tests, which run every case through both paths.
func WithSlowPathOnly() Option { return func(s *Server) { s.set.slowPathOnly = true } }

// WithMemoryTrim gives the goroutine path a way to shrink the process when many client
// connections appeared and went idle: Go shrinks goroutine stacks and frees released buffers
// only during garbage collections, which a forwarding path that allocates nothing never
// triggers (see trimStacks). The zero502 lb command passes forced collections; a library user
// decides for its own process (without it nothing is forced).
func WithMemoryTrim(trim func()) Option { return func(s *Server) { s.trim = trim } }

// WithAccessLogOutput sends the access log (JSON, when Settings.AccessLog) to w instead of stderr.
func WithAccessLogOutput(w io.Writer) Option { return func(s *Server) { s.accessOut = w } }

// New validates set and builds the LB; nothing listens until Listen.
func New(set Settings, opts ...Option) (*Server, error) {
	if err := set.Validate(); err != nil {
		return nil, err
	}
	s := &Server{set: set, clock: clock.Real{}, log: slog.Default(), accessOut: os.Stderr, conns: map[*clientConn]struct{}{},
		budget: newResendBudget(resendWindow, resendShare, resendFloor)}
	for _, o := range opts {
		o(s)
	}
	if set.AccessLog {
		s.access = slog.New(slog.NewJSONHandler(s.accessOut, nil))
	}
	s.proxyFrom, _ = config.ParseRanges("--accept-proxy-from", set.AcceptProxyFrom) // Validate checked them
	s.forwardedFrom, _ = config.ParseRanges("--trusted-proxy", set.TrustedProxies)
	now := s.clock.Now()
	var all []*Backend
	for i, a := range s.inherit.Targets(set.Backends) {
		b := newConfiguredBackend(a, i, now)
		b.pool.max = set.MaxIdlePerBackend
		all = append(all, b)
	}
	s.members = newBackendSet(all)
	s.rot = newRotation(all)
	s.slow = newSlowBodies(set.MaxSlowBodiesPerIP)
	s.metrics = newMetrics(s)
	s.check = &checker{
		clock: s.clock, path: set.HealthPath, every: set.Interval, timeout: set.Timeout,
		th:      standing.Thresholds{Unhealthy: set.UnhealthyThreshold, Healthy: set.HealthyThreshold},
		probe:   httpProbe(set.HealthPath, set.Timeout),
		changed: s.changed,
	}
	s.applyInherited()
	return s, nil
}

// Backends are the LB's current backends: the configured ones in order, then those the admin
// API added. The slice is a snapshot; do not modify it.
func (s *Server) Backends() []*Backend { return s.members.all() }

// Listen opens the proxy listener, the admin listener when configured, and the event loops;
// Run starts serving on them.
func (s *Server) Listen() error {
	listen := s.listen
	if listen == nil {
		listen = net.Listen
	}
	ln, err := listen("tcp", s.set.Listen)
	if err != nil {
		return fmt.Errorf("listen on %s (--listen/PORT): %w", s.set.Listen, err)
	}
	s.ln = ln
	if s.set.Admin != "" {
		aln, err := listen("tcp", s.set.Admin)
		if err != nil {
			_ = ln.Close()
			return fmt.Errorf("admin listener on %s (--admin): %w", s.set.Admin, err)
		}
		s.adminLn = aln
	}
	if err := s.listenTLS(listen); err != nil {
		_ = ln.Close()
		if s.adminLn != nil {
			_ = s.adminLn.Close()
		}
		return err
	}
	if !s.set.slowPathOnly && EventLoopsAvailable {
		if s.loops, err = s.newLoops(); err == nil {
			return nil
		}
		s.log.Warn("the event loops did not start; every connection is served on the goroutine path", "err", err)
	}
	return nil
}

// Addr is the proxy listener's address (after Listen).
func (s *Server) Addr() string { return s.ln.Addr().String() }

// AdminAddr is the admin listener's address, or "" when there is none.
func (s *Server) AdminAddr() string {
	if s.adminLn == nil {
		return ""
	}
	return s.adminLn.Addr().String()
}

// Run serves until ctx ends (Listen first, or Run listens itself), then performs the drain
// handshake: own health 503 for the drain window while still proxying, stop accepting, let
// in-flight requests finish within the shutdown budget. It returns nil after a clean drain.
func (s *Server) Run(ctx context.Context) error {
	if s.ln == nil {
		if err := s.Listen(); err != nil {
			return err
		}
	}
	s.firstChecks(ctx) // before the first connection is accepted
	checks, stopChecks := context.WithCancel(context.Background())
	defer stopChecks()
	s.startChecks(checks)
	go s.reapIdle(checks)
	acceptErr := make(chan error, 1)
	if s.loops != nil {
		s.loops.start(checks)
		defer func() {
			stopChecks()
			s.loops.wait() // every loop closed its connections
		}()
	} else {
		if s.trim != nil {
			go s.trimStacks(checks, time.Second, 500)
		}
	}
	var admin *adminServer
	if s.adminLn != nil {
		admin = s.serveAdmin(s.adminLn)
	}
	s.runTLS(checks, acceptErr)
	s.log.Info("lb listening", "listen", s.Addr(), "admin", s.AdminAddr(), "tls", s.TLSAddr(), "backends", s.set.Backends,
		"interval", s.set.Interval.String(), "timeout", s.set.Timeout.String(), "event_loops", s.loopCount(), "io_uring", s.loopsRing())
	if s.loops == nil || s.proxyFrom != nil {
		// the goroutine path accepts: every connection, or (sniffing for PROXY headers) every new
		// one, which goes to an event loop once it is idle
		go func() { acceptErr <- s.accept() }()
	}
	select {
	case <-ctx.Done():
	case err := <-acceptErr:
		return fmt.Errorf("accept on %s: %w", s.Addr(), err)
	}
	if admin != nil && s.handoff != nil && s.handoff() {
		// the upgraded process shares the admin socket: from now on it answers every admin
		// request (a write here would be lost when this process exits)
		admin.close()
		admin = nil
	}
	err := s.drain()
	if admin != nil {
		admin.close()
	}
	return err
}

// accept serves the proxy listener's connections.
func (s *Server) accept() error {
	return s.acceptFrom(s.ln, func(c net.Conn) {
		cc := newClientConn(c.(*net.TCPConn))
		if !s.track(cc) {
			_ = c.Close()
			return
		}
		if s.proxyFrom != nil {
			go s.serveProxied(cc)
			return
		}
		go s.serveConn(cc, false)
	})
}

// acceptFrom accepts on ln until it closes, pausing on transient errors and closing what
// comes over the connection cap, and hands every other connection to serve.
func (s *Server) acceptFrom(ln net.Listener, serve func(net.Conn)) error {
	var pause backoff.AcceptPause
	for {
		c, err := ln.Accept()
		if err != nil {
			if s.acceptStopped.Load() {
				return nil
			}
			var ne net.Error
			if errors.As(err, &ne) && ne.Timeout() || errors.Is(err, syscall.EMFILE) || errors.Is(err, syscall.ENFILE) {
				delay := pause.Next()
				s.log.Warn("accept failed, retrying", "err", err, "in", delay.String())
				time.Sleep(delay)
				continue
			}
			return err
		}
		pause.Reset()
		if s.atConnCap() {
			_ = c.Close()
			continue
		}
		serve(c)
	}
}

func (s *Server) track(cc *clientConn) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.aborting.Load() {
		return false
	}
	s.conns[cc] = struct{}{}
	s.tracked.Store(int64(len(s.conns)))
	return true
}

func (s *Server) forget(cc *clientConn) {
	s.mu.Lock()
	delete(s.conns, cc)
	s.tracked.Store(int64(len(s.conns)))
	s.mu.Unlock()
}

// changed reacts to a backend state transition (health checks, passive ejection, the admin
// API): log it, count it, rebuild the rotation and, when the backend left rotation, close its
// idle pooled connections (in-flight ones finish, but when it left for failing, an outage,
// those that may be are resent: resend.go).
func (s *Server) changed(b *Backend, t Transition) {
	failed := standing.Outage(t)
	if failed {
		s.outage(b)
	}
	was := s.rot.failingOpen()
	s.rot.rebuild()
	if t.To != Healthy {
		b.pool.evict(time.Time{}, 0)
	}
	if s.loops != nil {
		s.loops.wakeAll() // the loops close their idle connections to it and resend what waits on it
	}
	if failed {
		b.cutWaits()
	}
	s.metrics.transition(b, t)
	s.log.Info("backend transition", "backend", b.Address, "from", string(t.From), "to", string(t.To), "reason", t.Reason)
	sn := s.rot.cur.Load()
	switch now := sn.failOpen && len(sn.list) > 0; {
	case now && !was:
		s.log.Warn("no backend is healthy: failing open to the backends that left rotation by failed checks", "backends", len(sn.list))
	case was && !now && !sn.failOpen:
		s.log.Info("a backend is healthy again: no longer failing open", "in_rotation", len(sn.list))
	case was && !now:
		s.log.Warn("no backend is healthy and none fails open: requests get 503")
	}
}

// reapIdle closes pooled upstream connections once they reach idle_timeout, so the LB, not the
// backend, ends them (invariant I7).
func (s *Server) reapIdle(ctx context.Context) {
	every := max(s.set.IdleTimeout/4, 50*time.Millisecond)
	t := time.NewTicker(every)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			for _, b := range s.members.all() {
				b.pool.evict(time.Time{}, 0)
			}
			return
		case <-t.C:
			now := s.clock.Now()
			for _, b := range s.members.all() {
				b.pool.evict(now, s.set.IdleTimeout)
			}
		}
	}
}

func (s *Server) logAccess(ip []byte, req *http1.Request, status int, b *Backend, start time.Time) {
	if s.access == nil {
		return
	}
	backend := ""
	if b != nil {
		backend = b.Address
	}
	s.access.Info("access", "client", string(ip), "method", string(req.Method()), "target", string(req.Target()),
		"status", status, "backend", backend, "duration_ms", float64(time.Since(start).Microseconds())/1000)
}
