package config

import (
	"errors"
	"fmt"
	"maps"
	"math"
	"net"
	"net/netip"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"time"
	"unicode"
	"unicode/utf8"

	"github.com/zero502/zero502/infra/dnsset"
	"github.com/zero502/zero502/infra/secrets"
	"golang.org/x/net/idna"
)

// FieldError is one refused value: the key, the value and the rule it breaks.
type FieldError struct {
	Key   string
	Value any
	Rule  string
}

func (e *FieldError) Error() string {
	return fmt.Sprintf("%s: %v: %s", e.Key, e.Value, e.Rule)
}

var nameRE = regexp.MustCompile(`^[a-z0-9][a-z0-9_.-]*$`)

// headerNameRE is an HTTP header field name (RFC 9110's token).
var headerNameRE = regexp.MustCompile("^[!#$%&'*+.^_`|~0-9A-Za-z-]+$")

// userRE is what services[].user accepts: a user name as useradd allows (no leading -, no : or
// space) or a numeric uid.
var userRE = regexp.MustCompile(`^[A-Za-z0-9_][A-Za-z0-9_.-]*[$]?$`)

// Validate checks every value on its own (types, signs, ranges, required fields). How values
// relate to each other is the business of package invariants, not of Validate: a config can be
// valid and still violate an invariant. All problems are returned together.
func (c *Config) Validate() error {
	var errs []error
	bad := func(key string, value any, rule string) {
		errs = append(errs, &FieldError{Key: key, Value: value, Rule: rule})
	}
	positive := func(key string, d time.Duration) {
		if d <= 0 {
			bad(key, d, "must be a positive duration")
		}
	}
	nonNegative := func(key string, d time.Duration) {
		if d < 0 {
			bad(key, d, "must not be negative")
		}
	}
	atLeast := func(key string, n, min int) {
		if n < min {
			bad(key, n, fmt.Sprintf("must be at least %d", min))
		}
	}
	atMost := func(key string, n, max int, why string) {
		if n > max {
			bad(key, n, fmt.Sprintf("must be at most %d%s", max, why))
		}
	}
	threshold := func(key string, n, min int) {
		atLeast(key, n, min)
		atMost(key, n, MaxThreshold, " checks in a row: more would keep a failing target for hours")
	}
	// hostPort is a listener (host:port): an empty host is every interface, port 0 any free port.
	hostPort := func(key, v string) {
		if _, port, err := net.SplitHostPort(v); err != nil {
			bad(key, fmt.Sprintf("%q", v), "must be host:port, e.g. 127.0.0.1:8080")
		} else if p, err := strconv.Atoi(port); err != nil || p < 0 || p > 65535 {
			bad(key, fmt.Sprintf("%q", v), "port must be a number from 0 to 65535")
		}
	}
	// dialAddr is an address zero502 connects to (host:port): it needs a host (a name or an IP)
	// and a port from 1 to 65535.
	dialAddr := func(key, v string) {
		host, port, err := net.SplitHostPort(v)
		if err != nil {
			bad(key, fmt.Sprintf("%q", v), "must be host:port, e.g. 10.0.0.5:8081 (an IPv6 address in brackets: [2001:db8::1]:8081)")
			return
		}
		if rule := hostRule(host); rule != "" {
			bad(key, fmt.Sprintf("%q", v), "host "+strings.TrimSuffix(rule, ", without a port")+": zero502 connects to it")
		}
		if p, err := strconv.Atoi(port); err != nil || p < 1 || p > 65535 {
			bad(key, fmt.Sprintf("%q", v), "must have a port from 1 to 65535: zero502 connects to it")
		}
	}
	// path is the path of a request zero502 sends (a health check, a smoke request): a request
	// line carries no space or control character (percent-encode one: %20).
	path := func(key, v string) {
		if !strings.HasPrefix(v, "/") || strings.IndexFunc(v, func(r rune) bool { return unicode.IsSpace(r) || unicode.IsControl(r) }) >= 0 {
			bad(key, fmt.Sprintf("%q", v), "must be a path starting with /, without spaces or control characters (percent-encode them: %20)")
		}
	}

	b := c.Balancer
	switch b.Kind {
	case BalancerInHouse:
		hostPort("balancer.listen", b.Listen)
		hostPort("balancer.admin", b.Admin)
		if _, port, err := net.SplitHostPort(b.Admin); err == nil && port == "0" && len(b.Admins) == 0 {
			// The deployer connects to it (AdminAddrs); an empty host dials this machine.
			bad("balancer.admin", fmt.Sprintf("%q", b.Admin), "must have a port from 1 to 65535: without balancer.admins the deployer connects to it")
		}
		for i, a := range b.Admins {
			dialAddr(fmt.Sprintf("balancer.admins[%d]", i), a)
		}
	case BalancerEdges:
		if len(b.Admins) == 0 {
			bad("balancer.admins", "[]", "is required when balancer.kind is edges: the admin API (host:port) of every edge")
		}
		for i, a := range b.Admins {
			dialAddr(fmt.Sprintf("balancer.admins[%d]", i), a)
		}
	case BalancerDNS:
		if b.Record.Name == "" {
			bad("balancer.record.name", `""`, "is required when balancer.kind is dns: the edges' A record, e.g. edge.example.com.")
		}
		if (b.Record.ZoneFile == "") == (b.Record.Route53ZoneID == "") {
			bad("balancer.record", fmt.Sprintf("zone_file %q, route53_zone_id %q", b.Record.ZoneFile, b.Record.Route53ZoneID),
				"set exactly one of zone_file (served by zero502 dns serve) and route53_zone_id")
		}
		if !c.Edge.Configured() {
			bad("edge.drain", c.Edge.Drain, "must be set when balancer.kind is dns: how long an edge keeps forwarding after it leaves the A set (I6)")
		}
		if c.Edge.DNSTTL == 0 {
			bad("edge.dns_ttl", c.Edge.DNSTTL, "must be set when balancer.kind is dns: the TTL the edges' A records carry, which "+
				"the deployer waits out after taking an edge out of the set before it stops it, and I6 holds edge.drain to (whole "+
				"seconds from 1s to 24h, e.g. 60s)")
		} else if _, err := dnsset.TTL("edge.dns_ttl", c.Edge.DNSTTL); err != nil {
			bad("edge.dns_ttl", c.Edge.DNSTTL, "must be whole seconds from 1s to 24h when balancer.kind is dns: the TTL the edges' A records carry")
		}
	case BalancerALB:
		if b.TargetGroupARN == "" {
			bad("balancer.target_group_arn", `""`, "is required when balancer.kind is alb")
		} else if tg, err := ParseTargetGroupARN(b.TargetGroupARN); err != nil {
			bad("balancer.target_group_arn", fmt.Sprintf("%q", b.TargetGroupARN), err.Error())
		} else if b.Region != "" && b.Region != tg.Region {
			bad("balancer.region", fmt.Sprintf("%q", b.Region), fmt.Sprintf("differs from the region of balancer.target_group_arn, %s: "+
				"ELBv2 is regional and finds a target group only in its own region; set balancer.region to %s", tg.Region, tg.Region))
		}
	case BalancerNone:
	default:
		bad("balancer.kind", fmt.Sprintf("%q", b.Kind), "must be inhouse, alb, edges, dns or none")
	}
	path("balancer.health_path", b.HealthPath)
	positive("balancer.interval", b.Interval)
	positive("balancer.timeout", b.Timeout)
	threshold("balancer.unhealthy_threshold", b.UnhealthyThreshold, 1)
	threshold("balancer.healthy_threshold", b.HealthyThreshold, 1)
	positive("balancer.idle_timeout", b.IdleTimeout)
	positive("balancer.connect_timeout", b.ConnectTimeout)
	positive("balancer.header_timeout", b.HeaderTimeout)
	atLeast("balancer.max_header_bytes", b.MaxHeaderBytes, 1024)
	atMost("balancer.max_header_bytes", b.MaxHeaderBytes, 1<<20, " (1 MiB): the in-house LB reads a request head up to it in memory")
	for _, e := range b.AcceptProxyFrom {
		if _, err := ParseRanges("balancer.accept_proxy_from", []string{e}); err != nil {
			bad("balancer.accept_proxy_from", fmt.Sprintf("%q", e), "must be an IP address or a CIDR range such as 10.0.0.0/8")
		}
	}
	for _, e := range b.TrustedProxies {
		if _, err := ParseRanges("balancer.trusted_proxies", []string{e}); err != nil {
			bad("balancer.trusted_proxies", fmt.Sprintf("%q", e), "must be an IP address or a CIDR range such as 10.0.0.0/8")
		}
	}
	if t := b.TLS; t.On() || len(t.Certificates) > 0 || len(t.ACME.Domains) > 0 || t.RedirectHTTP != "" {
		switch {
		case b.Kind != BalancerInHouse:
			bad("balancer.tls.listen", fmt.Sprintf("%q", t.Listen), "TLS is the in-house LB's: balancer.kind must be inhouse (an ALB terminates TLS at its HTTPS listener)")
		case !t.On():
			bad("balancer.tls.listen", `""`, "is required with tls.certificates, tls.acme.domains or tls.redirect_http: the HTTPS listener, e.g. 0.0.0.0:443")
		default:
			hostPort("balancer.tls.listen", t.Listen)
		}
		if t.On() && len(t.Certificates) == 0 && len(t.ACME.Domains) == 0 {
			bad("balancer.tls.certificates", "[]", "the TLS listener needs certificate files or tls.acme.domains")
		}
		for i, c := range t.Certificates {
			key := fmt.Sprintf("balancer.tls.certificates[%d]", i)
			if c.Cert == "" {
				bad(key+".cert", `""`, "is required: the certificate chain (PEM) of key "+c.Key)
			}
			if c.Key == "" {
				bad(key+".key", `""`, "is required: the private key (PEM, mode 0600) of certificate "+c.Cert)
			}
		}
		if t.RedirectHTTP != "" {
			hostPort("balancer.tls.redirect_http", t.RedirectHTTP)
		}
		positive("balancer.tls.handshake_timeout", t.HandshakeTimeout)
		if a := t.ACME; len(a.Domains) > 0 {
			if a.Email == "" {
				bad("balancer.tls.acme.email", `""`, "is required with tls.acme.domains: the ACME account's contact")
			}
			if a.CacheDir == "" {
				bad("balancer.tls.acme.cache_dir", `""`, "is required with tls.acme.domains: where the account key and certificates are kept (0700)")
			}
			if !strings.HasPrefix(a.Directory, "https://") {
				bad("balancer.tls.acme.directory", fmt.Sprintf("%q", a.Directory), "must be an https:// ACME directory URL")
			}
			for i, d := range a.Domains {
				if rule := acmeDomainRule(d); rule != "" {
					bad(fmt.Sprintf("balancer.tls.acme.domains[%d]", i), fmt.Sprintf("%q", d), rule)
				}
			}
		}
	}
	if b.Kind == BalancerInHouse {
		errs = append(errs, b.listenerClashes()...)
	}
	if rule := RetryAfterRule(b.MaintenanceRetryAfter); rule != "" {
		bad("balancer.maintenance_retry_after", b.MaintenanceRetryAfter.String(), rule+": the maintenance page's Retry-After")
	}
	nonNegative("balancer.deregistration_delay", b.DeregistrationDelay)
	nonNegative("balancer.slow_start", b.SlowStart)

	positive("drain.window", c.Drain.Window)
	positive("drain.shutdown", c.Drain.Shutdown)
	positive("drain.stop_grace", c.Drain.StopGrace)
	positive("drain.max_recovery", c.Drain.MaxRecovery)

	positive("watchdog.interval", c.Watchdog.Interval)
	threshold("watchdog.heal_after", c.Watchdog.HealAfter, 1)
	positive("watchdog.check_timeout", c.Watchdog.CheckTimeout)
	// absolute is a lock or state path: one file for every process that reads this config (the
	// deployer over ssh in the deploy user's home, the watchdog under systemd in /), never
	// resolved against each one's own working directory.
	absolute := func(key, p string) {
		if p != "" && !filepath.IsAbs(userPath(p)) {
			bad(key, fmt.Sprintf("%q", p), "must be an absolute path: the deployer (over ssh, in the deploy user's home) "+
				"and the watchdog (under systemd, in /) would each lock a different file")
		}
	}
	if c.Watchdog.StateDir == "" {
		bad("watchdog.state_dir", `""`, "is required")
	}
	absolute("watchdog.state_dir", c.Watchdog.StateDir)
	absolute("watchdog.lock_path", c.Watchdog.LockPath)
	absolute("rollout.lock_path", c.Rollout.LockPath)

	positive("app.keepalive_idle_timeout", c.App.KeepAliveIdleTimeout)

	nonNegative("edge.drain", c.Edge.Drain)
	nonNegative("edge.dns_ttl", c.Edge.DNSTTL)
	nonNegative("edge.check_interval", c.Edge.CheckInterval)
	threshold("edge.unhealthy_threshold", c.Edge.UnhealthyThreshold, 0)
	if c.Edge.Configured() {
		positive("edge.check_interval", c.Edge.CheckInterval)
		atLeast("edge.unhealthy_threshold", c.Edge.UnhealthyThreshold, 1)
	}
	for i, o := range c.Edge.Origins {
		key := fmt.Sprintf("edge.origins[%d]", i)
		dialAddr(key, o)
		if j := slices.Index(c.Edge.Origins[:i], o); j >= 0 {
			// zero502 edge forward refuses an upstream given twice (--origin)
			bad(key, fmt.Sprintf("%q", o), fmt.Sprintf("is already edge.origins[%d]: list each upstream once", j))
		}
	}
	uc := c.Edge.UpstreamCheck
	if uc.Path != "" {
		path("edge.upstream_check.path", uc.Path)
	}
	positive("edge.upstream_check.interval", uc.Interval)
	positive("edge.upstream_check.timeout", uc.Timeout)
	if uc.Timeout > 0 && uc.Interval > 0 && uc.Timeout >= uc.Interval {
		bad("edge.upstream_check.timeout", uc.Timeout, fmt.Sprintf("must be below edge.upstream_check.interval (%s): a check ends before the next starts", uc.Interval))
	}
	threshold("edge.upstream_check.healthy_threshold", uc.HealthyThreshold, 1)
	threshold("edge.upstream_check.unhealthy_threshold", uc.UnhealthyThreshold, 1)

	atLeast("rollout.batch", c.Rollout.Batch, 1)
	if c.Rollout.Runtime != RuntimeProcess && c.Rollout.Runtime != RuntimeDocker {
		bad("rollout.runtime", fmt.Sprintf("%q", c.Rollout.Runtime), "must be process or docker")
	}
	positive("rollout.healthy_deadline", c.Rollout.HealthyDeadline)
	positive("rollout.lock_lease", c.Rollout.LockLease)
	positive("rollout.progress_deadline", c.Rollout.ProgressDeadline)
	nonNegative("rollout.bake", c.Rollout.Bake)
	if c.Rollout.Strategy != StopFirst && c.Rollout.Strategy != StartFirst {
		bad("rollout.strategy", fmt.Sprintf("%q", c.Rollout.Strategy), "must be stop-first or start-first")
	}
	atLeast("rollout.max_unavailable", c.Rollout.MaxUnavailable, 0)
	if r := c.Rollout; (r.MaxUnavailable > 0 || r.MaxUnavailableShare > 0) && r.Strategy == StopFirst {
		// A share is refused even where it comes to 0 hosts, so that a larger fleet does not
		// refuse a config a smaller one took.
		value := any(r.MaxUnavailable)
		if r.MaxUnavailableShare > 0 {
			value = fmt.Sprintf("%d%%", r.MaxUnavailableShare)
		}
		bad("rollout.max_unavailable", value, "applies to rollout.strategy start-first only: every host of a "+
			"stop-first batch leaves rotation (rollout.batch is how many at once); remove it or set rollout.strategy start-first")
	}
	an := c.Rollout.Analysis
	positive("rollout.analysis.window", an.Window)
	atLeast("rollout.analysis.min_requests", an.MinRequests, 0)
	for _, r := range []struct {
		key string
		v   float64
	}{{"rollout.analysis.max_error_rate", an.MaxErrorRate}, {"rollout.analysis.max_error_rate_increase", an.MaxErrorRateIncrease}} {
		if r.v < 0 || r.v > 1 || r.v != r.v {
			bad(r.key, r.v, "must be a share from 0 to 1 (0.05: 5 %)")
		}
	}
	if an.MaxP99Increase < 0 || an.MaxP99Increase != an.MaxP99Increase || math.IsInf(an.MaxP99Increase, 0) {
		bad("rollout.analysis.max_p99_increase", an.MaxP99Increase, "must be 0 (off) or a positive share (0.5: 50 % slower)")
	}
	if an.MinP99Increase < 0 {
		bad("rollout.analysis.min_p99_increase", an.MinP99Increase, "must be 0 (the share alone) or a positive duration (5ms)")
	}
	if an.ExpectedRate < 0 || an.ExpectedRate != an.ExpectedRate || math.IsInf(an.ExpectedRate, 0) {
		bad("rollout.analysis.expected_rate", an.ExpectedRate, "must be 0 (unknown) or the requests per second the service gets through the balancer")
	}
	if an.OnNoTraffic != OnNoTrafficPass && an.OnNoTraffic != onNoTrafficFail {
		bad("rollout.analysis.on_no_traffic", fmt.Sprintf("%q", an.OnNoTraffic), "must be pass or fail")
	}
	ca := c.Rollout.Canary
	atLeast("rollout.canary.hosts", ca.Hosts, 0)
	if ca.Hosts > 0 && len(c.Hosts) > 0 && ca.Hosts >= len(c.Hosts) && len(c.Hosts) > 1 {
		bad("rollout.canary.hosts", ca.Hosts, fmt.Sprintf("must be fewer than the %d hosts (the rest is what a canary is compared with); 0 turns the canary off", len(c.Hosts)))
	}
	if ca.Weight < 1 || ca.Weight > 100 {
		bad("rollout.canary.weight", ca.Weight, "must be a share of the traffic in percent, from 1 to 100")
	}
	positive("rollout.canary.duration", ca.Duration)
	if c.Rollout.OnFailure != OnFailureRollback && c.Rollout.OnFailure != onFailureStop {
		bad("rollout.on_failure", fmt.Sprintf("%q", c.Rollout.OnFailure), "must be rollback or stop")
	}
	alarms := map[string]int{}
	for i, name := range c.Rollout.Alarms {
		key := fmt.Sprintf("rollout.alarms[%d]", i)
		switch n := utf8.RuneCountInString(name); {
		case strings.TrimSpace(name) == "":
			bad(key, fmt.Sprintf("%q", name), "must name a CloudWatch alarm: an empty name matches none")
		case n > MaxAlarmName:
			bad(key, fmt.Sprintf("%q", name), fmt.Sprintf("is %d characters: a CloudWatch alarm name has at most %d", n, MaxAlarmName))
		}
		if j, dup := alarms[name]; dup {
			bad(key, fmt.Sprintf("%q", name), fmt.Sprintf("is already rollout.alarms[%d]: list each alarm once", j))
		} else {
			alarms[name] = i
		}
	}

	if lh := c.Rollout.LockHost; lh != "" && !slices.ContainsFunc(c.Hosts, func(h Host) bool { return h.Name == lh }) && len(c.Hosts) > 0 {
		bad("rollout.lock_host", fmt.Sprintf("%q", lh), "must name one of hosts[].name (the host that keeps the fleet lock); empty: the first host")
	}
	// noNUL refuses a word of a command run without a shell that no program can be given.
	noNUL := func(key string, words []string) {
		for j, w := range words {
			if strings.ContainsRune(w, 0) {
				bad(fmt.Sprintf("%s[%d]", key, j), fmt.Sprintf("%q", w), "must not contain a NUL byte: no program can be given one")
			}
		}
	}
	for _, h := range c.Hooks.Named() {
		key := "hooks." + h.Name
		positive(key+".timeout", h.Hook.Timeout)
		if h.Hook.Set() && strings.TrimSpace(h.Hook.Command[0]) == "" {
			bad(key+".command[0]", `""`, "must name the program to run, e.g. /usr/local/bin/notify or sh (with \"-c\", \"…\")")
		}
		noNUL(key+".command", h.Hook.Command)
	}
	if cmd := c.Secrets.Command; len(cmd) > 0 && strings.TrimSpace(cmd[0]) == "" {
		bad("secrets.command[0]", fmt.Sprintf("%q", cmd[0]), "must name the program to run, e.g. /usr/local/bin/op (with its arguments), or leave secrets.command out")
	}
	noNUL("secrets.command", c.Secrets.Command)

	seen := map[string]bool{}
	for i, s := range c.Services {
		key := fmt.Sprintf("services[%d]", i)
		if !nameRE.MatchString(s.Name) {
			bad(key+".name", fmt.Sprintf("%q", s.Name), "is required: lower-case letters, digits, - _ .")
		} else if seen[s.Name] {
			bad(key+".name", fmt.Sprintf("%q", s.Name), "must be unique among services")
		}
		seen[s.Name] = true
		if c.Rollout.Runtime == RuntimeProcess && len(s.Command) == 0 {
			bad(key+".command", "[]", "is required with the process runtime")
		}
		noNUL(key+".command", s.Command)
		if c.Rollout.Runtime == RuntimeProcess && len(s.Command) > 0 && strings.Contains(s.Command[0], "/") && !filepath.IsAbs(s.Command[0]) {
			bad(key+".command[0]", fmt.Sprintf("%q", s.Command[0]), "must be a name looked up on the service's PATH, or an absolute path: "+
				"a service runs in the directory /, whoever starts it, so a relative path would not name the program you mean")
		}
		for _, name := range slices.Sorted(maps.Keys(s.Env)) {
			switch v := s.Env[name]; {
			case !EnvName(name):
				bad(key+".env", fmt.Sprintf("%q", name), EnvNameRule)
			case strings.ContainsRune(v, 0):
				bad(key+".env."+name, fmt.Sprintf("%q", v), "must not contain a NUL byte: no process can be given one")
			}
		}
		if c.Rollout.Runtime == RuntimeDocker && s.Image == "" {
			bad(key+".image", `""`, "is required with the docker runtime")
		}
		if s.Port < 0 || s.Port > 65535 {
			bad(key+".port", s.Port, "must be from 0 (no port) to 65535")
		}
		if s.HealthPath != "" {
			path(key+".health_path", s.HealthPath)
		}
		if s.Health.Path != s.HealthPath {
			bad(key+".health.path", fmt.Sprintf("%q", s.Health.Path), fmt.Sprintf("differs from %s.health_path %q: set one of the two", key, s.HealthPath))
		} else if s.Health.Path != "" {
			path(key+".health.path", s.Health.Path)
		}
		if s.Health.ExpectStatus < 100 || s.Health.ExpectStatus > 599 {
			bad(key+".health.expect_status", s.Health.ExpectStatus, "must be an HTTP status from 100 to 599")
		}
		nonNegative(key+".health.timeout", s.Health.Timeout)
		for j, sm := range s.Smoke {
			sk := fmt.Sprintf("%s.smoke[%d]", key, j)
			if sm.Path == "" {
				bad(sk+".path", `""`, "is required: the path of the request to send, e.g. /orders?dry-run=1")
			} else {
				path(sk+".path", sm.Path)
			}
			if !slices.Contains([]string{"GET", "HEAD", "POST", "PUT", "PATCH", "DELETE", "OPTIONS"}, sm.Method) {
				bad(sk+".method", fmt.Sprintf("%q", sm.Method), "must be GET, HEAD, POST, PUT, PATCH, DELETE or OPTIONS")
			}
			if sm.ExpectStatus < 100 || sm.ExpectStatus > 599 {
				bad(sk+".expect_status", sm.ExpectStatus, "must be an HTTP status from 100 to 599")
			}
			nonNegative(sk+".timeout", sm.Timeout)
		}
		if s.Drain != DrainHandshake && s.Drain != DrainBalancer {
			bad(key+".drain", fmt.Sprintf("%q", s.Drain), "must be handshake or balancer")
		}
		switch s.Kind {
		case KindApp:
		case KindLB:
			if b.Kind != BalancerEdges {
				bad(key+".kind", `"lb"`, fmt.Sprintf("needs balancer.kind edges (the edges in front of the LB instances), not %q", b.Kind))
			}
		case KindEdge:
			if b.Kind != BalancerDNS {
				bad(key+".kind", `"edge"`, fmt.Sprintf("needs balancer.kind dns (the A record set the edges are in), not %q", b.Kind))
			}
			if s.Drain != DrainBalancer {
				bad(key+".drain", fmt.Sprintf("%q", s.Drain), "must be balancer for a service of kind edge: "+
					"the deployer takes the edge out of the A set and waits out the TTL before its stop signal")
			}
			if c.Rollout.Strategy == StartFirst {
				bad("rollout.strategy", `"start-first"`, fmt.Sprintf("cannot deploy %s, of kind edge: an A record carries no port, so "+
					"a new edge on its host's other port could never be reached, and retiring the old one would take the host out of "+
					"the set; use stop-first (each edge leaves the set, drains, and comes back with the new version)", key))
			}
		default:
			bad(key+".kind", fmt.Sprintf("%q", s.Kind), "must be app, lb or edge")
		}
		if s.Verify.VersionPath != "" {
			path(key+".verify.version_path", s.Verify.VersionPath)
		}
		if h := s.Verify.VersionHeader; h != "" && !headerNameRE.MatchString(h) {
			bad(key+".verify.version_header", fmt.Sprintf("%q", h), "must be an HTTP header name (letters, digits and !#$%&'*+-.^_`|~, "+
				"e.g. X-Version): the response header of health.path that names the version")
		}
		switch {
		case len(s.Ports) == 0:
		case len(s.Ports) != 2 || s.Ports[0] == s.Ports[1]:
			bad(key+".ports", s.Ports, "must be two different ports [A, B]: the new instance starts on the one the old does not hold")
		case s.Port != s.Ports[0]:
			bad(key+".port", s.Port, fmt.Sprintf("must equal ports[0] (%d) or be left out", s.Ports[0]))
		default:
			for j, p := range s.Ports {
				if p < 1 || p > 65535 {
					bad(fmt.Sprintf("%s.ports[%d]", key, j), p, "must be from 1 to 65535")
				}
			}
		}
		if c.Rollout.Strategy == StartFirst && s.Port > 0 && len(s.Ports) != 2 {
			bad(key+".ports", s.Ports, "rollout.strategy start-first needs two ports per service with a port, e.g. ports: [8080, 8081]: "+
				"the new instance starts beside the old one on the other port")
		}
		if s.User != "" {
			name, group, grouped := strings.Cut(s.User, ":")
			switch {
			case !userRE.MatchString(name) || grouped && !userRE.MatchString(group):
				bad(key+".user", fmt.Sprintf("%q", s.User), "must be a user name (letters, digits, . _ -, not starting with -) or a numeric uid, "+
					"and with the docker runtime optionally :group or :gid (docker run --user)")
			case grouped && c.Rollout.Runtime != RuntimeDocker:
				bad(key+".user", fmt.Sprintf("%q", s.User), "a group (user:group) is for the docker runtime: the process runtime "+
					"runs the service with its user's own groups; give the user alone")
			}
		}
		if !slices.Contains(stopSignals, s.StopSignal) {
			bad(key+".stop_signal", fmt.Sprintf("%q", s.StopSignal), "must be one of "+strings.Join(stopSignals, ", "))
		}
		for j, name := range s.Secrets {
			switch {
			case !secrets.ValidName(name):
				bad(fmt.Sprintf("%s.secrets[%d]", key, j), fmt.Sprintf("%q", name), "must be an environment variable's name ([A-Za-z_][A-Za-z0-9_]*)")
			case slices.Contains(s.Secrets[:j], name):
				bad(fmt.Sprintf("%s.secrets[%d]", key, j), fmt.Sprintf("%q", name), "is listed twice")
			default:
				if _, ok := s.Env[name]; ok {
					bad(fmt.Sprintf("%s.secrets[%d]", key, j), fmt.Sprintf("%q", name), "is also in "+key+".env: give a secret's value in secrets.file, "+
						"secrets.command or the deploy's environment, never in the config")
				}
			}
		}
	}
	if i := slices.IndexFunc(c.Services, func(s Service) bool { return s.Name == b.Service }); b.Service != "" && i < 0 {
		bad("balancer.service", fmt.Sprintf("%q", b.Service), "must name one of the services")
	} else if b.Service != "" && c.Services[i].Port == 0 {
		bad("balancer.service", fmt.Sprintf("%q", b.Service), fmt.Sprintf("names services[%d], which has no port: the balancer's "+
			"targets are the balanced service's port on every host; name a service with a port, or leave it out (the first one with a port)", i))
	}
	positive("secrets.command_timeout", c.Secrets.CommandTimeout)
	seen = map[string]bool{}
	for i, h := range c.Hosts {
		key := fmt.Sprintf("hosts[%d]", i)
		if !nameRE.MatchString(h.Name) {
			bad(key+".name", fmt.Sprintf("%q", h.Name), "is required: lower-case letters, digits, - _ .")
		} else if seen[h.Name] {
			bad(key+".name", fmt.Sprintf("%q", h.Name), "must be unique among hosts")
		}
		seen[h.Name] = true
		if h.Address == "" {
			bad(key+".address", `""`, "is required (an IP or name where the host's services answer)")
		} else if rule := hostRule(h.Address); rule != "" {
			bad(key+".address", fmt.Sprintf("%q", h.Address), rule+": where the host's services answer, without a port "+
				"(each service's port, plus port_offset, is added)")
		}
		absolute(key+".state_dir", h.StateDir)
		absolute(key+".lock_path", h.LockPath)
		if h.PortOffset < 0 || h.PortOffset > 60000 {
			bad(key+".port_offset", h.PortOffset, "must be from 0 to 60000")
		} else if s, p, ok := c.highestPort(); ok && p+h.PortOffset > 65535 {
			bad(key+".port_offset", h.PortOffset, fmt.Sprintf("%s %d + port_offset %d = %d: a port must be from 1 to 65535",
				s, p, h.PortOffset, p+h.PortOffset))
		}
	}
	errs = append(errs, c.portClashes()...)
	errs = append(errs, c.albTargets()...)
	return errors.Join(errs...)
}

// EnvNameRule is what a name of services[].env must be: what execve takes before a '=' (Docker
// takes any such name, dotted ones too: spring.datasource.url).
const EnvNameRule = "a name must not be empty nor hold '=' or a NUL byte: it is what comes before the '=' of NAME=value"

// EnvName reports whether name is one EnvNameRule allows. Without it, a name such as
// "PATH=/opt/evil/bin" would set another variable than the one it names.
func EnvName(name string) bool { return name != "" && !strings.ContainsAny(name, "=\x00") }

// hostLabelRE is one label of a host name: letters, digits, - and _ (not at either end).
var hostLabelRE = regexp.MustCompile(`^[A-Za-z0-9_]([A-Za-z0-9_-]{0,61}[A-Za-z0-9_])?$`)

// hostRule is "" when h is a host name (web-1, db.internal, shop.example.com.) or an IP address
// (10.0.0.1, 2001:db8::1, without brackets), else the rule it breaks.
func hostRule(h string) string {
	const rule = "must be a host name or an IP address (IPv6 without brackets), without a port"
	if h == "" {
		return rule
	}
	if _, err := netip.ParseAddr(h); err == nil {
		return ""
	}
	name := strings.TrimSuffix(h, ".")
	if len(name) == 0 || len(name) > 253 {
		return rule
	}
	labels := strings.Split(name, ".")
	for _, l := range labels {
		if !hostLabelRE.MatchString(l) {
			return rule
		}
	}
	if strings.Trim(labels[len(labels)-1], "0123456789") == "" {
		return rule // 10.0.0.256: no IP, and no name either (a top-level domain is not a number)
	}
	return ""
}

// highestPort is the highest port (before a host's port_offset) of any service, and which
// service's port it is; false when no service has a port.
func (c *Config) highestPort() (string, int, bool) {
	var which string
	high := 0
	for i, s := range c.Services {
		for _, p := range s.allPorts() {
			if p.port > high {
				high, which = p.port, fmt.Sprintf("services[%d].%s", i, p.key)
			}
		}
	}
	return which, high, high > 0
}

// RequireFleet refuses a config without services or hosts, for the commands that act on a fleet.
func (c *Config) RequireFleet() error {
	var errs []error
	if len(c.Services) == 0 {
		errs = append(errs, &FieldError{Key: "services", Value: "[]", Rule: "needs at least one service to deploy"})
	}
	if len(c.Hosts) == 0 {
		errs = append(errs, &FieldError{Key: "hosts", Value: "[]", Rule: "needs at least one host to deploy to"})
	}
	return errors.Join(errs...)
}

// TargetGroupARN is an ELBv2 target group's ARN, in parts:
// arn:PARTITION:elasticloadbalancing:REGION:ACCOUNT:targetgroup/NAME/ID.
type TargetGroupARN struct {
	Partition, Region, Account, Name, ID string
}

// regionRE is an AWS region name: eu-west-1, us-gov-west-1, cn-north-1.
var regionRE = regexp.MustCompile(`^[a-z]{2}(-[a-z]+)+-[0-9]+$`)

// ParseTargetGroupARN splits a target group ARN into its parts; the error says which part is
// wrong and what the ARN looks like (aws elbv2 describe-target-groups shows it).
func ParseTargetGroupARN(arn string) (TargetGroupARN, error) {
	const want = "must be a target group ARN, arn:aws:elasticloadbalancing:REGION:ACCOUNT:targetgroup/NAME/ID " +
		"(aws elbv2 describe-target-groups --names NAME shows it)"
	parts := strings.SplitN(arn, ":", 6)
	if len(parts) != 6 || parts[0] != "arn" {
		return TargetGroupARN{}, errors.New(want)
	}
	tg := TargetGroupARN{Partition: parts[1], Region: parts[3], Account: parts[4]}
	resource := strings.Split(parts[5], "/")
	switch {
	case !strings.HasPrefix(tg.Partition, "aws"):
		return TargetGroupARN{}, fmt.Errorf("partition %q is not an AWS partition (aws, aws-cn, aws-us-gov): %s", tg.Partition, want)
	case parts[2] != "elasticloadbalancing":
		return TargetGroupARN{}, fmt.Errorf("service %q is not elasticloadbalancing: %s", parts[2], want)
	case !regionRE.MatchString(tg.Region):
		return TargetGroupARN{}, fmt.Errorf("region %q is not an AWS region such as eu-west-1: %s", tg.Region, want)
	case tg.Account == "" || strings.Trim(tg.Account, "0123456789") != "":
		return TargetGroupARN{}, fmt.Errorf("account %q is not an account ID (digits): %s", tg.Account, want)
	case len(resource) != 3 || resource[0] != "targetgroup" || resource[1] == "" || resource[2] == "":
		return TargetGroupARN{}, fmt.Errorf("resource %q is not targetgroup/NAME/ID: %s", parts[5], want)
	}
	tg.Name, tg.ID = resource[1], resource[2]
	return tg, nil
}

// acmeDomainRule is the rule an ACME domain breaks ("" when it keeps it): a DNS host name in
// ASCII, labels of letters, digits and hyphens (an internationalised name in its xn-- form, as
// clients send it in their SNI), not an IP address and no wildcard. The ACME client drops from
// its list, without a word, a name its IDNA lookup refuses (an underscore, a label starting with
// a hyphen): refused here instead, naming it.
func acmeDomainRule(d string) string {
	const rule = "must be a DNS host name: labels of letters, digits and hyphens (not at a label's start or end), " +
		"an internationalised name in its xn-- form, no wildcard (HTTP-01 and TLS-ALPN-01 cannot prove one), not an IP address"
	name := strings.TrimSuffix(d, ".")
	if name == "" || len(name) > 253 || net.ParseIP(name) != nil {
		return rule
	}
	for _, label := range strings.Split(name, ".") {
		if label == "" || len(label) > 63 || label[0] == '-' || label[len(label)-1] == '-' ||
			strings.IndexFunc(label, func(r rune) bool {
				return !(r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' || r == '-')
			}) >= 0 {
			return rule
		}
	}
	if ascii, err := idna.Lookup.ToASCII(name); err != nil || !strings.EqualFold(ascii, name) {
		return rule
	}
	return ""
}
