// Package adminapi holds the wire types of the in-house LB's admin API (README: Admin API):
// what GET /admin/backends, /admin/backends/{addr} and /admin/settings answer. Clients (the
// deployer's rotation wait and drift check) import this package, not the LB itself.
package adminapi

import "time"

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

// SettingsView is the wire form of GET /admin/settings (README: Admin API): the config's YAML key
// names, durations as Go duration strings. Clients (the deployer's drift check) decode it too.
type SettingsView struct {
	Listen             string `json:"listen"`
	HealthPath         string `json:"health_path"`
	Interval           string `json:"interval"`
	Timeout            string `json:"timeout"`
	UnhealthyThreshold int    `json:"unhealthy_threshold"`
	HealthyThreshold   int    `json:"healthy_threshold"`
	IdleTimeout        string `json:"idle_timeout"`
	ConnectTimeout     string `json:"connect_timeout"`
	HeaderTimeout      string `json:"header_timeout"`
	MaxHeaderBytes     int    `json:"max_header_bytes"`
}
