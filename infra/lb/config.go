package lb

import (
	"errors"
	"fmt"
	"net"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/zero502/zero502/infra/adminapi"
	"github.com/zero502/zero502/infra/config"
)

// Settings are every number and address the LB runs with. The balancer's numbers are the
// config's own type (config.BalancerNumbers); the admin API shows them back (GET
// /admin/settings, adminapi.Settings).
type Settings struct {
	Listen     string   // proxy listener host:port
	Admin      string   // admin listener host:port; "" disables it
	AdminToken string   // bearer token, required when Admin is not on loopback
	Backends   []string // host:port, in order
	// TLS is HTTPS on a second listener (config mode only: balancer.tls; tls.go).
	TLS config.BalancerTLS

	// BalancerNumbers are the health checks and backend timeouts: the config's balancer.* numbers,
	// under the same names (the LB has no use for the ALB's DeregistrationDelay and SlowStart).
	config.BalancerNumbers

	ClientHeaderTimeout time.Duration // a client's request head (and silence in its body)
	ClientIdleTimeout   time.Duration // an idle keep-alive client connection
	TunnelIdleTimeout   time.Duration // an upgraded (WebSocket) connection silent both ways
	BodyTimeout         time.Duration // silence while relaying a body: a response to the client, a request to a backend (then 504)
	MaxIdlePerBackend   int           // pooled upstream connections per backend
	// MaxConns caps the open client connections; one more is accepted and closed at once.
	MaxConns int
	// MaxSlowBodiesPerIP caps the request bodies per client IP still arriving after
	// SlowBodyAfter; the newest one over it gets 429 and its connection closes.
	MaxSlowBodiesPerIP int

	Drain    time.Duration // own drain window after SIGTERM: /_lb/health 503, still proxying
	Shutdown time.Duration // in-flight budget after the window
	// AccessLog turns on one JSON log line per request.
	AccessLog bool
	// Loops is the number of event loops (Linux); 0 is one per P (GOMAXPROCS).
	Loops int
	// AcceptProxyFrom are the peers (IP addresses or CIDR ranges) whose PROXY v1/v2 header sets
	// a connection's client address (X-Forwarded-For, the access log); a header from any other
	// peer closes the connection; connections without one pass. Empty: no sniffing at all.
	AcceptProxyFrom []string
	// TrustedProxies are the clients (IP addresses or CIDR ranges; the client address is the
	// PROXY header's when one was accepted) whose X-Forwarded-For is kept and appended to; from
	// any other client it is replaced by the client's address. Empty: replaced for everyone.
	TrustedProxies []string

	// slowPathOnly serves every connection on the goroutine path, as on systems without the
	// event loops: the tests' switch (ZERO502_TEST_LB_ENGINE=goroutines), never the user's.
	slowPathOnly bool
	// noRing has the event loops make their receives and sends one system call at a time, as
	// where io_uring is not allowed: the tests' switch, never the user's.
	noRing bool
}

// LabSettings are the defaults of lab mode (`zero502 lb PORT BACKEND...`): the reverse-proxy
// lab's timing with no flags. Checks every 500 ms with a 400 ms timeout and thresholds of 2:
// a dead or sick backend is out within about 1.5 s (the lab allows 4 s), a recovered one back
// within about 1 s (the lab allows 5 s); connect 1 s, response headers 3 s.
func LabSettings(listen string, backends []string) Settings {
	return Settings{
		Listen: listen, Backends: backends,
		BalancerNumbers: config.BalancerNumbers{
			HealthPath: "/health", Interval: 500 * time.Millisecond, Timeout: 400 * time.Millisecond,
			UnhealthyThreshold: 2, HealthyThreshold: 2,
			IdleTimeout: 4 * time.Second, ConnectTimeout: time.Second, HeaderTimeout: 3 * time.Second,
			MaxHeaderBytes: 64 << 10,
		},
		ClientHeaderTimeout: 10 * time.Second, ClientIdleTimeout: 60 * time.Second, TunnelIdleTimeout: time.Hour,
		BodyTimeout: 30 * time.Second, MaxIdlePerBackend: 256,
		MaxConns: defaultMaxConns(), MaxSlowBodiesPerIP: 8,
		Drain: 0, Shutdown: 10 * time.Second,
	}
}

// fromConfig takes listen, admin, backends (cfg.Targets()) and every number from the infra
// config, the drain window and shutdown budget from drain.window and drain.shutdown.
func fromConfig(cfg *config.Config) Settings {
	b := cfg.Balancer
	s := LabSettings(b.Listen, cfg.Targets())
	s.Admin, s.AdminToken = b.Admin, b.AdminToken
	s.BalancerNumbers = b.BalancerNumbers
	s.AcceptProxyFrom, s.TrustedProxies = b.AcceptProxyFrom, b.TrustedProxies
	s.Drain, s.Shutdown = cfg.Drain.Window, cfg.Drain.Shutdown
	s.TLS = b.TLS
	return s
}

// Validate refuses bad values before anything starts, naming the flag, the value and the rule.
func (s Settings) Validate() error {
	var errs []error
	bad := func(flag string, v any, rule string) {
		errs = append(errs, fmt.Errorf("--%s %v: %s", flag, v, rule))
	}
	positive := func(flag string, d time.Duration) {
		if d <= 0 {
			bad(flag, d, "must be a positive duration, e.g. 1s")
		}
	}
	positive("health-interval", s.Interval)
	positive("health-timeout", s.Timeout)
	if s.Timeout > 0 && s.Interval > 0 && s.Timeout >= s.Interval {
		bad("health-timeout", s.Timeout, fmt.Sprintf("must be below --health-interval (%s): a check must end before the next", s.Interval))
	}
	positive("idle-timeout", s.IdleTimeout)
	positive("connect-timeout", s.ConnectTimeout)
	positive("header-timeout", s.HeaderTimeout)
	positive("client-header-timeout", s.ClientHeaderTimeout)
	positive("client-idle-timeout", s.ClientIdleTimeout)
	positive("tunnel-idle-timeout", s.TunnelIdleTimeout)
	positive("body-timeout", s.BodyTimeout)
	positive("shutdown", s.Shutdown)
	if s.Drain < 0 {
		bad("drain", s.Drain, "must not be negative")
	}
	for _, t := range []struct {
		flag string
		n    int
	}{{"unhealthy-threshold", s.UnhealthyThreshold}, {"healthy-threshold", s.HealthyThreshold}} {
		switch {
		case t.n < 1:
			bad(t.flag, t.n, "must be at least 1")
		case t.n > config.MaxThreshold:
			bad(t.flag, t.n, fmt.Sprintf("must be at most %d checks in a row, as balancer.%s: more would keep a failing backend for hours",
				config.MaxThreshold, strings.ReplaceAll(t.flag, "-", "_")))
		}
	}
	if s.MaxHeaderBytes < 1024 || s.MaxHeaderBytes > 1<<20 {
		bad("max-header-bytes", s.MaxHeaderBytes, "must be from 1024 to 1048576")
	}
	if s.Loops < 0 || s.Loops > 1024 {
		bad("loops", s.Loops, "must be from 0 (one per CPU) to 1024")
	}
	if s.MaxConns < 1 {
		bad("max-conns", s.MaxConns, "must be at least 1")
	}
	if s.MaxSlowBodiesPerIP < 1 {
		bad("max-slow-bodies-per-ip", s.MaxSlowBodiesPerIP, "must be at least 1")
	}
	if s.MaxIdlePerBackend < 0 {
		bad("max-idle-per-backend", s.MaxIdlePerBackend, "must not be negative")
	}
	if !strings.HasPrefix(s.HealthPath, "/") || strings.ContainsAny(s.HealthPath, " \r\n") {
		bad("health-path", fmt.Sprintf("%q", s.HealthPath), "must be a path starting with / without spaces")
	}
	if err := checkHostPort(s.Listen); err != nil {
		bad("listen", fmt.Sprintf("%q", s.Listen), err.Error())
	}
	if s.Admin != "" {
		if err := checkHostPort(s.Admin); err != nil {
			bad("admin", fmt.Sprintf("%q", s.Admin), err.Error())
		} else if !adminapi.Loopback(s.Admin) && s.AdminToken == "" {
			bad("admin", fmt.Sprintf("%q", s.Admin), "is not on loopback: set an admin token (--admin-token-file, $ZERO502_LB_ADMIN_TOKEN or balancer.admin_token)")
		}
	}
	if _, err := config.ParseRanges("--accept-proxy-from", s.AcceptProxyFrom); err != nil {
		errs = append(errs, err)
	}
	if _, err := config.ParseRanges("--trusted-proxy", s.TrustedProxies); err != nil {
		errs = append(errs, err)
	}
	if len(s.Backends) == 0 {
		errs = append(errs, errors.New("no backends: give at least one host:port (config: the balanced service on every host)"))
	}
	for i, b := range s.Backends {
		if err := checkBackendAddr(b); err != nil {
			errs = append(errs, err)
		} else if slices.Contains(s.Backends[:i], b) {
			// the admin API finds a backend by its address: a drain would leave the other copy in rotation
			errs = append(errs, fmt.Errorf("backend %q: given twice: list each backend once", b))
		}
	}
	return errors.Join(errs...)
}

func checkHostPort(v string) error {
	_, port, err := net.SplitHostPort(v)
	if err != nil {
		return errors.New("must be host:port, e.g. 127.0.0.1:9001")
	}
	if p, err := strconv.Atoi(port); err != nil || p < 0 || p > 65535 {
		return errors.New("port must be a number from 0 to 65535")
	}
	return nil
}

// view is the answer of GET /admin/settings: the listen address and the numbers.
func (s Settings) view() adminapi.Settings {
	return adminapi.Settings{Listen: s.Listen, BalancerNumbers: s.BalancerNumbers}
}
