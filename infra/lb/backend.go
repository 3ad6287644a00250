package lb

import (
	"net/netip"
	"sync"
	"sync/atomic"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/zero502/zero502/infra/lb/adminapi"
)

// The admin API's wire types live in package adminapi (clients such as the deployer import
// that, not the LB); the LB uses them under the same names.
type (
	State         = adminapi.State
	Transition    = adminapi.Transition
	BackendStatus = adminapi.BackendStatus
	SettingsView  = adminapi.SettingsView
)

// Backend states (README: Admin API).
const (
	Healthy   = adminapi.Healthy
	Draining  = adminapi.Draining
	Unhealthy = adminapi.Unhealthy
	Joining   = adminapi.Joining
)

const keptTransitions = 20

// Status classes of the per-backend request counters.
const (
	class2xx = iota
	class3xx
	class4xx
	class5xx
	classErrors
	classes
)

var classNames = [classes]string{"2xx", "3xx", "4xx", "5xx", "errors"}

// Backend is one target of the LB: its health state, its upstream connection pool and its
// counters.
type Backend struct {
	// Address is the backend as configured (host:port).
	Address string
	index   int

	mu          sync.Mutex
	state       State
	since       time.Time
	failures    int
	successes   int
	lastCheck   time.Time
	lastErr     string
	transitions []Transition
	// adminDrained: the admin API drained it; health checks keep it out of rotation until an
	// admin PUT undrains it.
	adminDrained bool
	// removed: the admin API took it out of the set; nothing changes its state any more.
	removed bool
	// first: a configured backend's way to its first good check (see firstChecks); 0 for a
	// backend the admin API added.
	first int
	// stopChecks ends its health checks (nil before they started); under the backend set's lock.
	stopChecks func()

	healthy  atomic.Bool
	inFlight atomic.Int64
	counts   [classes]atomic.Uint64

	pool lockedPool   // the goroutine path's idle connections (the event loops keep their own)
	idle atomic.Int64 // idle connections to it in every pool, of both paths

	saOnce sync.Once // sockaddr: the address for the event loops' connect(2)
	sa     netip.AddrPort
	saErr  error

	connectSeconds prometheus.Observer
	headerSeconds  prometheus.Observer
}

// newBackend is a backend in rotation.
func newBackend(addr string, index int, now time.Time) *Backend {
	b := &Backend{Address: addr, index: index, state: Healthy, since: now}
	b.healthy.Store(true)
	b.pool.backend = b
	return b
}

// newConfiguredBackend is a backend of the configuration: out of rotation until its first
// health check, which the LB runs when it starts (see firstChecks).
func newConfiguredBackend(addr string, index int, now time.Time) *Backend {
	b := &Backend{Address: addr, index: index, state: Unhealthy, since: now, first: firstAwaited, lastErr: reasonNotChecked}
	b.pool.backend = b
	return b
}

// newJoiningBackend is a backend the admin API added: out of rotation until its health checks
// pass healthy_threshold times.
func newJoiningBackend(addr string, index int, now time.Time) *Backend {
	b := &Backend{Address: addr, index: index, state: Joining, since: now}
	b.pool.backend = b
	b.transitions = []Transition{{At: now.UTC(), To: Joining, Reason: reasonAdmin}}
	return b
}

// count records one request outcome: a status code, or 0 for a request that got no response
// from this backend.
func (b *Backend) count(status int) {
	c := classErrors
	if status >= 200 && status < 600 {
		c = status/100 - 2
	}
	b.counts[c].Add(1)
}

// idleConns is how many idle keep-alive connections to b the LB keeps, on either path.
func (b *Backend) idleConns() int { return int(b.idle.Load()) }

// Status is a consistent snapshot of b.
func (b *Backend) Status() BackendStatus {
	b.mu.Lock()
	defer b.mu.Unlock()
	st := BackendStatus{
		Address: b.Address, State: b.state, InRotation: b.state == Healthy, Since: b.since.UTC(),
		ConsecutiveFailures: b.failures, ConsecutiveSuccesses: b.successes,
		LastCheck: b.lastCheck.UTC(), LastError: b.lastErr, InFlight: b.inFlight.Load(), AdminDrained: b.adminDrained,
		Requests: make(map[string]uint64, classes), Transitions: append([]Transition{}, b.transitions...),
	}
	for i, n := range classNames {
		st.Requests[n] = b.counts[i].Load()
	}
	return st
}
