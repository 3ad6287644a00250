package lb

import (
	"fmt"

	"github.com/zero502/zero502/infra/config"
)

// numberFlags are the command-line flags of the balancer's numbers, by the config key each sets.
func numberFlags() map[string]string {
	return map[string]string{
		"health-path": "health_path", "health-interval": "interval", "health-timeout": "timeout",
		"unhealthy-threshold": "unhealthy_threshold", "healthy-threshold": "healthy_threshold",
		"idle-timeout": "idle_timeout", "connect-timeout": "connect_timeout", "header-timeout": "header_timeout",
		"max-header-bytes": "max_header_bytes",
	}
}

// Resolve builds the settings `zero502 lb` runs with, in two modes. Config mode (cfg not nil):
// the listen and admin addresses, the backends (the balanced service on every host) and every
// number from the config (fromConfig). Lab mode (cfg nil): LabSettings on listen with backends.
// Then every flag the user gave explicitly (given reports it by flag name, e.g.
// "health-interval"; "admin-token" for a token from a file or the environment) takes
// its value from flags, over the config or the lab default alike. The result is validated
// (Validate), so a bad value is refused naming its flag before anything starts.
func Resolve(cfg *config.Config, listen string, backends []string, flags Settings, given func(flag string) bool) (Settings, error) {
	var s Settings
	if cfg != nil {
		s = fromConfig(cfg)
		if len(s.Backends) == 0 {
			return s, fmt.Errorf("no backends: the balanced service (balancer.service) needs a port and the config needs hosts")
		}
	} else {
		s = LabSettings(listen, backends)
	}
	var numbers []string
	for flag, key := range numberFlags() {
		if given(flag) {
			numbers = append(numbers, key)
		}
	}
	s.BalancerNumbers = s.Overlay(flags.BalancerNumbers, numbers)
	for _, f := range []struct {
		flag  string
		apply func()
	}{
		{"listen", func() { s.Listen = flags.Listen }},
		{"admin", func() { s.Admin = flags.Admin }},
		{"admin-token", func() { s.AdminToken = flags.AdminToken }},
		{"client-header-timeout", func() { s.ClientHeaderTimeout = flags.ClientHeaderTimeout }},
		{"client-idle-timeout", func() { s.ClientIdleTimeout = flags.ClientIdleTimeout }},
		{"tunnel-idle-timeout", func() { s.TunnelIdleTimeout = flags.TunnelIdleTimeout }},
		{"body-timeout", func() { s.BodyTimeout = flags.BodyTimeout }},
		{"max-idle-per-backend", func() { s.MaxIdlePerBackend = flags.MaxIdlePerBackend }},
		{"max-conns", func() { s.MaxConns = flags.MaxConns }},
		{"max-slow-bodies-per-ip", func() { s.MaxSlowBodiesPerIP = flags.MaxSlowBodiesPerIP }},
		{"drain", func() { s.Drain = flags.Drain }},
		{"shutdown", func() { s.Shutdown = flags.Shutdown }},
		{"loops", func() { s.Loops = flags.Loops }},
		{"accept-proxy-from", func() { s.AcceptProxyFrom = flags.AcceptProxyFrom }},
		{"trusted-proxy", func() { s.TrustedProxies = flags.TrustedProxies }},
		{"access-log", func() { s.AccessLog = flags.AccessLog }},
	} {
		if given(f.flag) {
			f.apply()
		}
	}
	if err := s.Validate(); err != nil {
		return s, fmt.Errorf("invalid settings:\n%w", err)
	}
	return s, nil
}
