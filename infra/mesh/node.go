package mesh

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"maps"
	"net"
	"net/http"
	"net/netip"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/zero502/zero502/infra/adminapi"
	"github.com/zero502/zero502/infra/alert"
	"github.com/zero502/zero502/infra/boundedcmd"
	"github.com/zero502/zero502/infra/clock"
)

// Defaults of a Node's timing when its field is zero.
const (
	DefaultProbeEvery   = 10 * time.Second
	DefaultProbeTimeout = 3 * time.Second
)

// Node is one server of a mesh on the network (`zero502 mesh serve`). Every ProbeEvery it
// probes each peer's configured service (or its /health with an httpProber), checks itself,
// records the resulting Bulletin in its Evaluator and posts it to every peer (POST
// /mesh/bulletin), so each node judges the whole mesh from everyone's reports and probes. It
// serves:
//
//	GET  /health          200 while reachable (SetReachable), else 503: what peers probe
//	POST /mesh/bulletin   a peer's report and probes (JSON Bulletin)
//	GET  /mesh/verdicts   the verdicts and the route (JSON Snapshot)
//	GET  /metrics         the same view for Prometheus
//
// Bulletins are authenticated (auth.go): signed with Key, from a configured peer at its
// configured address, fresh, stamped after this node started and each taken once. Times in
// bulletins are stamped on receipt with the node's clock, so clock skew between servers cannot
// make data look fresh or stale.
type Node struct {
	Name   string
	Listen string // host:port of the HTTP endpoint
	// Listener, when set, is used instead of listening on Listen (tests pre-open listeners to
	// know every address before building the peers).
	Listener net.Listener
	Peers    map[string]string // name → host:port of every other server's mesh listener
	// Checkers are the servers the operator trusts to judge others (--checkers): when one of
	// them fails to reach an ordinary server, that server's address is likely blocked. Each is
	// Name or one of Peers; give every server the same list. The role is this configuration's
	// only: what a peer's bulletin claims (Report.Checker) is ignored.
	Checkers []string

	// PeerServices is every peer's service as configured here (a peer without one: its mesh
	// /health is probed, and it has no address a balancer may use). A peer's bulletin never
	// changes what this server probes or routes to: what it claims as its service is ignored.
	PeerServices map[string]Service
	// Key is the mesh's shared key (the same on every server): every bulletin is signed with
	// it and every bulletin received must be (see auth.go). Nil is allowed only when Listen and
	// every peer are on loopback (a lab on one machine): Validate refuses it otherwise.
	Key []byte
	// BulletinWindow is how far a received bulletin's timestamp may be from this server's
	// clock; default DefaultBulletinWindow.
	BulletinWindow time.Duration

	// Service is this server's real service as its users reach it: the self-report checks it
	// and the peers probe it. Zero: the self-report checks the mesh listener and peers probe
	// the mesh's /health.
	Service Service
	// CheckCommand, when set, is a local check run through sh -c each round ("is the VPN
	// service running", e.g. systemctl is-active --quiet openvpn): exit 0 is running. sh and a
	// script it names must pass the trust rule (boundedcmd.ShellProgram; Validate refuses them); it
	// runs without the mesh's secrets in its environment (boundedcmd.ChildEnv).
	CheckCommand string
	// Source, when valid, is the local address probes leave from (the server's own address).
	Source netip.Addr
	// Alerts, when set, delivers one alert per confirmed verdict transition that needs a person
	// (see alerting.go); Tracker confirms them (nil: alert.DefaultConfirm rounds).
	Alerts  *alert.Sender
	Tracker *alert.Tracker

	ProbeEvery   time.Duration // one round of probes, report and bulletins; default DefaultProbeEvery
	ProbeTimeout time.Duration // each probe and each bulletin post; default DefaultProbeTimeout
	Thresholds   Thresholds    // zero: DefaultThresholds
	Clock        clock.Clock   // nil: clock.Real
	Logger       *slog.Logger  // nil: discard

	ln        net.Listener
	eval      *Evaluator
	prober    *httpProber
	client    *http.Client
	reachable atomic.Bool

	mu     sync.Mutex
	last   map[string]State // for logging transitions
	alerts chan alert.Alert

	authMu       sync.Mutex
	started      int64            // Open's time on Clock, Unix ns: every peer's replay floor (a restart forgets lastBulletin)
	lastBulletin map[string]taken // sender → the last bulletin taken (replay guard, one a round)
	roleClaims   map[string]bool  // sender → the checker role it last claimed against --checkers (logged once)
}

// Snapshot is a node's view: every verdict and the route over the whole mesh.
type Snapshot struct {
	Server   string    `json:"server"`
	At       time.Time `json:"at"`
	Verdicts []Verdict `json:"verdicts"`
	Route    selection `json:"route"`
}

func (n *Node) defaults() {
	if n.ProbeEvery == 0 {
		n.ProbeEvery = DefaultProbeEvery
	}
	if n.ProbeTimeout == 0 {
		n.ProbeTimeout = DefaultProbeTimeout
	}
	if n.Thresholds == (Thresholds{}) {
		n.Thresholds = DefaultThresholds()
	}
	if n.BulletinWindow == 0 {
		n.BulletinWindow = DefaultBulletinWindow
	}
	if n.Clock == nil {
		n.Clock = clock.Real{}
	}
	if n.Logger == nil {
		n.Logger = slog.New(slog.DiscardHandler)
	}
}

// Validate fills the defaults and returns every problem, naming the flag of `zero502 mesh
// serve`, the value and the rule.
func (n *Node) Validate() error {
	n.defaults()
	var errs []error
	if n.Name == "" {
		errs = append(errs, errors.New("--name is empty: name this server as its peers name it in their --peers"))
	}
	if err := checkAddr("listen", n.Listen, 0); err != nil {
		errs = append(errs, err)
	}
	if len(n.Peers) == 0 {
		errs = append(errs, errors.New("--peers is empty: list every other server as name=host:port, e.g. b=10.0.0.6:7946,c=10.0.0.7:7946"))
	}
	for _, name := range slices.Sorted(maps.Keys(n.Peers)) {
		switch {
		case name == "":
			errs = append(errs, fmt.Errorf("--peers: address %q has no name; write name=host:port", n.Peers[name]))
		case name == n.Name:
			errs = append(errs, fmt.Errorf("--peers: %q is this server's own --name; list only the other servers", name))
		}
		if err := checkAddr("peers "+name, n.Peers[name], 1); err != nil {
			errs = append(errs, err)
		}
	}
	for _, name := range n.Checkers {
		if _, peer := n.Peers[name]; name == "" || (name != n.Name && !peer) {
			errs = append(errs, fmt.Errorf("--checkers %q: not this server's --name %q nor one of its --peers; list only servers of the mesh, the same list on every server",
				name, n.Name))
		}
	}
	for _, name := range slices.Sorted(maps.Keys(n.PeerServices)) {
		if _, ok := n.Peers[name]; !ok {
			errs = append(errs, fmt.Errorf("--peer-service %s=%s: %q is not in --peers; name a peer", name, n.PeerServices[name].URL, name))
		}
	}
	errs = append(errs, n.validateKey())
	if n.CheckCommand != "" {
		if _, err := boundedcmd.ShellProgram("--check-command", n.CheckCommand); err != nil {
			errs = append(errs, err)
		}
	}
	if n.Alerts != nil {
		errs = append(errs, n.Alerts.Validate())
	}
	if n.ProbeEvery <= 0 {
		errs = append(errs, fmt.Errorf("--probe-every %s: must be above 0", n.ProbeEvery))
	}
	if n.ProbeTimeout <= 0 || n.ProbeTimeout >= n.ProbeEvery {
		errs = append(errs, fmt.Errorf("--probe-timeout %s: must be above 0 and below --probe-every %s (a round must end before the next)",
			n.ProbeTimeout, n.ProbeEvery))
	}
	if err := n.Thresholds.Validate(); err != nil {
		errs = append(errs, err)
	}
	if n.Thresholds.ProbeStaleAfter <= n.ProbeEvery {
		errs = append(errs, fmt.Errorf("--probe-stale %s: must be longer than --probe-every %s, or every probe is silence by the next round",
			n.Thresholds.ProbeStaleAfter, n.ProbeEvery))
	}
	if n.Thresholds.ReportStaleAfter <= n.ProbeEvery {
		errs = append(errs, fmt.Errorf("--report-stale %s: must be longer than --probe-every %s (reports go out every round)",
			n.Thresholds.ReportStaleAfter, n.ProbeEvery))
	}
	if n.BulletinWindow <= n.ProbeTimeout {
		errs = append(errs, fmt.Errorf("--bulletin-window %s: must be longer than --probe-timeout %s (a bulletin may take that long to arrive)",
			n.BulletinWindow, n.ProbeTimeout))
	}
	return errors.Join(errs...)
}

// validateKey refuses a node without a key unless it and all its peers are on loopback, and a
// key too short to be one.
func (n *Node) validateKey() error {
	if n.Key != nil {
		if len(n.Key) < minKeyLength {
			return fmt.Errorf("mesh key: %d bytes, must be %d or more: generate one with `openssl rand -hex 32` and give every server the same", len(n.Key), minKeyLength)
		}
		return nil
	}
	off := []string{}
	if !adminapi.Loopback(n.Listen) {
		off = append(off, "--listen "+n.Listen)
	}
	for _, name := range slices.Sorted(maps.Keys(n.Peers)) {
		if !adminapi.Loopback(n.Peers[name]) {
			off = append(off, "--peers "+name+"="+n.Peers[name])
		}
	}
	if len(off) == 0 {
		return nil
	}
	return fmt.Errorf("%w: %s not on loopback, so anyone who reaches it could forge bulletins: give every server the same "+
		"key with --key-file FILE or $ZERO502_MESH_KEY (e.g. `(umask 077; openssl rand -hex 32 > /etc/zero502/mesh.key)`, a file readable by its owner alone)", errNoKey, strings.Join(off, ", "))
}

func checkAddr(flag, addr string, lowestPort int) error {
	host, port, err := net.SplitHostPort(addr)
	if err == nil {
		var p int
		p, err = strconv.Atoi(port)
		if err == nil && (p < lowestPort || p > 65535) {
			err = fmt.Errorf("port %d out of range", p)
		}
	}
	if err == nil && host == "" && lowestPort > 0 {
		err = errors.New("no host")
	}
	if err != nil {
		return fmt.Errorf("--%s %q: must be host:port with a port from %d to 65535, e.g. 127.0.0.1:7946 (%v)", flag, addr, lowestPort, err)
	}
	return nil
}

// Open validates n and starts listening, so Addr is known before Serve.
func (n *Node) Open() error {
	if err := n.Validate(); err != nil {
		return fmt.Errorf("mesh node: %w", err)
	}
	servers := append([]string{n.Name}, slices.Collect(maps.Keys(n.Peers))...)
	eval, err := newEvaluator(n.Thresholds, n.Clock, n.Checkers, servers...)
	if err != nil {
		return fmt.Errorf("mesh node %s: %w", n.Name, err)
	}
	ln := n.Listener
	if ln == nil {
		if ln, err = net.Listen("tcp", n.Listen); err != nil {
			return fmt.Errorf("mesh node %s: listen on %s: %w; pick a free address with --listen", n.Name, n.Listen, err)
		}
	}
	n.eval, n.ln = eval, ln
	n.prober = newHTTPProber("/health", n.ProbeTimeout)
	n.prober.Source = n.Source // a peer's /health is probed from this server's address, as a service is
	d := &net.Dialer{Timeout: n.ProbeTimeout}
	if ip := n.bulletinSource(); ip.IsValid() {
		d.LocalAddr = &net.TCPAddr{IP: ip.AsSlice()}
	}
	n.client = &http.Client{Timeout: n.ProbeTimeout, Transport: &http.Transport{DisableKeepAlives: true, DialContext: d.DialContext}}
	// The replay guard's memory (lastBulletin) starts empty: without a floor, a bulletin captured
	// before this start would be taken once more. Honest bulletins are stamped after it.
	n.started = n.Clock.Now().UnixNano()
	n.lastBulletin = map[string]taken{}
	n.roleClaims = map[string]bool{}
	n.reachable.Store(true)
	n.last = map[string]State{}
	n.alerts = make(chan alert.Alert, 64)
	if n.Tracker == nil {
		n.Tracker = &alert.Tracker{}
	}
	n.Tracker.Initial = alertOK
	return nil
}

// bulletinSource is the address bulletins leave from, the one the peers expect them from: the
// listener's own IP when it is bound to one, else Source (invalid: chosen by the kernel).
func (n *Node) bulletinSource() netip.Addr {
	if ap, err := netip.ParseAddrPort(n.ln.Addr().String()); err == nil && !ap.Addr().IsUnspecified() {
		return ap.Addr().Unmap()
	}
	return n.Source
}

// serviceOf is server s's service as configured here (the zero Service: none).
func (n *Node) serviceOf(s string) Service {
	if s == n.Name {
		return n.Service
	}
	return n.PeerServices[s]
}

// Addr is the address the node listens on (after Open).
func (n *Node) Addr() string { return n.ln.Addr().String() }

// SetReachable false makes /health answer 503 to every probe while the node keeps reporting
// itself healthy: how a blocked server looks to the mesh. For tests and drills.
func (n *Node) SetReachable(ok bool) { n.reachable.Store(ok) }

// Snapshot is the node's current view of the mesh.
func (n *Node) Snapshot() Snapshot {
	vs := n.eval.Verdicts()
	for i := range vs {
		vs[i].MetricsStale = vs[i].Metrics != nil && vs[i].MetricsAge > n.staleMetrics().Seconds()
	}
	return Snapshot{Server: n.Name, At: n.Clock.Now().UTC(), Verdicts: vs, Route: Route(n.eval.Servers(), vs)}
}

// Serve runs the HTTP endpoint and the probe rounds until ctx ends, then shuts the endpoint
// down. It returns nil after ctx ends, or the listener's error.
func (n *Node) Serve(ctx context.Context) error {
	srv := adminapi.NewServer(n.handler(), adminapi.DefaultLimits, slog.NewLogLogger(n.Logger.Handler(), slog.LevelWarn))
	served := make(chan error, 1)
	go func() { served <- srv.Serve(n.ln) }()
	n.Logger.Info("mesh node serving", "server", n.Name, "listen", n.Addr(), "peers", n.Peers, "checkers", n.Checkers,
		"probe_every", n.ProbeEvery.String(), "fail_streak", n.Thresholds.FailStreak, "quorum", n.Thresholds.Quorum)

	rounds, stop := context.WithCancel(ctx)
	var wg sync.WaitGroup
	wg.Go(func() { n.loop(rounds) })
	wg.Go(func() { n.deliver(rounds) })
	var err error
	select {
	case <-ctx.Done():
	case err = <-served:
		err = fmt.Errorf("mesh node %s: serving on %s: %w", n.Name, n.Addr(), err)
	}
	stop()
	wg.Wait()
	shut, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	_ = srv.Shutdown(shut)
	n.Logger.Info("mesh node stopped", "server", n.Name)
	return err
}

func (n *Node) loop(ctx context.Context) {
	for {
		n.round(ctx)
		select {
		case <-ctx.Done():
			return
		case <-n.Clock.After(n.ProbeEvery):
		}
	}
}

// staleMetrics is the age past which a report's metrics get the "stale" badge: two missed
// rounds, a round being the wait plus its two phases (probes, bulletins) bounded by the timeout.
func (n *Node) staleMetrics() time.Duration { return 2 * (n.ProbeEvery + 2*n.ProbeTimeout) }
