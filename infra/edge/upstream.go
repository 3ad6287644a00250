package edge

import (
	"context"
	"errors"
	"fmt"
	"net"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/pires/go-proxyproto"

	"github.com/zero502/zero502/infra/adminapi"
	"github.com/zero502/zero502/infra/config"
	"github.com/zero502/zero502/infra/standing"
)

// An edge forwards to several upstreams (Forwarder.Origins: typically the in-house LB instances)
// and keeps each one's health standing with the state machine the LB keeps for its backends
// (package infra/standing): active checks every UpstreamCheck.Interval, thresholds, passive
// ejection when a connect fails, and the admin API's add, drain and remove.
//
// Selection is least connections: a new connection goes to the in-rotation upstream with the
// fewest open connections, ties broken round-robin. Connections live long and carry unequal
// load, so counting them spreads better than taking turns. A connect that fails ejects that
// upstream and tries the next one: a TCP connection carries no request until it is relayed, so
// retrying the dial is always safe; for the same reason a connect still in progress to an
// upstream that leaves rotation for failing is abandoned for another (reconnect.go).

// Defaults of the upstream checks, for a Forwarder whose Check leaves a number at zero. They are
// the shipped config's edge.upstream_check values (infra/config/defaults.yaml; a test in infra/config keeps
// the two equal), which is where the command takes its defaults from.
const (
	defaultCheckInterval      = 2 * time.Second
	defaultCheckTimeout       = time.Second
	defaultHealthyThreshold   = 2
	defaultUnhealthyThreshold = 2
)

// UpstreamCheck is how the edge checks its upstreams (--check-* flags, config
// edge.upstream_check). Each check is a TCP connect, or with Path an HTTP GET of Path sent after
// a PROXY v2 header (command LOCAL: the edge speaking for itself, as the protocol has it for
// health checks), so the upstream must accept PROXY from the edge, as an in-house LB with
// --accept-proxy-from does. A 200 is good, a 503 takes the upstream to draining at once (an LB
// instance answers its /_lb/health with 503 while it drains), anything else is a failure.
type UpstreamCheck struct {
	// Path is the HTTP path checked; empty checks by TCP connect only.
	Path string
	// Interval is the time between two checks of an upstream; 0 means defaultCheckInterval.
	Interval time.Duration
	// Timeout bounds one check, below Interval; 0 means defaultCheckTimeout.
	Timeout time.Duration
	// HealthyThreshold is how many good checks in a row bring an upstream (back) in; 0 means
	// defaultHealthyThreshold.
	HealthyThreshold int
	// UnhealthyThreshold is how many failed checks in a row take it out; 0 means
	// defaultUnhealthyThreshold.
	UnhealthyThreshold int
}

func (c UpstreamCheck) interval() time.Duration { return orDefault(c.Interval, defaultCheckInterval) }
func (c UpstreamCheck) timeout() time.Duration  { return orDefault(c.Timeout, defaultCheckTimeout) }

func (c UpstreamCheck) thresholds() standing.Thresholds {
	th := standing.Thresholds{Healthy: c.HealthyThreshold, Unhealthy: c.UnhealthyThreshold}
	if th.Healthy == 0 {
		th.Healthy = defaultHealthyThreshold
	}
	if th.Unhealthy == 0 {
		th.Unhealthy = defaultUnhealthyThreshold
	}
	return th
}

// validate names the flag, the value and the rule of each bad number.
func (c UpstreamCheck) validate() error {
	var errs []error
	if c.Path != "" && c.Path[0] != '/' {
		errs = append(errs, fmt.Errorf("--check-path %q: must start with / (or be empty: check by TCP connect)", c.Path))
	}
	errs = append(errs,
		checkDuration("check-interval", c.Interval, fmt.Sprintf("the default, %s", defaultCheckInterval)),
		checkDuration("check-timeout", c.Timeout, fmt.Sprintf("the default, %s", defaultCheckTimeout)))
	if c.Interval >= 0 && c.Timeout >= 0 && c.timeout() >= c.interval() {
		errs = append(errs, fmt.Errorf("--check-timeout %s: must be below --check-interval %s (a check ends before the next starts)", c.timeout(), c.interval()))
	}
	for _, t := range []struct {
		flag     string
		n, deflt int
	}{{"healthy-threshold", c.HealthyThreshold, defaultHealthyThreshold}, {"unhealthy-threshold", c.UnhealthyThreshold, defaultUnhealthyThreshold}} {
		switch {
		case t.n < 0:
			errs = append(errs, fmt.Errorf("--%s %d: must be 1 or more (0: the default, %d)", t.flag, t.n, t.deflt))
		case t.n > config.MaxThreshold:
			errs = append(errs, fmt.Errorf("--%s %d: must be at most %d checks in a row, as edge.upstream_check.%s: more would keep a "+
				"failing upstream for hours", t.flag, t.n, config.MaxThreshold, strings.ReplaceAll(t.flag, "-", "_")))
		}
	}
	return errors.Join(errs...)
}

// probe is one check of addr.
func (c UpstreamCheck) probe(ctx context.Context, addr string) standing.Verdict {
	if c.Path == "" {
		return standing.TCPProbe(ctx, addr, c.timeout())
	}
	return standing.HTTPProbe(ctx, addr, c.Path, "zero502-edge-check", c.timeout(), localHeader)
}

// localHeader is the PROXY v2 header of a check: command LOCAL, no addresses.
func localHeader(net.Conn) ([]byte, error) {
	return (&proxyproto.Header{Version: 2, Command: proxyproto.LOCAL}).Format()
}

// upstream is one target of the edge: its standing, its open connections and the goroutine
// path's connects in progress to it (reconnect.go).
type upstream struct {
	standing.Standing
	addr     string
	open     atomic.Int64
	connects connects
	// stop ends its checks (nil before they started); under the set's lock.
	stop context.CancelFunc
	// checkedFirst: Open checked it (firstChecks); its checks under Serve start an interval later.
	checkedFirst bool
}

func (u *upstream) status() adminapi.BackendStatus {
	return u.Status(u.addr, u.open.Load())
}

// Errors of the admin API's changes.
var (
	// ErrUnknownUpstream: no upstream has this address.
	ErrUnknownUpstream = fmt.Errorf("%w (GET /admin/upstreams lists them)", adminapi.ErrUnknownTarget)
	// ErrInRotation: the upstream still takes new connections.
	ErrInRotation = fmt.Errorf("upstream is %w", adminapi.ErrInRotation)
)

// upstreams is the edge's set: read lock-free by every new connection, changed under mu by the
// admin API.
type upstreams struct {
	list atomic.Pointer[[]*upstream]
	next atomic.Uint64
	// reconnects counts connects abandoned for another upstream after an ejection (reconnect.go)
	reconnects atomic.Uint64

	mu sync.Mutex
	// checks is the context the checks run under (nil before Serve starts them); watch runs the
	// checks of one upstream.
	checks context.Context
	watch  func(ctx context.Context, u *upstream)
}

func newUpstreams(addrs []string, now time.Time) *upstreams {
	s := &upstreams{}
	all := make([]*upstream, 0, len(addrs))
	for _, a := range addrs {
		u := &upstream{addr: a}
		u.StartAwaitingFirstCheck(now) // out until its first check (Forwarder.Open)
		all = append(all, u)
	}
	s.list.Store(&all)
	return s
}

func (s *upstreams) all() []*upstream { return *s.list.Load() }

func (s *upstreams) find(addr string) *upstream {
	for _, u := range s.all() {
		if u.addr == addr {
			return u
		}
	}
	return nil
}

// inRotation is how many upstreams take new connections.
func (s *upstreams) inRotation() int {
	n := 0
	for _, u := range s.all() {
		if u.InRotation() {
			n++
		}
	}
	return n
}

// pick is the in-rotation upstream not in tried with the fewest open connections, ties broken
// round-robin; nil when none is left. While no upstream is in rotation it fails open as the LB
// does (standing.FailsOpen): it picks among the upstreams that left by failed checks after they
// had served, never one that drains, is held by the admin API or never passed a check.
func (s *upstreams) pick(tried []*upstream) *upstream {
	all := s.all()
	if len(all) == 0 {
		return nil
	}
	takes := (*upstream).InRotation
	if s.inRotation() == 0 {
		takes = (*upstream).FailsOpen
	}
	start := int(s.next.Add(1) % uint64(len(all)))
	var best *upstream
	for i := range all {
		u := all[(start+i)%len(all)]
		if !takes(u) || slices.Contains(tried, u) {
			continue
		}
		if best == nil || u.open.Load() < best.open.Load() {
			best = u
		}
	}
	return best
}

// healthyLeft reports whether an upstream in rotation that is not in tried is left (none while
// no upstream is in rotation: failing open is not healthy).
func (s *upstreams) healthyLeft(tried []*upstream) bool {
	for _, u := range s.all() {
		if u.InRotation() && !slices.Contains(tried, u) {
			return true
		}
	}
	return false
}

// start runs the checks of every upstream under ctx, and of every one added later.
func (s *upstreams) start(ctx context.Context, watch func(ctx context.Context, u *upstream)) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.checks, s.watch = ctx, watch
	for _, u := range s.all() {
		s.startLocked(u)
	}
}

func (s *upstreams) startLocked(u *upstream) {
	if s.checks == nil {
		return
	}
	ctx, cancel := context.WithCancel(s.checks)
	u.stop = cancel
	go s.watch(ctx, u)
}

// add puts addr in the set, joining (created), or undrains an admin-drained one; another known
// upstream is left as it is. t is the transition made, if any.
func (s *upstreams) add(addr string, now time.Time) (u *upstream, t standing.Transition, moved, created bool, err error) {
	if err := checkDial("origin", addr); err != nil {
		return nil, t, false, false, err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if u := s.find(addr); u != nil {
		t, moved := u.Undrain(now)
		return u, t, moved, false, nil
	}
	u = &upstream{addr: addr}
	t = u.StartJoining(now)
	all := append(slices.Clone(s.all()), u)
	s.list.Store(&all)
	s.startLocked(u)
	return u, t, true, true, nil
}

// drain holds addr out of rotation until it is added again; open connections go on.
func (s *upstreams) drain(addr string, now time.Time, by string) (*upstream, standing.Transition, bool, error) {
	if err := checkDial("origin", addr); err != nil {
		return nil, standing.Transition{}, false, err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	u := s.find(addr)
	if u == nil {
		return nil, standing.Transition{}, false, fmt.Errorf("drain %s: %w", addr, ErrUnknownUpstream)
	}
	t, moved := u.AdminDrain(now, by)
	return u, t, moved, nil
}

// remove forgets addr, which must be out of rotation; its checks stop, its open connections go
// on until they end.
func (s *upstreams) remove(addr string) (*upstream, standing.State, error) {
	if err := checkDial("origin", addr); err != nil {
		return nil, "", err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	u := s.find(addr)
	if u == nil {
		return nil, "", fmt.Errorf("remove %s: %w", addr, ErrUnknownUpstream)
	}
	from, err := u.MarkRemoved()
	if err != nil {
		return nil, from, fmt.Errorf("remove %s: %w: drain it first (POST /admin/upstreams/%s/drain), then remove it once its in_flight (open connections) is 0",
			addr, ErrInRotation, addr)
	}
	all := slices.DeleteFunc(slices.Clone(s.all()), func(o *upstream) bool { return o == u })
	s.list.Store(&all)
	if u.stop != nil {
		u.stop()
	}
	return u, from, nil
}
