// Package adminapi holds the wire types of the in-house LB's admin API (docs/lb.md: Admin API):
// what GET /admin/backends, /admin/backends/{addr} and /admin/settings answer. Clients (the
// deployer's rotation wait and drift check) import this package, not the LB itself.
package adminapi

import (
	"bytes"
	"encoding/json"
	"fmt"
	"time"

	"github.com/zero502/zero502/infra/config"
)

// State is where a backend stands with the LB.
type State string

// Backend states (docs/lb.md: Admin API).
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
	// NoAnswer: the last unhealthy-threshold checks that made it got no answer at all (timeouts:
	// the target went silent, a host lost or frozen), not a refusal or a bad status.
	NoAnswer bool `json:"no_answer,omitempty"`
}

// BackendStatus is the admin API's view of one backend (docs/lb.md: Admin API).
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
	// whatever its health checks say; DrainedBy is who drained it last (the drain's ?by=,
	// DrainedByAdmin without one), so an automaton undoes only its own drains.
	AdminDrained bool   `json:"admin_drained"`
	DrainedBy    string `json:"drained_by,omitempty"`
	// Weight is the backend's share of new requests relative to the others in rotation, from
	// MinWeight to MaxWeight (DefaultWeight until the write API sets it); absent (0) where the
	// balancer has no weights (an edge's upstreams).
	Weight int `json:"weight,omitempty"`
	// Requests are the answers the backend gave, by status class (1xx: upgrades), and under
	// "errors" the attempts at it that got no response (Outcomes.Failures, by kind).
	Requests    map[string]uint64 `json:"requests"`
	Transitions []Transition      `json:"transitions"`
	// Outcomes are the cumulative evidence of what users got from this backend: diff two
	// snapshots with Window.
	Outcomes Outcomes `json:"outcomes"`
}

// Settings is the answer of GET /admin/settings (docs/lb.md: Admin API): the LB's listen address
// and the numbers it runs by, under the config's key names (listen, health_path, interval, …),
// durations as Go duration strings ("250ms"), counts as JSON numbers. Clients (the deployer's
// drift check) decode it too.
type Settings struct {
	Listen string
	config.BalancerNumbers
	// Reported are the keys of the numbers the JSON carried, set by UnmarshalJSON: the ones the
	// drift check compares. MarshalJSON always writes every key of InHouseNumbers.
	Reported []string
}

// InHouseNumbers are the config keys of the numbers the in-house LB runs by, the ones GET
// /admin/settings carries: all of config.BalancerNumbers but the ALB's deregistration_delay and
// slow_start.
func InHouseNumbers() []string {
	return []string{"health_path", "interval", "timeout", "unhealthy_threshold", "healthy_threshold",
		"idle_timeout", "connect_timeout", "header_timeout", "max_header_bytes"}
}

// MarshalJSON writes listen, then every number of InHouseNumbers, in that order.
func (s Settings) MarshalJSON() ([]byte, error) {
	var b bytes.Buffer
	b.WriteString(`{"listen":`)
	listen, _ := json.Marshal(s.Listen)
	b.Write(listen)
	for _, key := range InHouseNumbers() {
		v, _ := s.Text(key)
		value, err := json.Marshal(v)
		if err != nil {
			return nil, fmt.Errorf("admin settings %s: %w", key, err)
		}
		fmt.Fprintf(&b, ",%q:%s", key, value)
	}
	b.WriteByte('}')
	return b.Bytes(), nil
}

// UnmarshalJSON reads listen and every number the JSON carries, in the form MarshalJSON writes,
// and lists those numbers in Reported. Keys it does not know are ignored (a newer LB may report
// more); a number of the wrong form is an error naming it.
func (s *Settings) UnmarshalJSON(data []byte) error {
	var raw map[string]any
	if err := json.Unmarshal(data, &raw); err != nil {
		return err
	}
	*s = Settings{}
	if v, ok := raw["listen"]; ok {
		listen, isString := v.(string)
		if !isString {
			return fmt.Errorf("admin settings listen %#v: not a string (host:port)", v)
		}
		s.Listen = listen
	}
	for _, key := range config.BalancerNumberKeys() {
		v, ok := raw[key]
		if !ok {
			continue
		}
		if err := s.SetText(key, v); err != nil {
			return fmt.Errorf("admin settings: %w", err)
		}
		s.Reported = append(s.Reported, key)
	}
	return nil
}
