package config

import (
	"fmt"
	"math"
	"reflect"
	"slices"
	"strings"
	"time"
)

// BalancerNumbers are the balancer's numbers: how it checks a target's health, how long it waits
// on one, and how a target leaves and joins. They are one type wherever they appear: the config
// (balancer.*, the keys below), the in-house LB's settings and its admin API (GET
// /admin/settings), the ALB target group zero502 provisions, and the live view the drift check
// compares with the config. Not every balancer has every number: the in-house LB has no
// deregistration delay or slow start, an ALB target group no connect, header or idle timeout
// (those are its listener's); a balancer says which numbers it reports, and the drift check
// and the overlay of live numbers (Drift, Overlay) look at those only.
//
// The JSON form (json tags) is Go's: durations in nanoseconds; the admin API writes durations as
// Go duration strings (package adminapi).
type BalancerNumbers struct {
	// HealthPath is the path of the balancer's health check, and the services' default. Default
	// /health.
	HealthPath string `mapstructure:"health_path" json:"health_path,omitempty"`
	// Interval is the time between two health checks of one target. Default 5s (ALB: 5s–300s).
	Interval time.Duration `mapstructure:"interval" json:"interval,omitempty"`
	// Timeout is how long one health check may take. Default 2s; must be below Interval (I4).
	Timeout time.Duration `mapstructure:"timeout" json:"timeout,omitempty"`
	// UnhealthyThreshold is how many consecutive failed checks take a target out, at most 1000.
	// Default 2.
	UnhealthyThreshold int `mapstructure:"unhealthy_threshold" json:"unhealthy_threshold,omitempty"`
	// HealthyThreshold is how many consecutive good checks put it back, at most 1000. Default 2.
	HealthyThreshold int `mapstructure:"healthy_threshold" json:"healthy_threshold,omitempty"`
	// IdleTimeout is how long the balancer keeps an idle upstream keep-alive connection. Default
	// 60s; must be below the app's keep-alive idle timeout (I7).
	IdleTimeout time.Duration `mapstructure:"idle_timeout" json:"idle_timeout,omitempty"`
	// ConnectTimeout bounds the in-house LB's connect to a backend. Default 1s.
	ConnectTimeout time.Duration `mapstructure:"connect_timeout" json:"connect_timeout,omitempty"`
	// HeaderTimeout bounds the wait for a backend's response headers (then 504). Default 3s.
	HeaderTimeout time.Duration `mapstructure:"header_timeout" json:"header_timeout,omitempty"`
	// MaxHeaderBytes is the largest request header block the in-house LB accepts (then 431).
	// Default 65536.
	MaxHeaderBytes int `mapstructure:"max_header_bytes" json:"max_header_bytes,omitempty"`
	// DeregistrationDelay is the ALB target group's deregistration_delay.timeout_seconds. Default 30s.
	DeregistrationDelay time.Duration `mapstructure:"deregistration_delay" json:"deregistration_delay,omitempty"`
	// SlowStart is the ALB target group's slow_start.duration_seconds; 0 leaves it off.
	SlowStart time.Duration `mapstructure:"slow_start" json:"slow_start,omitempty"`
}

// Detection is how long the balancer needs, at worst, to take a failing target out of rotation:
// Interval × UnhealthyThreshold (saturated: MulDuration).
func (n BalancerNumbers) Detection() time.Duration {
	return MulDuration(n.Interval, n.UnhealthyThreshold)
}

// Recovery is how long a healthy target needs to be back in rotation: Interval × HealthyThreshold
// (saturated: MulDuration).
func (n BalancerNumbers) Recovery() time.Duration {
	return MulDuration(n.Interval, n.HealthyThreshold)
}

// BalancerNumberKeys are the config keys of every number (health_path, interval, …; under
// balancer. in the file), in the order of the type.
func BalancerNumberKeys() []string {
	t := reflect.TypeOf(BalancerNumbers{})
	keys := make([]string, 0, t.NumField())
	for i := range t.NumField() {
		keys = append(keys, t.Field(i).Tag.Get("mapstructure"))
	}
	return keys
}

// number is the field of n under key; false when key is not one of the numbers.
func (n *BalancerNumbers) number(key string) (reflect.Value, bool) {
	v := reflect.ValueOf(n).Elem()
	for i := range v.NumField() {
		if v.Type().Field(i).Tag.Get("mapstructure") == key {
			return v.Field(i), true
		}
	}
	return reflect.Value{}, false
}

// Text is the number under key as it is written in the config and in the admin API's JSON: a
// string for the health path and for a duration (a Go duration: 5s, 250ms), an int for a
// count; false when key is not one of the numbers.
func (n BalancerNumbers) Text(key string) (any, bool) {
	f, ok := n.number(key)
	switch {
	case !ok:
		return nil, false
	case f.Type() == durationType:
		return time.Duration(f.Int()).String(), true
	case f.Kind() == reflect.Int:
		return int(f.Int()), true
	}
	return f.String(), true
}

// Value is Text as a person reads it: 5s, 2, /health.
func (n BalancerNumbers) Value(key string) (string, bool) {
	v, ok := n.Text(key)
	if !ok {
		return "", false
	}
	return fmt.Sprint(v), true
}

// SetText sets the number under key from v as Text gives it: a Go duration string for a
// duration, a whole number (an int, or a float64 as encoding/json decodes it) for a count, a
// string for the health path.
func (n *BalancerNumbers) SetText(key string, v any) error {
	f, ok := n.number(key)
	if !ok {
		return fmt.Errorf("balancer.%s: not one of the balancer's numbers (%s)", key, strings.Join(BalancerNumberKeys(), ", "))
	}
	switch {
	case f.Type() == durationType:
		s, _ := v.(string)
		d, err := time.ParseDuration(s)
		if err != nil {
			return fmt.Errorf("balancer.%s %#v: not a duration; write it as a string with a unit, e.g. \"5s\" or \"250ms\"", key, v)
		}
		f.SetInt(int64(d))
	case f.Kind() == reflect.Int:
		switch i := v.(type) {
		case int:
			f.SetInt(int64(i))
		case float64:
			if i != math.Trunc(i) || math.Abs(i) > 1<<53 {
				return fmt.Errorf("balancer.%s %v: not a whole number", key, v)
			}
			f.SetInt(int64(i))
		default:
			return fmt.Errorf("balancer.%s %#v: not a whole number", key, v)
		}
	default:
		s, ok := v.(string)
		if !ok {
			return fmt.Errorf("balancer.%s %#v: not a string", key, v)
		}
		f.SetString(s)
	}
	return nil
}

// Drift is one balancer setting whose live value differs from the config.
type Drift struct {
	// Field is the config key (balancer.interval).
	Field string `json:"field"`
	// Config and Live are the two values as people write them.
	Config string `json:"config"`
	Live   string `json:"live"`
}

func (d Drift) String() string {
	return fmt.Sprintf("%s: config %s, live balancer %s", d.Field, d.Config, d.Live)
}

// Drift lists, in the order of the type, every number of reported (config keys) where live
// differs from n, the config: someone changed the interval in the console, or started the LB
// with other flags. Numbers the balancer does not report are not compared. Equal durations
// written differently (5000ms, 5s) are equal.
func (n BalancerNumbers) Drift(live BalancerNumbers, reported []string) []Drift {
	var out []Drift
	for _, key := range BalancerNumberKeys() {
		if !slices.Contains(reported, key) {
			continue
		}
		c, _ := n.Value(key)
		l, _ := live.Value(key)
		if c != l {
			out = append(out, Drift{Field: "balancer." + key, Config: c, Live: l})
		}
	}
	return out
}

// Overlay returns n with every number of reported (config keys) taken from live: the numbers
// a deploy really runs through, for the invariants (zero502 invariants --live, a deploy's
// preflight with --accept-drift).
func (n BalancerNumbers) Overlay(live BalancerNumbers, reported []string) BalancerNumbers {
	for _, key := range reported {
		dst, ok := n.number(key)
		if !ok {
			continue
		}
		src, _ := live.number(key)
		dst.Set(src)
	}
	return n
}

// BalancerDrainWindow is how long the deployer waits, at most, for a target drained at the
// balancer (a service with drain: balancer) to have nothing in flight: drain.window for the
// in-house LB and the edges, the target group's deregistration delay for an ALB (which holds
// the target in draining that long), edge.drain for the edges' DNS A record set (I6 keeps it
// above the TTL plus the monitor's detection, which is what the deployer waits for there).
func (c *Config) BalancerDrainWindow() time.Duration {
	switch c.Balancer.Kind {
	case BalancerALB:
		return c.Balancer.DeregistrationDelay
	case BalancerDNS:
		return c.Edge.Drain
	}
	return c.Drain.Window
}
