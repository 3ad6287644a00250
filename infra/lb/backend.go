package lb

import (
	"net"
	"net/netip"
	"sync/atomic"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/zero502/zero502/infra/adminapi"
	"github.com/zero502/zero502/infra/standing"
)

// The admin API's wire types live in package adminapi (clients such as the deployer import
// that, not the LB); the LB uses them under the same names.
type (
	State         = adminapi.State
	Transition    = adminapi.Transition
	BackendStatus = adminapi.BackendStatus
)

// Backend states (docs/lb.md: Admin API).
const (
	Healthy   = adminapi.Healthy
	Draining  = adminapi.Draining
	Unhealthy = adminapi.Unhealthy
	Joining   = adminapi.Joining
)

// Status classes of the per-backend request counters.
const (
	class1xx = iota // 101 Switching Protocols: an upgrade
	class2xx
	class3xx
	class4xx
	class5xx
	classErrors
	classes
)

var classNames = [classes]string{"1xx", "2xx", "3xx", "4xx", "5xx", "errors"}

// Backend is one target of the LB: its health standing (package infra/standing: state,
// thresholds, admin holds; InRotation is the forwarding path's check), its upstream connection
// pool and its counters.
type Backend struct {
	// Address is the backend as configured (host:port).
	Address string
	index   int

	standing.Standing
	// stopChecks ends its health checks (nil before they started); under the backend set's lock.
	stopChecks func()

	// weight is its share of new requests relative to the others in rotation (adminapi's
	// MinWeight to MaxWeight, DefaultWeight at first); the rotation reads it on a rebuild.
	weight atomic.Int32

	inFlight atomic.Int64
	counts   [classes]atomic.Uint64 // answers by status class; classErrors: failed attempts
	// what users got (adminapi.Outcomes), changed only by record
	serverErrors      atomic.Uint64
	healthUnavailable atomic.Uint64
	failures          [failureKinds]atomic.Uint64
	lbAnswers         [len(lbAnswerCodes)]atomic.Uint64
	latency           latency
	countingSince     time.Time // when these counters started at zero (adminapi.Outcomes.CountingSince)

	pool lockedPool   // the goroutine path's idle connections (the event loops keep their own)
	idle atomic.Int64 // idle connections to it in every pool, of both paths

	// Where the event loops connect(2) (sockaddr). A backend given by IP address: ip, for good.
	// One given by host name (named) is never looked up on a loop: the loops connect to reached,
	// the address the last connection by its name got to (a passing health check, which
	// resolves the name and tries each address as net.Dial does, or the goroutine path's dial);
	// nil before any, and again after a connect to it failed. Without it a loop hands the
	// request to the goroutine path, which connects by name (loop.failed).
	ip      netip.AddrPort
	named   bool
	reached atomic.Pointer[netip.AddrPort]

	connectSeconds prometheus.Observer

	// outages counts its leaving rotation for failing (Server.outage); waits are the goroutine
	// path's requests waiting on it that an outage resends (resend.go)
	outages atomic.Uint64
	waits   headWaits
}

// newBackend is a backend in rotation.
func newBackend(addr string, index int, now time.Time) *Backend {
	b := blankBackend(addr, index, now)
	b.StartInRotation(now)
	return b
}

// newConfiguredBackend is a backend of the configuration: out of rotation until its first
// health check, which the LB runs when it starts (see firstChecks).
func newConfiguredBackend(addr string, index int, now time.Time) *Backend {
	b := blankBackend(addr, index, now)
	b.StartAwaitingFirstCheck(now)
	return b
}

// newJoiningBackend is a backend the admin API added: out of rotation until its health checks
// pass healthy_threshold times.
func newJoiningBackend(addr string, index int, now time.Time) *Backend {
	b := blankBackend(addr, index, now)
	b.StartJoining(now)
	return b
}

// blankBackend is addr at index with the default weight, before its standing starts, its
// counters starting at now.
func blankBackend(addr string, index int, now time.Time) *Backend {
	b := &Backend{Address: addr, index: index, countingSince: now}
	if ip, err := netip.ParseAddrPort(addr); err == nil {
		b.ip = netip.AddrPortFrom(ip.Addr().Unmap(), ip.Port())
	} else {
		b.named = true
	}
	b.weight.Store(adminapi.DefaultWeight)
	b.pool.backend = b
	return b
}

// reach records a, where a connection by b's name got to, as where the event loops connect to
// b (a backend given by IP address has no use for it). It stores only a change.
func (b *Backend) reach(a net.Addr) {
	ta, ok := a.(*net.TCPAddr)
	if !b.named || !ok {
		return
	}
	ap := ta.AddrPort()
	ap = netip.AddrPortFrom(ap.Addr().Unmap(), ap.Port())
	if p := b.reached.Load(); p != nil && *p == ap {
		return
	}
	b.reached.Store(&ap)
}

// unreach forgets p, the address a connect to b failed at, unless a newer one replaced it.
func (b *Backend) unreach(p *netip.AddrPort) {
	if p != nil {
		b.reached.CompareAndSwap(p, nil)
	}
}

// Weight is b's share of new requests relative to the other backends in rotation.
func (b *Backend) Weight() int { return int(b.weight.Load()) }

// count counts one attempt by status class: a status code, or 0 for an attempt that got no
// response from this backend (see record, its one caller).
func (b *Backend) count(status int) {
	c := classErrors
	if status >= 100 && status < 600 {
		c = status/100 - 1
	}
	b.counts[c].Add(1)
}

// idleConns is how many idle keep-alive connections to b the LB keeps, on either path.
func (b *Backend) idleConns() int { return int(b.idle.Load()) }

// Status is a consistent snapshot of b.
func (b *Backend) Status() BackendStatus {
	st := b.Standing.Status(b.Address, b.inFlight.Load())
	st.Requests = make(map[string]uint64, classes)
	for i, n := range classNames {
		st.Requests[n] = b.counts[i].Load()
	}
	st.Outcomes = b.outcomes()
	st.Weight = b.Weight()
	return st
}
