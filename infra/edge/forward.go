package edge

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/netip"
	"sync"
	"sync/atomic"
	"time"

	"github.com/zero502/zero502/infra/adminapi"
	"github.com/zero502/zero502/infra/clock"
	"github.com/zero502/zero502/infra/origin"
	"github.com/zero502/zero502/infra/standing"
)

// Forwarder is one edge: a TCP forwarder in front of the origin's upstreams (its LB instances)
// that prepends a PROXY protocol v2 header to every connection. It sees ciphertext and never
// parses the payload. It checks its upstreams and fails over between them (upstream.go).
//
// Set the fields, then Open (or let Serve open). Do not change them afterwards.
type Forwarder struct {
	// Listen is where clients connect (--listen), e.g. 0.0.0.0:443; port 0 picks a free port.
	Listen string
	// Origins are the upstreams connections go to (--origin, repeatable; config edge.origins),
	// host:port each, at least one: the origin, or its LB instances.
	Origins []string
	// Check is how the upstreams are checked.
	Check UpstreamCheck
	// Health, when set, is a TCP health listener (--health): it accepts and closes while the
	// edge forwards and an upstream is in rotation; it refuses connections while none is, and
	// once the drain starts, so a TCP check by the DNS health checker takes the edge out of the
	// A set.
	Health string
	// Metrics, when set, is an HTTP listener (--metrics) serving GET /metrics: the Counts, the
	// drain and each upstream's state and connections, in the Prometheus text format.
	Metrics string
	// Admin, when set, is the admin API's listener (--admin): GET, PUT, POST .../drain and
	// DELETE on /admin/upstreams (admin.go).
	Admin string
	// AdminToken is the admin API's bearer token, required when Admin is not on loopback.
	AdminToken string

	// ConnectTimeout bounds the dial to the origin and the write of the header; 0 means
	// DefaultConnectTimeout.
	ConnectTimeout time.Duration
	// IdleTimeout closes a connection on which nothing moved, in either direction, for this long
	// (silence, not total duration); 0 means DefaultIdleTimeout.
	IdleTimeout time.Duration
	// Drain is how long the edge keeps forwarding, and accepting, after ctx ends while it
	// reports draining: longer than it takes to leave the DNS A set (edge.drain, invariant I6).
	// After a hand-off (HandedOff) there is none.
	Drain time.Duration
	// Shutdown is how long open connections get to finish once the edge stopped accepting;
	// what is still open then is closed.
	Shutdown time.Duration

	// MaxConns is how many client connections are open at once at most (--max-conns); 0 means
	// DefaultMaxConns. One more is closed at once and counted (Counts.OverCap).
	MaxConns int

	// Loops is the number of event loops, the fast path on Linux; 0 is one per P (GOMAXPROCS).
	// The zero502 edge forward command sets it to the CPUs and gives the runtime one P more,
	// so a loop waiting in epoll_wait keeps its P (see cmd/zero502's reserveSpareP).
	Loops int

	// ListenFunc opens the listener, the health listener and the metrics listener; nil is
	// net.Listen. The zero502 edge forward command passes infra/handoff's, so an upgraded process
	// forwards on the sockets of the one it replaces.
	ListenFunc func(network, addr string) (net.Listener, error)

	// HandedOff, when set, says whether Serve's context ended because the listening sockets went
	// to an upgraded process (the command passes infra/handoff's Upgrader.HandedOff) rather than
	// for a stop. The edge then closes its admin and metrics listeners at once (the successor
	// shares their sockets) and stops accepting at once: the drain window is for leaving the A
	// set, which the address does not; open connections get Shutdown.
	HandedOff func() bool
	// Inherit, when set, is what the admin API changed in the process this one replaces
	// (ReadHandoff of the file its PrepareHandoff wrote): Open starts from the configured
	// Origins without the ones removed there, with the ones added there, and holds drained the
	// ones drained there.
	Inherit *adminapi.Handoff

	// Clock drives Drain and Shutdown; nil is the wall clock.
	Clock clock.Clock
	// Logger gets a line per non-empty connection, per unreachable origin and per drain phase;
	// nil logs nothing.
	Logger *slog.Logger

	// goroutines serves every connection on the goroutine path, as on systems without the event
	// loops: the tests' switch (ZERO502_TEST_EDGE_ENGINE=goroutines), never the user's.
	goroutines bool

	ln     net.Listener
	health *healthGate
	// gate orders the admin API's writes against PrepareHandoff: writes are refused from then on
	// until the upgrade attempt ends.
	gate     adminapi.Gate
	metrics  *metricsEndpoint
	admin    *adminEndpoint
	ups      *upstreams
	loops    atomic.Pointer[loops] // the event loops while they forward (nil on the goroutine path)
	draining atomic.Bool
	counts   counters
}

// Validate checks the addresses and durations; each error names the flag, the value and the
// rule.
func (f *Forwarder) Validate() error {
	errs := []error{
		checkListen("listen", f.Listen),
		checkOptionalListen("health", f.Health),
		checkOptionalListen("metrics", f.Metrics),
		checkOptionalListen("admin", f.Admin),
		f.Check.validate(),
	}
	if len(f.Origins) == 0 {
		errs = append(errs, errors.New("--origin: at least one upstream host:port is required (repeat --origin for several)"))
	}
	seen := map[string]bool{}
	for _, o := range f.Origins {
		if err := checkDial("origin", o); err != nil {
			errs = append(errs, err)
		} else if seen[o] {
			errs = append(errs, fmt.Errorf("--origin %q: given twice: each upstream once", o))
		}
		seen[o] = true
	}
	errs = append(errs, checkMaxConns(f.MaxConns))
	if f.Loops < 0 || f.Loops > 1024 {
		errs = append(errs, fmt.Errorf("--loops %d: must be from 0 (one per CPU) to 1024", f.Loops))
	}
	if f.Admin != "" && f.AdminToken == "" && !adminapi.Loopback(f.Admin) {
		errs = append(errs, fmt.Errorf("--admin %q: not on loopback, so the admin API needs a token: set --admin-token-file FILE or $ZERO502_EDGE_ADMIN_TOKEN, mode 0600", f.Admin))
	}
	return errors.Join(append(errs,
		checkDuration("connect-timeout", f.ConnectTimeout, fmt.Sprintf("the default, %s", DefaultConnectTimeout)),
		checkDuration("idle-timeout", f.IdleTimeout, fmt.Sprintf("the default, %s", DefaultIdleTimeout)),
		checkDuration("drain", f.Drain, "stop forwarding at once, which drops clients still resolving to this edge; it must outlast edge.dns_ttl + edge.check_interval × edge.unhealthy_threshold"),
		checkDuration("shutdown", f.Shutdown, "close open connections as soon as the drain window ends"),
	)...)
}

// Open validates the settings, opens the listeners (clients', and the health, metrics and
// admin ones when set) and checks every upstream once, all at the same time, each within the
// check timeout. A configured upstream is out of rotation until its first check: a good one puts
// it in at once, and the health listener, closed until then, opens with the first upstream in
// rotation. Connections that arrive meanwhile wait in the listener's backlog. The checks go on
// with Serve.
func (f *Forwarder) Open() error {
	if err := f.Validate(); err != nil {
		return err
	}
	now := clockOr(f.Clock).Now()
	f.ups = newUpstreams(f.Inherit.Targets(f.Origins), now)
	if f.Inherit != nil {
		for _, a := range f.Inherit.Drained {
			_, _, _, _ = f.ups.drain(a, now, f.Inherit.DrainerOf(a))
		}
		logger(f.Logger).Info("edge: admin state taken over from the process this one replaces",
			"added", f.Inherit.Added, "removed", f.Inherit.Removed, "drained", f.Inherit.Drained, "drained_by", f.Inherit.DrainedBy)
	}
	listen := f.ListenFunc
	if listen == nil {
		listen = func(_, addr string) (net.Listener, error) { return listenTCP(addr) }
	}
	ln, err := listen("tcp", f.Listen)
	if err != nil {
		return fmt.Errorf("edge: listen on %s (--listen): %w", f.Listen, err)
	}
	h, err := openHealth(f.Health)
	if err != nil {
		_ = ln.Close()
		return fmt.Errorf("edge: health listener on %s (--health): %w", f.Health, err)
	}
	m, err := openMetrics(listen, f.Metrics, "forward", f.Counts, f.Draining, upstreamsCollector{f.ups})
	if err != nil {
		_ = ln.Close()
		h.close()
		return err
	}
	a, err := openAdmin(listen, f.Admin, f.AdminToken, f)
	if err != nil {
		_ = ln.Close()
		h.close()
		m.close()
		return err
	}
	if h != nil {
		h.log = logger(f.Logger)
	}
	f.ln, f.health, f.metrics, f.admin = ln, h, m, a
	f.firstChecks()
	return nil
}

// firstChecks checks every upstream once, all at the same time, and places each by its verdict
// (standing.StartAwaitingFirstCheck): a good one puts it in rotation at once. Its checks under
// Serve start an interval later.
func (f *Forwarder) firstChecks() {
	var wg sync.WaitGroup
	for _, u := range f.ups.all() {
		u.checkedFirst = true
		wg.Go(func() {
			if t, ok := u.Record(f.Check.probe(context.Background(), u.addr), clockOr(f.Clock).Now(), f.Check.thresholds()); ok {
				f.changed(u, t)
			}
		})
	}
	wg.Wait()
}

func (f *Forwarder) adminString() string {
	if a := f.admin.addr(); a != nil {
		return a.String()
	}
	return ""
}

// AdminAddr is where the admin API listens (after Open); nil without Admin.
func (f *Forwarder) AdminAddr() net.Addr { return f.admin.addr() }

// MetricsAddr is where GET /metrics is served (after Open); nil without Metrics.
func (f *Forwarder) MetricsAddr() net.Addr { return f.metrics.addr() }

// Addr is the address clients connect to (after Open).
func (f *Forwarder) Addr() net.Addr { return f.ln.Addr() }

// Draining reports whether the drain has started: the edge still forwards, but it should be out
// of the A set (its health listener refuses connections).
func (f *Forwarder) Draining() bool { return f.draining.Load() }

// Counts says what the edge has seen: Accepted, Empty, Unreachable, LocalError and OverCap.
func (f *Forwarder) Counts() Counts { return f.counts.snapshot() }

// Serve forwards until ctx ends, then drains: it keeps forwarding and accepting for Drain while
// it reports draining (not after a hand-off: HandedOff), stops accepting, gives open connections
// Shutdown to finish and closes the rest. It returns nil after a clean drain, or an error when it
// cannot listen or the listener fails.
func (f *Forwarder) Serve(ctx context.Context) error {
	if f.ln == nil {
		if err := f.Open(); err != nil {
			return err
		}
	}
	log := logger(f.Logger)
	defer f.health.close()
	f.metrics.serve()
	defer f.metrics.close()
	f.admin.serve()
	defer f.admin.close()
	checks, stopChecks := context.WithCancel(context.WithoutCancel(ctx))
	defer stopChecks()
	f.ups.start(checks, f.watch)
	log.Info("edge forwarding", "listen", f.ln.Addr().String(), "origins", f.Origins, "health", f.healthString(),
		"admin", f.adminString(), "check_path", f.Check.Path, "check_interval", f.Check.interval().String(),
		"check_timeout", f.Check.timeout().String(), "healthy_threshold", f.Check.thresholds().Healthy,
		"unhealthy_threshold", f.Check.thresholds().Unhealthy,
		"drain", f.Drain.String(), "shutdown", f.Shutdown.String(),
		"idle_timeout", f.idleTimeout().String(), "connect_timeout", f.connectTimeout().String())
	err := f.serveConns(ctx, log)
	c := f.Counts()
	log.Info("edge stopped", "accepted", c.Accepted, "empty", c.Empty, "unreachable", c.Unreachable)
	return err
}

// serveConns forwards until ctx ends, then drains: on the event loops where they run (Linux,
// loop_linux.go), else with a goroutine per connection (serveDrained, forward).
func (f *Forwarder) serveConns(ctx context.Context, log *slog.Logger) error {
	onDraining := func() {
		f.draining.Store(true)
		f.health.close()
		if f.handedOff() {
			// the successor shares the admin and metrics sockets: every request goes to it now
			// (the deferred closes in Serve find them closed)
			log.Info("edge handed its listeners to the upgraded process: admin and metrics closed here, served by the new process")
			go f.admin.close()
			go f.metrics.close()
		}
	}
	if !f.goroutines {
		phases := &drainPhases{addr: f.ln.Addr().String(), drain: f.Drain, handedOff: f.handedOff, shutdown: f.Shutdown,
			clk: clockOr(f.Clock), log: log, who: "edge", onDraining: onDraining, done: make(chan struct{})}
		if served, err := f.serveLoops(ctx, phases); served {
			return err
		}
	}
	return serveDrained(ctx, f.ln, f.forward, maxConns(f.MaxConns), &f.counts.accepted, &f.counts.overCap, f.Drain, f.Shutdown, f.handedOff,
		clockOr(f.Clock), log, "edge", onDraining)
}

// forward relays one client connection to an upstream behind a PROXY v2 header. An upstream
// that cannot be reached (or refuses the header) is ejected and the next one is tried: nothing
// of the client's has been sent yet; so is the next one when the upstream is ejected while the
// connect to it is in progress (reconnect.go). A connect failed for the edge's own lack of
// resources ejects nothing and closes the client (dialFailed). It is the goroutine path; the
// event loops (Linux, loop_linux.go) take the same steps through the same policy functions below.
func (f *Forwarder) forward(client *pairedConn) {
	start := time.Now()
	measured := origin.AddrPort(client.RemoteAddr())
	var tried []*upstream
	for {
		u := f.nextUpstream(measured, tried)
		if u == nil {
			return
		}
		tried = append(tried, u)
		origin, first, err := f.connect(client, u, tried)
		if errors.Is(err, errAbandoned) {
			f.reconnecting(measured, u)
			continue
		}
		if errors.Is(err, errHeaderNotSent) {
			f.headerRefused(measured, u, err)
			return
		}
		if err != nil {
			if f.dialFailed(measured, u, err) {
				continue
			}
			return
		}
		if origin == nil {
			return // the client went away meanwhile
		}
		u.open.Add(1)
		fl := splice(client, origin, f.idleTimeout())
		fl.up += int64(first)
		f.relayed(measured, u, origin.LocalAddr(), fl, start)
		return
	}
}

// nextUpstream is the upstream a client connection goes to next (least connections, skipping
// those already tried); nil, counted and logged as unreachable, when none is left.
func (f *Forwarder) nextUpstream(measured netip.AddrPort, tried []*upstream) *upstream {
	u := f.ups.pick(tried)
	if u == nil {
		f.counts.unreachable.Add(1)
		logger(f.Logger).Warn("edge: no upstream reachable; client connection closed", "measured", origin.LogAddr(measured),
			"tried", len(tried), "in_rotation", f.ups.inRotation())
	}
	return u
}

// dialFailed logs a failed connect to u and ejects it; the caller tries the next upstream
// (tryNext). A failure of the edge's own (standing.LocalShortage) is not u's: u stays in rotation, and
// the client connection is counted as local_error, logged, and closed (not tryNext: another
// upstream would fail the same way).
func (f *Forwarder) dialFailed(measured netip.AddrPort, u *upstream, err error) (tryNext bool) {
	if standing.LocalShortage(err) {
		f.counts.localError.Add(1)
		logger(f.Logger).Warn("edge: cannot connect for lack of this host's own resources; upstream kept in rotation, client connection closed: "+
			"raise the descriptor limit (LimitNOFILE, ulimit -n) above twice --max-conns, or lower --max-conns",
			"measured", origin.LogAddr(measured), "origin", u.addr, "error", err.Error())
		return false
	}
	logger(f.Logger).Warn("edge: upstream unreachable; ejected, trying the next", "measured", origin.LogAddr(measured),
		"origin", u.addr, "error", err.Error())
	f.eject(u, err)
	return true
}

// headerRefused counts and logs an upstream that took the connection but not the header; the
// client connection is closed, not tried elsewhere (errHeaderNotSent).
func (f *Forwarder) headerRefused(measured netip.AddrPort, u *upstream, err error) {
	f.counts.unreachable.Add(1)
	logger(f.Logger).Warn("edge: upstream took the connection but not the PROXY header; client connection closed",
		"measured", origin.LogAddr(measured), "origin", u.addr, "error", err.Error())
}

// relayed ends a connection relayed to u (whose open count the caller raised when the relay
// began): it lowers the count, and counts an empty connection or logs its line. local is the
// edge's address on the upstream side.
func (f *Forwarder) relayed(measured netip.AddrPort, u *upstream, local net.Addr, fl flow, start time.Time) {
	u.open.Add(-1)
	if fl.up == 0 {
		f.counts.empty.Add(1)
		return
	}
	logger(f.Logger).Info("edge connection closed", "measured", origin.LogAddr(measured), "origin", u.addr,
		"local", local.String(), "up_bytes", fl.up, "down_bytes", fl.down,
		"duration", time.Since(start).String(), "end", fl.end())
}

// connect dials u and writes the PROXY v2 header (source: the client as this edge measured it;
// destination: the address the client dialled), with the client's first bytes when they have
// already arrived (first counts them). A nil conn without an error: the client closed meanwhile.
// The connection tried tried (u last); errAbandoned: u left rotation during the connect, which
// was abandoned for another upstream (reconnectAfterEject).
func (f *Forwarder) connect(client *pairedConn, u *upstream, tried []*upstream) (net.Conn, int, error) {
	ctx, attempt := u.connects.begin(tried)
	origin, err := dialTCP(ctx, u.addr, f.connectTimeout())
	if abandoned := u.connects.end(attempt); err != nil && abandoned {
		return nil, 0, errAbandoned
	}
	if err != nil {
		return nil, 0, fmt.Errorf("connect: %w", err)
	}
	header, err := proxyHeader(client.RemoteAddr(), client.LocalAddr())
	if err != nil {
		_ = origin.Close()
		return nil, 0, fmt.Errorf("%w: %w", errHeaderNotSent, err)
	}
	if !client.pair(origin) {
		return nil, 0, nil
	}
	first, err := sendHeader(client, origin, header, f.connectTimeout())
	if err != nil {
		_ = origin.Close()
		return nil, 0, fmt.Errorf("%w: %w", errHeaderNotSent, err)
	}
	return origin, first, nil
}

// errHeaderNotSent: the PROXY header (perhaps with the client's first bytes) could not be sent
// to an upstream that accepted the connection; the client's bytes may be gone with it, so the
// connection is not tried on another upstream.
var errHeaderNotSent = errors.New("send the PROXY header")

// eject takes u out of rotation after a failed connect (passive health).
func (f *Forwarder) eject(u *upstream, err error) {
	if t, ok := u.Eject(standing.UnwrapOp(errors.Unwrap(err)).Error(), clockOr(f.Clock).Now()); ok {
		f.changed(u, t)
	}
}

// watch runs u's active checks until ctx ends: the first at once, or an interval after the one
// Open made.
func (f *Forwarder) watch(ctx context.Context, u *upstream) {
	c := standing.Checks{Clock: clockOr(f.Clock), Every: f.Check.interval(), Thresholds: f.Check.thresholds()}
	wait := u.checkedFirst
	u.Watch(ctx, c, func(ctx context.Context) standing.Verdict {
		if wait {
			wait = false
			select {
			case <-ctx.Done():
				return standing.Verdict{Err: ctx.Err()} // (Watch returns)
			case <-c.Clock.After(c.Every):
			}
		}
		return f.Check.probe(ctx, u.addr)
	}, func(t standing.Transition) { f.changed(u, t) })
}

// changed logs a transition of u and opens or closes the health listener accordingly; when u
// left rotation for failing, its connects in progress go elsewhere (reconnect.go).
func (f *Forwarder) changed(u *upstream, t standing.Transition) {
	logger(f.Logger).Info("edge upstream transition", "origin", u.addr, "from", string(t.From), "to", string(t.To),
		"reason", t.Reason, "in_rotation", f.ups.inRotation())
	f.health.set(f.Healthy)
	if standing.Outage(t) {
		f.abandonConnects(u)
	}
}

func (f *Forwarder) connectTimeout() time.Duration {
	return orDefault(f.ConnectTimeout, DefaultConnectTimeout)
}

func (f *Forwarder) idleTimeout() time.Duration { return orDefault(f.IdleTimeout, DefaultIdleTimeout) }
