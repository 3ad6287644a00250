package main

import (
	"errors"
	"fmt"
	"net"
	"os"
	"strconv"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"

	"github.com/zero502/zero502/infra/config"
	"github.com/zero502/zero502/infra/lb"
	"github.com/zero502/zero502/infra/mesh"
	"github.com/zero502/zero502/infra/stopsignal"
)

// newLBCmd runs the in-house HTTP/1.1 load balancer (package infra/lb).
func newLBCmd() *cobra.Command {
	var (
		configPath, listenHost string
		fromMesh               string
		slowPathOnly           bool
		f                      lb.Settings
	)
	var up *handoffFlags // set below, with the flags (the in-place upgrade)
	lab := lb.LabSettings("", nil)
	var logs *logFlags // set below, with the flags
	cmd := &cobra.Command{
		Use:   "lb [flags] PORT BACKEND... | lb --config FILE [flags]",
		Short: "Run the in-house HTTP/1.1 load balancer (round robin, health checks, drain handshake)",
		Long: `Run zero502's own HTTP/1.1 load balancer.

Lab mode (zero502 lb PORT BACKEND...) listens on 127.0.0.1:PORT (--listen-host to change) and
meets the reverse-proxy lab's timing with no flags: health checks every 500ms (timeout 400ms),
a dead or sick backend out within 4s, a recovered one back within 5s, connect timeout 1s,
response-header timeout 3s (then 504). No admin listener unless --admin is given.

Config mode (--config FILE) takes the listen and admin addresses, the backends (the balanced
service on every host) and every number from the infra config (balancer.*, drain.window,
drain.shutdown). Any flag given explicitly overrides the file.

On SIGTERM the LB drains like every server zero502 rolls: /_lb/health and /admin/health answer
503 for --drain while it keeps proxying, then it stops accepting and in-flight requests get
--shutdown to finish. Logs go to stderr.

On SIGHUP (or zero502 lb upgrade) the LB hands its listening sockets to a new process of its
executable as it is on disk, with the same arguments, and drains as on SIGTERM once that one
serves: a new binary, or changed backends and numbers in the config, without a refused
connection. If the new process fails, this one keeps serving.`,
		Example: `  zero502 lb 8080 127.0.0.1:9001 127.0.0.1:9002 127.0.0.1:9003
  zero502 lb --admin 127.0.0.1:8081 --health-interval 250ms --health-timeout 100ms 8080 127.0.0.1:9001
  zero502 lb --config examples/local.yaml
  curl -s 127.0.0.1:18081/admin/backends`,
		RunE: func(cmd *cobra.Command, args []string) error {
			logger, sink, err := logs.batchedLogger(cmd, cmd.ErrOrStderr()) // the access log: a line per request
			if err != nil {
				return err
			}
			defer sink.Close()
			token, tokenSet, err := lbAdminTokenSource.resolve(cmd.Flags(), os.Getenv)
			if err != nil {
				return exitCode(2, err)
			}
			if tokenSet {
				f.AdminToken = token
			}
			set, err := lbSettings(cmd.Flags(), configPath, listenHost, args, f, tokenSet)
			if err != nil {
				return exitCode(2, err)
			}
			var meshSync *mesh.LBSync
			if fromMesh != "" {
				if set.Admin == "" {
					return exitCode(2, fmt.Errorf("--backends-from-mesh %s: needs the admin listener (--admin host:port, or balancer.admin in --config): the route is applied through it", fromMesh))
				}
				// The mesh's route drives this LB's own admin API: a server the mesh rules out
				// is drained here without a restart, and the mesh never empties the pool. The
				// route is taken only signed with the mesh key (off loopback, required).
				meshSync = &mesh.LBSync{Mesh: fromMesh, Token: set.AdminToken, Every: set.Interval, Logger: logger,
					FromFlag: "--backends-from-mesh", KeyFlag: "--" + lbMeshKeySource.fileFlag}
				key, keySet, err := lbMeshKeySource.resolve(cmd.Flags(), os.Getenv)
				if err != nil {
					return exitCode(2, err)
				}
				if keySet {
					meshSync.Key = []byte(key)
				}
				if err := meshSync.Validate(); err != nil {
					return exitCode(2, fmt.Errorf("lb: %w", err))
				}
			}
			reserveSpareP(lb.EventLoopsAvailable, &set.Loops, lbFreeCPUs) // this process runs one LB
			opts := []lb.Option{lb.WithLogger(logger), lb.WithAccessLogOutput(sink), lb.WithMemoryTrim(trimMemory), lb.WithListen(up.Listen),
				lb.WithHandoff(up.HandedOff)}
			if slowPathOnly {
				opts = append(opts, lb.WithSlowPathOnly())
			}
			// started by an upgrade: what the admin API changed in the old process goes on here
			inherited, err := up.inheritedAdmin(lb.ReadHandoff)
			if err != nil {
				return exitCode(1, fmt.Errorf("lb: %w", err))
			}
			srv, err := lb.New(set, append(opts, lb.WithInherited(inherited))...)
			if err != nil {
				return exitCode(2, fmt.Errorf("lb: %w", err))
			}
			if err := srv.Listen(); err != nil {
				return exitCode(1, err)
			}
			ctx, stop := stopsignal.Context(cmd.Context())
			defer stop()
			up.handAdminOver(set.Admin != "", srv.PrepareHandoff, srv.HandoffFailed)
			ctx = up.UpgradeOnHangup(ctx, logger)
			if err := up.Ready(); err != nil {
				return exitCode(1, err)
			}
			if meshSync != nil {
				meshSync.Admin = "http://" + srv.AdminAddr()
				go meshSync.Run(ctx)
			}
			return srv.Run(ctx)
		},
	}
	fl := cmd.Flags()
	fl.StringVarP(&configPath, "config", "c", "", "config file (YAML): listen, admin, backends and numbers from balancer.*")
	fl.StringVar(&listenHost, "listen-host", "127.0.0.1", "lab mode: address to listen on with PORT")
	fl.StringVar(&f.Listen, "listen", "", "proxy listener host:port (config default: balancer.listen; one config serves several LB instances, each on its own --listen)")
	fl.StringVar(&f.Admin, "admin", "", "admin API listener host:port (lab default: off; config default: balancer.admin; \"\" disables)")
	lbAdminTokenSource.register(fl, "bearer token for the admin API (required when --admin is not on loopback)")
	fl.StringVar(&f.HealthPath, "health-path", lab.HealthPath, "path of the backends' health check")
	fl.DurationVar(&f.Interval, "health-interval", lab.Interval, "time between two health checks of a backend")
	fl.DurationVar(&f.Timeout, "health-timeout", lab.Timeout, "how long one health check may take (below --health-interval)")
	fl.IntVar(&f.UnhealthyThreshold, "unhealthy-threshold", lab.UnhealthyThreshold, "consecutive failed checks that take a backend out")
	fl.IntVar(&f.HealthyThreshold, "healthy-threshold", lab.HealthyThreshold, "consecutive 200 checks that put it back")
	fl.DurationVar(&f.ConnectTimeout, "connect-timeout", lab.ConnectTimeout, "timeout of a connect to a backend")
	fl.DurationVar(&f.HeaderTimeout, "header-timeout", lab.HeaderTimeout, "wait for a backend's response headers, then 504")
	fl.DurationVar(&f.IdleTimeout, "idle-timeout", lab.IdleTimeout, "how long an idle upstream keep-alive connection is kept (below the backends' own)")
	fl.IntVar(&f.MaxHeaderBytes, "max-header-bytes", lab.MaxHeaderBytes, "largest request header block accepted, then 431")
	fl.DurationVar(&f.ClientHeaderTimeout, "client-header-timeout", lab.ClientHeaderTimeout, "a client must send its request head (and each part of its body) within this")
	fl.DurationVar(&f.ClientIdleTimeout, "client-idle-timeout", lab.ClientIdleTimeout, "an idle keep-alive client connection is closed after this")
	fl.DurationVar(&f.TunnelIdleTimeout, "tunnel-idle-timeout", lab.TunnelIdleTimeout, "an upgraded (WebSocket) connection silent in both directions this long is closed")
	fl.DurationVar(&f.BodyTimeout, "body-timeout", lab.BodyTimeout, "longest silence while relaying a body (never the total duration)")
	fl.IntVar(&f.MaxIdlePerBackend, "max-idle-per-backend", lab.MaxIdlePerBackend, "idle upstream keep-alive connections kept per backend (0: none)")
	fl.IntVar(&f.MaxConns, "max-conns", lab.MaxConns, "open client connections at most; more are accepted and closed at once (the default is half of what RLIMIT_NOFILE leaves after a reserve)")
	fl.IntVar(&f.MaxSlowBodiesPerIP, "max-slow-bodies-per-ip", lab.MaxSlowBodiesPerIP, "request bodies per client IP still arriving "+lb.SlowBodyAfter.String()+" after their request began; the next gets 429")
	fl.DurationVar(&f.Drain, "drain", lab.Drain, "after SIGTERM: how long /_lb/health answers 503 while still proxying (config default: drain.window)")
	fl.DurationVar(&f.Shutdown, "shutdown", lab.Shutdown, "after the drain window: how long in-flight requests get (config default: drain.shutdown)")
	fl.BoolVar(&f.AccessLog, "access-log", false, "log one JSON line per request")
	fl.StringVar(&fromMesh, "backends-from-mesh", "", "a mesh node's base URL (http://host:port): follow its GET /route every health interval, through this LB's admin API (zero502 mesh lb-sync, built in)")
	lbMeshKeySource.register(fl, "with --backends-from-mesh, the mesh's key: only a route signed with it is taken (required off loopback)")
	fl.BoolVar(&slowPathOnly, "slow-path-only", false, "serve every connection on the goroutine path (tests)")
	_ = fl.MarkHidden("slow-path-only")
	fl.IntVar(&f.Loops, "loops", 0, "event loops, the fast path on Linux (0: one per CPU less one, at least one); the runtime gets one P more than the loops")
	fl.StringArrayVar(&f.TrustedProxies, "trusted-proxy", nil, "a client (IP address or CIDR range) whose X-Forwarded-For is kept and appended to, and whose Forwarded and X-Real-IP are kept; repeatable; from any other client X-Forwarded-For is replaced by the client address and the other two are dropped (config: balancer.trusted_proxies)")
	fl.StringArrayVar(&f.AcceptProxyFrom, "accept-proxy-from", nil, "a peer (IP address or CIDR range) whose PROXY v1/v2 header gives the client address; repeatable; a header from any other peer closes the connection (config: balancer.accept_proxy_from)")
	logs = addLogFlags(cmd, true)
	up = withHandoff(cmd, "lb")
	cmd.AddCommand(newLBUpgradeCmd())
	return cmd
}

// lbSettings loads the config (config mode) or reads PORT BACKEND... (lab mode) and resolves
// the LB's settings with every flag the user set on top (lb.Resolve). tokenSet says
// f.AdminToken was given (flag, file or environment, see lbAdminTokenSource).
func lbSettings(fl *pflag.FlagSet, configPath, listenHost string, args []string, f lb.Settings, tokenSet bool) (lb.Settings, error) {
	given := func(flag string) bool { return fl.Changed(flag) || flag == "admin-token" && tokenSet }
	if configPath != "" {
		if len(args) > 0 {
			return lb.Settings{}, fmt.Errorf("lb: --config takes no PORT or BACKEND arguments (got %q); backends come from the config's hosts", args)
		}
		cfg, err := config.Load(configPath)
		if err != nil {
			return lb.Settings{}, err
		}
		set, err := lb.Resolve(cfg, "", nil, f, given)
		if err != nil {
			return set, fmt.Errorf("lb: config %s: %w", configPath, err)
		}
		return set, nil
	}
	if len(args) < 2 {
		return lb.Settings{}, errors.New("lb: need PORT and at least one BACKEND (host:port), e.g. zero502 lb 8080 127.0.0.1:9001 127.0.0.1:9002; or --config FILE")
	}
	if port, err := strconv.Atoi(args[0]); err != nil || port < 0 || port > 65535 {
		return lb.Settings{}, fmt.Errorf("lb: PORT %q: must be a number from 0 to 65535", args[0])
	}
	set, err := lb.Resolve(nil, net.JoinHostPort(listenHost, args[0]), args[1:], f, given)
	if err != nil {
		return set, fmt.Errorf("lb: %w", err)
	}
	return set, nil
}
