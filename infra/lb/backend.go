package lb

import (
	"net/netip"
	"sync"
	"sync/atomic"
	"time"

	"github.com/prometheus/client_golang/prometheus"
)

// State is where a backend stands with the LB.
type State string

// Backend states (README: Admin API).
const (
	// Healthy: in rotation.
	Healthy State = "healthy"
	// Draining: its health check answered 503; no new requests at once, in-flight ones finish,
	// idle pooled connections to it are closed.
	Draining State = "draining"
	// Unhealthy: out after unhealthy_threshold failed checks, or ejected passively when a
	// connection to it was refused or broke.
	Unhealthy State = "unhealthy"
	// Joining: added through the admin API (or undrained before its checks passed); out of
	// rotation until healthy_threshold consecutive good checks.
	Joining State = "joining"
)

// Transition is one change of a backend's state. From is empty for a backend the admin API
// just added; Reason is "admin" for a change the admin API made.
type Transition struct {
	At     time.Time `json:"at"`
	From   State     `json:"from"`
	To     State     `json:"to"`
	Reason string    `json:"reason"`
}

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
	// stopChecks ends its health checks (nil before they started); under the backend set's lock.
	stopChecks func()

	healthy  atomic.Bool
	inFlight atomic.Int64
	counts   [classes]atomic.Uint64

	pool     pool
	loopIdle atomic.Int64 // idle connections in the event loops' pools

	saOnce sync.Once // sockaddr: the address for the event loops' connect(2)
	sa     netip.AddrPort
	saErr  error

	connectSeconds prometheus.Observer
	headerSeconds  prometheus.Observer
}

// newBackend is a configured backend: in rotation from the start, as the LB has always begun.
func newBackend(addr string, index int, now time.Time) *Backend {
	b := &Backend{Address: addr, index: index, state: Healthy, since: now}
	b.healthy.Store(true)
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
func (b *Backend) idleConns() int { return b.pool.idleCount() + int(b.loopIdle.Load()) }

// BackendStatus is the admin API's view of one backend (README: Admin API).
type BackendStatus struct {
	Address              string    `json:"address"`
	State                State     `json:"state"`
	InRotation           bool      `json:"in_rotation"`
	Since                time.Time `json:"since"`
	ConsecutiveFailures  int       `json:"consecutive_failures"`
	ConsecutiveSuccesses int       `json:"consecutive_successes"`
	LastCheck            time.Time `json:"last_check"`
	LastError            string    `json:"last_error"`
	InFlight             int64     `json:"in_flight"`
	// AdminDrained is true while the admin API holds the backend drained (state draining),
	// whatever its health checks say.
	AdminDrained bool              `json:"admin_drained"`
	Requests     map[string]uint64 `json:"requests"`
	Transitions  []Transition      `json:"transitions"`
}

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
