// Package config owns the one typed configuration of zero502: every timing number the balancer,
// the drain handshake, the watchdog, the deployer and the tests use, and the fleet they act on.
// It is loaded once with viper from one YAML file over the embedded defaults (the source's
// numbers), with ZERO502_* environment overrides, and decoded strictly: an unknown key, a wrong
// type, a negative duration or a missing required field is refused with the key, the value and
// the rule. See docs/ARCHITECTURE.md, "The numbers and their invariants", for how the numbers
// relate (package invariants checks it).
package config

import (
	"net"
	"path/filepath"
	"strconv"
	"time"

	"github.com/zero502/zero502/infra/healthcheck"
	"github.com/zero502/zero502/infra/secrets"
)

// docs/config.md, the config reference, is generated from this package's config types, their doc
// comments and defaults.yaml (package internal/configdoc).
//go:generate go run github.com/zero502/zero502/internal/configdoc/cmd -dir . -out ../../docs/config.md

// Config is the whole of zero502's configuration. The YAML keys are the mapstructure tags; the
// config reference, docs/config.md, is generated from the same doc comments (package
// internal/configdoc; `go generate ./infra/config`).
type Config struct {
	// Balancer is the load balancer in front of the fleet and its health-check numbers.
	Balancer Balancer `mapstructure:"balancer"`
	// Drain holds the numbers of the drain handshake (docs/ARCHITECTURE.md, "The drain contract").
	Drain Drain `mapstructure:"drain"`
	// Watchdog holds the self-healing watchdog's numbers and paths.
	Watchdog Watchdog `mapstructure:"watchdog"`
	// App holds numbers of the services themselves that the balancer's must respect.
	App App `mapstructure:"app"`
	// Edge holds the L4 edge layer's numbers; when Edge.Drain is zero, no edge is configured and
	// the edge invariant (I6) is skipped.
	Edge Edge `mapstructure:"edge"`
	// Rollout says how a deploy moves through the fleet.
	Rollout Rollout `mapstructure:"rollout"`
	// Hooks are commands run at the points of a deploy, as Kamal's and CodeDeploy's lifecycle
	// hooks (docs/deploy.md, "Hooks").
	Hooks Hooks `mapstructure:"hooks"`
	// Services are the services every host runs.
	Services []Service `mapstructure:"services"`
	// ServicesFrom, when set, is a Compose file (relative to the config file) the services are
	// read from at load, instead of services: (one or the other; ServicesFromFile), as zero502
	// init --from-compose maps them. The services of the profiles COMPOSE_PROFILES enables (in
	// the environment or the file's .env) are read, as docker compose does. Once read it is
	// cleared, so the config a host gets over ssh carries the services themselves.
	ServicesFrom string `mapstructure:"services_from"`
	// Secrets say where a deploy finds the values of services[].secrets (package secrets).
	Secrets Secrets `mapstructure:"secrets"`
	// Hosts are the servers of the fleet, deployed one batch at a time in this order.
	Hosts []Host `mapstructure:"hosts"`
	// SecretValues are the values of the secrets the services name: found by the deploy
	// (ResolveSecrets), or sent by the deployer beside the config over ssh. Never read from a
	// config file nor written into one (config.Encode skips it).
	SecretValues map[string]secrets.Value `mapstructure:"-"`
	// ComposeNotes are what services_from's Compose file sets that zero502 does not honour as
	// Compose would, one line a key ("services.web.volumes: …"), read at load; a deploy reports
	// them before it starts. Never read from a config file nor written into one.
	ComposeNotes []string `mapstructure:"-"`
}

// Secrets are where the values of services[].secrets are looked up when a deploy starts, on the
// machine that runs it, in this order: File, the output of Command, the deploy job's environment.
type Secrets struct {
	// File is a dotenv file (NAME=value lines), relative to the config file, that only its owner
	// may read or write (mode 0600; refused otherwise); "" for none.
	File string `mapstructure:"file"`
	// Command is run once, without a shell, when a name is not in File; what it prints is dotenv
	// text (a password manager's CLI, `aws secretsmanager …`); its stderr is shown when it fails,
	// its output never. Empty for none.
	Command []string `mapstructure:"command"`
	// CommandTimeout bounds Command (a prompt waiting for input fails here). Default 30s.
	CommandTimeout time.Duration `mapstructure:"command_timeout"`
	// AWS asks AWS Secrets Manager, after Command: the secret Prefix+NAME holds NAME's value.
	AWS SecretsAWS `mapstructure:"aws"`
}

// SecretsAWS is AWS Secrets Manager as a source of secrets (package infra/secrets/secretsmanager),
// with the deploy job's AWS credentials.
type SecretsAWS struct {
	// Enabled asks Secrets Manager for the names not in secrets.file nor secrets.command's output.
	Enabled bool `mapstructure:"enabled"`
	// Region is the secrets' region; "" takes the SDK's (AWS_REGION, the profile).
	Region string `mapstructure:"region"`
	// Prefix is put before each name to make its secret id (e.g. "shop/prod/").
	Prefix string `mapstructure:"prefix"`
}

// SecretStoreAWS makes the AWS Secrets Manager store of secrets.aws. Package
// infra/secrets/secretsmanager sets it (the zero502 binary links it); without it secrets.aws is
// refused when a deploy looks its secrets up.
var SecretStoreAWS func(a SecretsAWS) secrets.Store

// Balancer kinds.
const (
	BalancerInHouse = "inhouse" // zero502's own HTTP/1.1 load balancer (zero502 lb)
	BalancerALB     = "alb"     // an AWS Application Load Balancer target group
	BalancerNone    = "none"    // no balancer: the deployer only checks services directly
	// BalancerEdges is zero502's own edge forwarders (zero502 edge forward) in front of LB
	// instances: the balancer of a tier of services of kind lb.
	BalancerEdges = "edges"
	// BalancerDNS is the edges' DNS A record set: the balancer of a tier of services of kind edge.
	BalancerDNS = "dns"
)

// Balancer is the load balancer in front of the fleet: which one, where, and its numbers.
type Balancer struct {
	// Kind is the balancer: inhouse (zero502 lb), alb (an AWS target group), edges (zero502
	// edges in front of LB instances: the balancer of services of kind lb), dns (the edges' A
	// record set: the balancer of services of kind edge) or none. Default inhouse.
	Kind string `mapstructure:"kind"`
	// Listen is where the in-house LB serves clients (host:port). Default 127.0.0.1:8080.
	Listen string `mapstructure:"listen"`
	// Admin is the in-house LB's admin API listener (host:port), which also serves its metrics
	// and status page; without admins the deployer connects to it, so its port is not 0.
	// Default 127.0.0.1:8081.
	Admin string `mapstructure:"admin"`
	// Admins are the admin APIs (host:port, with a host and a port from 1 to 65535) of every
	// instance of the balancer when there are several: kind inhouse, every LB instance; kind
	// edges, every edge forwarder (its /admin/upstreams). The deployer drains a target at each,
	// and counts it in rotation only when every one has it in. Default: [admin] for kind
	// inhouse; required for kind edges.
	Admins []string `mapstructure:"admins"`
	// AdminToken is the bearer token the admin API requires, once set, on every address (but for
	// GET /admin/health and /metrics); required when Admin is not on loopback. A secret: a config
	// file that sets it must be readable by its owner alone (mode 0600), else it is refused; or
	// set it in $ZERO502_BALANCER_ADMIN_TOKEN and keep it out of the file.
	AdminToken string `mapstructure:"admin_token"`
	// Record is the edges' DNS A record set (kind dns): the deployer takes an edge out of it,
	// waits edge.dns_ttl plus the monitor's detection (edge.check_interval ×
	// edge.unhealthy_threshold), and only then stops it.
	Record dnsRecord `mapstructure:"record"`
	// Service names the service that sits behind the balancer. Default: the first service with a port.
	Service string `mapstructure:"service"`
	// BalancerNumbers are its health-check numbers and timeouts (balancer.health_path,
	// balancer.interval, …), the same type the LB, the ALB adapter and the drift check use.
	BalancerNumbers `mapstructure:",squash"`
	// AcceptProxyFrom are the peers (IP addresses or CIDR ranges) whose PROXY v1/v2 header the
	// in-house LB accepts on its listener, for the client address; a header from anyone else
	// closes the connection, and connections without one pass. Default none.
	AcceptProxyFrom []string `mapstructure:"accept_proxy_from"`
	// TrustedProxies are the clients (IP addresses or CIDR ranges) whose X-Forwarded-For the
	// in-house LB keeps and appends to; from anyone else it is replaced by the client address.
	// Default none.
	TrustedProxies []string `mapstructure:"trusted_proxies"`
	// TLS is HTTPS at the in-house LB: off while tls.listen is empty.
	TLS BalancerTLS `mapstructure:"tls"`
	// MaintenanceRetryAfter is the Retry-After the maintenance page carries when zero502
	// maintenance on is given no --retry-after (whole seconds, 1s to 24h). Default 60s.
	MaintenanceRetryAfter time.Duration `mapstructure:"maintenance_retry_after"`
	// TargetGroupARN is the ALB target group the fleet is registered in (kind alb).
	TargetGroupARN string `mapstructure:"target_group_arn"`
	// Region is the AWS region of the target group (kind alb); empty uses the SDK's default chain.
	Region string `mapstructure:"region"`
}

// BalancerTLS is HTTPS at the in-house LB (infra/lb/tlscert): certificate files chosen by SNI,
// reloaded when they change, and certificates from an ACME CA, on one TLS listener that serves
// the same requests as balancer.listen.
type BalancerTLS struct {
	// Listen is the HTTPS listener (host:port), e.g. 0.0.0.0:443: the same requests as
	// balancer.listen. Default "": no TLS.
	Listen string `mapstructure:"listen"`
	// Certificates are certificate and key files (PEM); a client gets the one whose names match
	// its SNI (a wildcard covers one label), else the first. A key file must be readable by its
	// owner alone. A file changed on disk is served to new connections within a second.
	Certificates []TLSCertificate `mapstructure:"certificates"`
	// RedirectHTTP is a plain HTTP listener (host:port, e.g. 0.0.0.0:80) that answers every
	// request 308 to the same URL over HTTPS, and ACME's HTTP-01 challenges. Default "": none.
	RedirectHTTP string `mapstructure:"redirect_http"`
	// ACME gets certificates for its domains from an ACME CA (Let's Encrypt by default).
	ACME ACME `mapstructure:"acme"`
	// HandshakeTimeout bounds a client's TLS handshake. Default 10s.
	HandshakeTimeout time.Duration `mapstructure:"handshake_timeout"`
}

// TLSCertificate is a certificate chain and its private key, PEM files.
type TLSCertificate struct {
	// Cert is the certificate chain's PEM file, the leaf first. Required.
	Cert string `mapstructure:"cert"`
	// Key is its private key's PEM file, readable by its owner alone (mode 0600). Required.
	Key string `mapstructure:"key"`
}

// ACME is the ACME account and the names it gets certificates for (HTTP-01 on
// tls.redirect_http, or TLS-ALPN-01 on tls.listen).
type ACME struct {
	// Domains are the names to get certificates for: DNS host names (an internationalised one in
	// its xn-- form), no wildcards, no IP addresses. Default none: ACME off.
	Domains []string `mapstructure:"domains"`
	// Email is the account's contact. Required with domains.
	Email string `mapstructure:"email"`
	// Directory is the CA's ACME directory URL. Default Let's Encrypt's production directory.
	Directory string `mapstructure:"directory"`
	// CAFile is a PEM bundle that signs the directory's HTTPS when it is not a public CA (a
	// private ACME server such as step-ca or Pebble). Default "": the system roots.
	CAFile string `mapstructure:"ca_file"`
	// CacheDir holds the account key and the certificates (directory 0700, files 0600).
	// Required with domains.
	CacheDir string `mapstructure:"cache_dir"`
}

// On says whether the LB serves HTTPS.
func (t BalancerTLS) On() bool { return t.Listen != "" }

// AdminAddrs are the admin APIs of every instance of the balancer: Admins, else Admin alone
// (kind inhouse).
func (b Balancer) AdminAddrs() []string {
	if len(b.Admins) > 0 {
		return b.Admins
	}
	if b.Kind == BalancerInHouse {
		return []string{b.Admin}
	}
	return nil
}

// dnsRecord is an A record set that holds one address per edge.
type dnsRecord struct {
	// Name is the record's fully qualified name, e.g. edge.example.com. (the trailing dot is
	// added when missing).
	Name string `mapstructure:"name"`
	// ZoneFile is a zone file (RFC 1035) that zero502 dns serve answers from: the local
	// provider. Set this or Route53ZoneID.
	ZoneFile string `mapstructure:"zone_file"`
	// Route53ZoneID is the Route 53 hosted zone that holds the record set (multivalue answer
	// records, one per edge, health checks off). Credentials and region: the AWS SDK's default
	// chain and balancer.region.
	Route53ZoneID string `mapstructure:"route53_zone_id"`
}

// Drain holds the numbers of the drain handshake (docs/ARCHITECTURE.md, "The drain contract").
type Drain struct {
	// Window is how long a server keeps serving after SIGTERM while /health answers 503.
	// Default 15s; must exceed balancer interval × unhealthy threshold (I1).
	Window time.Duration `mapstructure:"window"`
	// Shutdown is how long in-flight requests get to finish once the window is over. Default 10s.
	Shutdown time.Duration `mapstructure:"shutdown"`
	// StopGrace is how long the runtime waits after SIGTERM before SIGKILL (docker stop -t).
	// Default 30s; must exceed Window + Shutdown (I2).
	StopGrace time.Duration `mapstructure:"stop_grace"`
	// MaxRecovery is the longest a host may take to return to rotation once healthy. Default 30s;
	// must be at least healthy threshold × interval (I3).
	MaxRecovery time.Duration `mapstructure:"max_recovery"`
}

// Watchdog holds the self-healing watchdog's numbers and paths.
type Watchdog struct {
	// Interval is the time between two watchdog ticks (the systemd timer). Default 60s.
	Interval time.Duration `mapstructure:"interval"`
	// HealAfter is how many consecutive failed checks a service needs before it is healed, at
	// most 1000. Default 4; (HealAfter − 1) × Interval must exceed drain window + shutdown (I5).
	HealAfter int `mapstructure:"heal_after"`
	// CheckTimeout bounds one health check of a service whose published spec carries no
	// health timeout (one published before it did); otherwise services[].health.timeout does.
	// Default 2s.
	CheckTimeout time.Duration `mapstructure:"check_timeout"`
	// LockPath is the host's deploy lock (flock), shared with the deployer, the watchdog and
	// bootstrap scripts: the lock of the hosts without their own lock_path. A config that sets it
	// while a host with its own state_dir would not use it is refused (`zero502 host lock-path`
	// prints each host's). Default "": deploy.lock in each host's state dir, which the deploy user
	// and root share (a lock must sit in a directory only its owner can write: /run/lock, sticky,
	// is refused). {uid} in it, as in every state dir and lock path, is the uid zero502 runs as
	// where the path is used, the host's ssh user for a host over ssh (UIDPlaceholder). Every
	// state dir and lock path must be absolute: the deployer and the watchdog run in different
	// working directories, and a relative path would be two locks.
	LockPath string `mapstructure:"lock_path"`
	// StateDir holds the published spec, the watchdog's streaks and instance files; it is made
	// 0750 and refused (naming its owner and mode) when another user owns it or may write it.
	// Default /var/lib/zero502; a host may override it. examples/local.yaml keeps its hosts in
	// /tmp/zero502-{uid}/…, which no other user can make first.
	StateDir string `mapstructure:"state_dir"`
}

// App holds numbers of the services themselves.
type App struct {
	// KeepAliveIdleTimeout is how long a service keeps an idle keep-alive connection open.
	// Default 75s; must exceed the balancer's idle timeout (I7).
	KeepAliveIdleTimeout time.Duration `mapstructure:"keepalive_idle_timeout"`
}

// Edge holds the L4 edge layer's numbers (infra/edge, infra/edgepick).
type Edge struct {
	// Drain is how long an edge keeps forwarding after it leaves the DNS A set; must exceed
	// dns_ttl + check_interval × unhealthy_threshold (I6). 0: no edge layer (I6 skipped).
	Drain time.Duration `mapstructure:"drain"`
	// DNSTTL is the TTL of the edge A record set: required when balancer.kind is dns, whole
	// seconds from 1s to 24h. The deployer waits it out after taking an edge out of the set.
	DNSTTL time.Duration `mapstructure:"dns_ttl"`
	// CheckInterval is the time between two checks of an edge by the DNS health checker.
	CheckInterval time.Duration `mapstructure:"check_interval"`
	// UnhealthyThreshold is how many failed checks remove an edge from the A set, at most 1000.
	UnhealthyThreshold int `mapstructure:"unhealthy_threshold"`
	// Origins are the upstreams an edge forwards to (`zero502 edge forward --config`): the
	// origin, or its in-house LB instances; host:port each, with a host and a port from 1 to
	// 65535. --origin replaces them.
	Origins []string `mapstructure:"origins"`
	// UpstreamCheck is how an edge checks its upstreams.
	UpstreamCheck EdgeUpstreamCheck `mapstructure:"upstream_check"`
}

// EdgeUpstreamCheck is how an edge checks each of its upstreams (infra/edge.UpstreamCheck): a TCP
// connect, or with Path an HTTP GET behind a PROXY v2 header, every Interval within Timeout;
// HealthyThreshold good checks in a row bring an upstream (back) in, UnhealthyThreshold failed
// ones take it out, a 503 takes it out at once (an LB instance draining).
type EdgeUpstreamCheck struct {
	// Path is the HTTP path checked, e.g. /_lb/health; empty: TCP connect only. Default "".
	Path string `mapstructure:"path"`
	// Interval is the time between two checks of an upstream. Default 2s.
	Interval time.Duration `mapstructure:"interval"`
	// Timeout bounds one check, below Interval. Default 1s.
	Timeout time.Duration `mapstructure:"timeout"`
	// HealthyThreshold: good checks in a row that put an upstream in rotation, at most 1000.
	// Default 2.
	HealthyThreshold int `mapstructure:"healthy_threshold"`
	// UnhealthyThreshold: failed checks in a row that take it out (a 503 takes it out at once),
	// at most 1000. Default 2.
	UnhealthyThreshold int `mapstructure:"unhealthy_threshold"`
}

// Configured reports whether an edge layer is configured at all.
func (e Edge) Configured() bool { return e.Drain > 0 }

// Runtimes a rollout can use.
const (
	RuntimeProcess = "process" // local child processes that outlive the command (infra/runtime)
	RuntimeDocker  = "docker"  // containers through the Docker Engine API
)

// Rollout says how a deploy moves through the fleet.
type Rollout struct {
	// Batch is how many hosts are drained at once: a number, or a share of the fleet ("20%",
	// rounded down, at least 1 host: a share that rounds down to no host is taken as one, more
	// of the fleet than asked, and `zero502 invariants` warns, I15). Default 1; must leave a
	// healthy host (I8).
	Batch int `mapstructure:"batch"`
	// BatchShare is the share of the fleet, in percent, that rollout.batch was written as
	// ("20%": 20), Batch then holding the hosts it came to; 0 when it was a number. Not a key.
	BatchShare int `mapstructure:"-"`
	// Runtime is process or docker. Default docker.
	Runtime string `mapstructure:"runtime"`
	// HealthyDeadline is how long a new instance gets to become healthy, directly and at the
	// balancer, before the host is rolled back. Default 60s.
	HealthyDeadline time.Duration `mapstructure:"healthy_deadline"`
	// DockerHost is the Docker Engine endpoint; empty honours DOCKER_HOST, then the local socket.
	DockerHost string `mapstructure:"docker_host"`
	// Strategy is stop-first (default: the old instance drains and stops, then the new one
	// starts; capacity dips by one batch, and a one-host fleet is refused by I8) or start-first
	// (the new instance starts beside the old one on the service's other port, services[].ports,
	// and the old one drains only once the new one is healthy at the balancer: no dip).
	Strategy string `mapstructure:"strategy"`
	// MaxUnavailable is, under start-first, how many hosts of a batch may be out of rotation at
	// once, as Kubernetes' and Argo Rollouts' maxUnavailable beside the batch's surge: on that
	// many hosts of each batch (its first ones) the old instance drains as soon as the new one
	// has started instead of once the new one is in rotation, so the drain and the new
	// instance's start overlap and the batch is quicker, with those hosts serving nothing for a
	// moment. A number, or a share of the fleet ("10%", rounded down: it may come to 0). Default
	// 0: no host leaves rotation before its successor serves. Must leave a healthy host (I8);
	// stop-first refuses it, since every host of a stop-first batch leaves rotation
	// (rollout.batch is its unavailable count).
	MaxUnavailable int `mapstructure:"max_unavailable"`
	// MaxUnavailableShare is the share of the fleet, in percent, that rollout.max_unavailable
	// was written as; 0 when it was a number. Not a key.
	MaxUnavailableShare int `mapstructure:"-"`
	// Bake is how long every new instance must stay up and healthy, counted from its first
	// healthy answer, before its host counts as deployed (like Kubernetes' minReadySeconds). It
	// is never shorter than balancer.healthy_threshold × interval, the time the balancer itself
	// needs to trust a target. Hosts already deployed are verified again before each next batch
	// and at the end. Default 0s (that floor alone).
	Bake time.Duration `mapstructure:"bake"`
	// LockPath is the fleet-wide deploy lock (flock), taken before preflight and held for the
	// whole deploy, so two deploys of one fleet never run at once: the second waits
	// (--lock-timeout) or is refused, naming the holder. It lives on rollout.lock_host, so
	// deploys from two machines (two CI runners, a laptop and CI) meet there. Default: fleet.lock
	// in the lock host's state dir. An absolute path.
	LockPath string `mapstructure:"lock_path"`
	// LockHost is the host of the fleet that holds the fleet lock, as Kamal keeps its lock on
	// the primary server. Over SSH a `zero502 host fleet-lock` process there holds the flock for
	// as long as the deployer's session lives (the kernel frees it when either dies); a local
	// host's lock is a file on this machine. Default: the first host.
	LockHost string `mapstructure:"lock_host"`
	// LockLease bounds how long the lock host keeps the fleet lock after the deployer's last
	// renewal: over SSH the deployer renews it on the lock's session every min(5s, lease/3), and
	// a lock host that hears nothing for this long (a deployer cut off by a silent partition, its
	// session never closed) frees the lock. It should outlast a batch's worst case, so that a
	// deployer cut off mid-batch ends that batch and stops (it checks the lock before each next
	// one) before another deploy can take the lock (I14, a warning). Default 30m; a local lock
	// host's lock is a file on this machine and has no lease.
	LockLease time.Duration `mapstructure:"lock_lease"`
	// ProgressDeadline is how long a host's step may report nothing (no event) before the
	// deployer stops it, as Kubernetes' and Argo Rollouts' progressDeadlineSeconds: a host frozen
	// (out of memory, a hung disk) or a call that never returns (a Docker Engine that hangs)
	// would otherwise hold its batch, and the fleet lock, for ever. The step is told to stop
	// (its session's stdin closes): it rolls back by itself, or is cut off after the rollback's
	// budget and reported as unknown. A wait for the host lock (--lock-timeout) comes on top.
	// Must outlast a service's whole step (I16). Default 10m.
	ProgressDeadline time.Duration `mapstructure:"progress_deadline"`
	// Analysis judges each batch, once it is in rotation and baked, by what users got from it
	// through the balancer (its error rate and p99 against the old version's targets) before
	// the rollout moves on: health is not what users get. On by default; the in-house LB
	// publishes the evidence (a balancer that does not, such as an ALB, is not analysed).
	Analysis Analysis `mapstructure:"analysis"`
	// Canary is the first step of every deploy behind the in-house LB: the first Hosts hosts get
	// the new version and only Weight % of the traffic, for Duration with the analysis, before
	// the rest rolls batch by batch (each batch analysed too).
	Canary Canary `mapstructure:"canary"`
	// OnFailure is what a failed analysis verdict does: rollback (default: every host this
	// deploy moved to the new version goes back to what it ran, through the same drain, and
	// the deploy exits 1) or stop (only the judged batch goes back; hosts done before stay).
	OnFailure string `mapstructure:"on_failure"`
	// Alarms are CloudWatch alarm names (metric, composite or log alarms, in balancer.region)
	// whose ALARM state fails the verdict, as CodeDeploy's and ECS's alarm rollback do: looked
	// at before the deploy (one in ALARM refuses it), every 2 s while each batch's hosts take
	// their steps (drain, start, bake) and through its window once they are baked
	// (rollout.canary.duration, rollout.analysis.window), and again before each next batch, a
	// promote included. The gate of a balancer that publishes no per-target
	// outcomes, such as an ALB. An alarm that does not exist, or 3 reads in a row that fail,
	// fail it, never pass (docs/aws.md). Each name is 1 to 255 characters, unique. Default []
	// (no alarm gate).
	Alarms []string `mapstructure:"alarms"`
}

// Canary is rollout.canary.
type Canary struct {
	// Hosts is how many hosts form the canary, the first ones of hosts[]; 0 turns the canary
	// off (the first batch is then an ordinary batch). Default 1.
	Hosts int `mapstructure:"hosts"`
	// Weight is the share of the traffic, in percent (1..100), the canary's targets get
	// together while it is judged, set as per-target weights at the in-house LB; the other
	// targets share the rest. Default 5.
	Weight int `mapstructure:"weight"`
	// Duration is how long the canary is judged (rollout.analysis over this window instead of
	// analysis.window). Default 60s.
	Duration time.Duration `mapstructure:"duration"`
}

// Analysis is rollout.analysis: how a batch's new version is judged by what users got.
type Analysis struct {
	// Enabled turns the analysis on (default true).
	Enabled bool `mapstructure:"enabled"`
	// Window is how long each batch is watched once it is in rotation and baked (its new targets'
	// requests count from their coming into rotation, their bake included). Default 30s.
	Window time.Duration `mapstructure:"window"`
	// MinRequests is how many requests the new version's targets must get in the window for a
	// verdict on the numbers; fewer is the verdict "not enough traffic" (OnNoTraffic). 0 judges
	// whatever came, but no request at all is still "not enough traffic". Default 20.
	MinRequests int `mapstructure:"min_requests"`
	// MaxErrorRate is the highest share of the new version's requests that may fail (a 5xx
	// answer but a 503 of the health path, or no answer), absolute, 0..1. Default 0.05.
	MaxErrorRate float64 `mapstructure:"max_error_rate"`
	// MaxErrorRateIncrease is how far the new version's error rate may exceed the old version's
	// over the same window, 0..1 (0.01: one point). Default 0.02.
	MaxErrorRateIncrease float64 `mapstructure:"max_error_rate_increase"`
	// MaxP99Increase is how much slower the new version's p99 time to the response head may be
	// than the old version's, as a share (0.5: 50 % slower); 0 turns the latency rule off. It
	// applies once both sides got at least 100 requests in the window (a p99 of fewer is one
	// cold connection's noise). Default 1 (twice as slow fails).
	MaxP99Increase float64 `mapstructure:"max_p99_increase"`
	// MinP99Increase is the smallest slowdown at p99, as time, that the latency rule may fail:
	// a new version at most this much slower than the old version's p99 holds whatever
	// MaxP99Increase says (1.1ms against 0.5ms is 120 % slower, and the scheduler's noise, not
	// the version's). 0 judges by the share alone. Default 5ms.
	MinP99Increase time.Duration `mapstructure:"min_p99_increase"`
	// OnNoTraffic is the verdict when fewer than MinRequests reached the new version: pass
	// (default; the event and the report say so) or fail. Either way a version whose errors
	// already exceed MaxErrorRate of MinRequests fails: the requests missing could not save it.
	OnNoTraffic string `mapstructure:"on_no_traffic"`
	// ExpectedRate is how many requests per second the balanced service gets through the
	// balancer (every instance together) during a deploy; 0 (default) means unknown. It changes
	// no verdict: with it, `zero502 invariants` warns when the canary (ExpectedRate ×
	// canary.weight % × canary.duration, I12) or the smallest batch (ExpectedRate × its share of
	// the hosts × Window, I13) cannot reach MinRequests, so its verdict would be "not enough
	// traffic".
	ExpectedRate float64 `mapstructure:"expected_rate"`
}

// Verdicts on too little traffic (rollout.analysis.on_no_traffic) and what a failed verdict does
// (rollout.on_failure).
const (
	OnNoTrafficPass   = "pass"
	onNoTrafficFail   = "fail"
	OnFailureRollback = "rollback"
	onFailureStop     = "stop"
)

// MaxAlarmName is the longest CloudWatch alarm name, in characters (rollout.alarms).
const MaxAlarmName = 255

// Rollout strategies (rollout.strategy).
const (
	StopFirst  = "stop-first"
	StartFirst = "start-first"
)

// Service is one service every host runs.
type Service struct {
	// Name identifies the service on a host (api, gateway, worker…). Required.
	Name string `mapstructure:"name"`
	// Kind is what the service is: app (default: anything behind the balancer), lb (an instance
	// of zero502 lb, behind zero502 edges: balancer.kind edges; its health path defaults to
	// /_lb/health, which answers 503 while it drains) or edge (an instance of zero502 edge
	// forward, in the edges' DNS A record set: balancer.kind dns, drain balancer). The traffic
	// layer is rolled like any service, through the tier in front of it.
	Kind string `mapstructure:"kind"`
	// Image is the container image (docker runtime: required); {version} is replaced by the
	// deployed version.
	Image string `mapstructure:"image"`
	// Command is the program and arguments (process runtime: required; docker: the container's
	// command). With the process runtime the program, command[0], is a name looked up on the
	// service's own PATH (env's, else the fixed base; empty and relative PATH elements are
	// skipped) or an absolute path, never a relative one such as ./server; the service runs in
	// the directory / (as systemd's default WorkingDirectory), whoever starts it, so a relative
	// argument (python3 app.py) is relative to /. No word may contain a NUL byte.
	// Placeholders: {self} (this zero502 binary), {version}, {port}, {host} (the host's name),
	// {address} (the host's address), {drain}, {shutdown}, {idle_timeout}.
	Command []string `mapstructure:"command"`
	// Port is the port the service listens on (before the host's port offset); 0 for a service
	// without a port (a worker), which is checked by its process or container state instead. No
	// two services may share a port (nor a start-first ports entry): every host runs them all.
	Port int `mapstructure:"port"`
	// Ports, for rollout.strategy start-first, are the service's two ports [A, B] (before the
	// host's port offset): the new instance starts on whichever the running one does not hold,
	// so both run side by side until the new one is healthy at the balancer. {port} is the one
	// the instance gets. Port, when also set, must equal Ports[0].
	Ports []int `mapstructure:"ports"`
	// HealthPath is the service's health endpoint. Default balancer.health_path. Shorthand for
	// health.path (set one of the two).
	HealthPath string `mapstructure:"health_path"`
	// Health is the service's HTTP health rule, run the same way by the deployer (directly),
	// the watchdog and zero502 status.
	Health ServiceHealth `mapstructure:"health"`
	// Drain is how the service leaves rotation when it is replaced: handshake (default: it
	// answers 503 on its health path after the stop signal while it keeps serving, and the
	// balancer notices) or balancer (it knows nothing of that: the deployer takes its target out
	// of rotation at the balancer, waits until nothing is in flight to it, and only then sends
	// the stop signal).
	Drain string `mapstructure:"drain"`
	// Verify says what "this host runs version V" means beyond the runtime's word and health.
	Verify ServiceVerify `mapstructure:"verify"`
	// Env is the service's environment, on top of a fixed base (PATH, HOME, LANG=C.UTF-8,
	// TZ=UTC); nothing of the deployer's environment reaches it. Values may use the same
	// placeholders as Command. A name may not be empty nor hold '=' or a NUL byte (dotted names
	// are fine, as Docker takes them); a value may not contain a NUL byte.
	Env map[string]string `mapstructure:"env"`
	// Secrets are names of environment variables whose values are secrets (a database password,
	// an API key): found when the deploy starts (the top-level secrets:; docs/deploy.md,
	// "Secrets"), given to the service in its environment, and never written into the spec, a
	// report, an event, a log or argv; the spec records a digest of each, so a changed secret
	// rolls out and an unchanged one does not.
	Secrets []string `mapstructure:"secrets"`
	// Smoke are requests sent straight to a new instance once it answers its health check and
	// before the balancer sends it users (CodeDeploy's BeforeAllowTraffic): each must get its
	// expected answer, else the host is rolled back and the old version never left rotation
	// (start-first) or the target stays held out at the balancer (stop-first). A redirect is an
	// answer, never followed.
	Smoke []SmokeRequest `mapstructure:"smoke"`
	// User is the user the service runs as (a name or a numeric uid, as on the host), on every
	// start and every heal: the process runtime starts it with that user's uid, groups, HOME,
	// USER and LOGNAME; the docker runtime passes it as the container's user, where user:group
	// or uid:gid also sets the group (docker run --user). Default: the
	// process runtime runs it as the user who publishes the spec (the deploy's user on the
	// host), recorded in the spec, so a heal by a root watchdog starts it as that user again;
	// docker keeps the image's own USER.
	User string `mapstructure:"user"`
	// StopSignal is the signal that asks the service to stop gracefully: SIGTERM (default),
	// SIGQUIT (nginx's graceful stop), SIGINT, SIGHUP, SIGUSR1, SIGUSR2 or SIGWINCH. The runtime
	// still SIGKILLs it when drain.stop_grace runs out.
	StopSignal string `mapstructure:"stop_signal"`
}

// stopSignals are the signal names services[].stop_signal accepts.
var stopSignals = []string{"SIGTERM", "SIGQUIT", "SIGINT", "SIGHUP", "SIGUSR1", "SIGUSR2", "SIGWINCH"}

// Kinds of service (services[].kind).
const (
	KindApp  = "app"  // anything behind the balancer
	KindLB   = "lb"   // an instance of zero502 lb, behind the edges
	KindEdge = "edge" // an instance of zero502 edge forward, in the DNS A record set
)

// lbHealthPath is the in-house LB's own health endpoint: 200 while it serves, 503 from the
// moment it drains. The default health path of a service of kind lb.
const lbHealthPath = "/_lb/health"

// Drain modes of a service (services[].drain).
const (
	DrainHandshake = "handshake" // the service answers 503 on health while it keeps serving
	DrainBalancer  = "balancer"  // the deployer drains its target at the balancer first
)

// ServiceHealth is the HTTP health rule of a service (package healthcheck): GET Path on a fresh
// connection, never following a redirect, answers ExpectStatus within Timeout.
type ServiceHealth struct {
	// Path is the path to GET. Default: health_path, else balancer.health_path.
	Path string `mapstructure:"path"`
	// ExpectStatus is the one status code a healthy service answers (a 301 passes only 301).
	// Default 200. The in-house LB and the edge keep the lab's rule, 200 only.
	ExpectStatus int `mapstructure:"expect_status"`
	// Timeout bounds one check, the deployer's and the watchdog's. Default balancer.timeout.
	Timeout time.Duration `mapstructure:"timeout"`
}

// Rule is the configured health check as the one HTTP health rule every checker runs.
func (h ServiceHealth) Rule() healthcheck.Rule {
	return healthcheck.Rule{Path: h.Path, Status: h.ExpectStatus, Timeout: h.Timeout}
}

// Hooks are the lifecycle hooks of a deploy. Each runs with the deploy's facts in ZERO502_*
// variables (HookEnv) and within its timeout; an unset hook (no command) is skipped.
type Hooks struct {
	// PreDeploy runs once, on the deployer's machine, after preflight and before any host is
	// touched; its failure refuses the deploy (nothing changed).
	PreDeploy Hook `mapstructure:"pre_deploy"`
	// PreTraffic runs per host, where the host's step runs, once the new instance of the balanced
	// service answers its health check (and its smoke requests) and before the balancer sends it
	// users; its failure rolls the host back before it took any traffic.
	PreTraffic Hook `mapstructure:"pre_traffic"`
	// PostTraffic runs per host, where the host's step runs, once the new version is in rotation,
	// baked and verified; its failure rolls the host back.
	PostTraffic Hook `mapstructure:"post_traffic"`
	// PostDeploy runs once, on the deployer's machine, after every host was deployed and
	// verified; its failure makes the deploy exit 1 and changes no host.
	PostDeploy Hook `mapstructure:"post_deploy"`
	// OnFailure runs once, on the deployer's machine, after a deploy failed (and its rollback
	// ran), with ZERO502_ERROR; its own failure is reported, the deploy's exit stays 1.
	OnFailure Hook `mapstructure:"on_failure"`
}

// Hook is one lifecycle hook: a program and its arguments (no shell: write ["sh", "-c", "…"]
// for one), killed with its process group when Timeout runs out.
type Hook struct {
	// Command is the program and its arguments; the program must be a file only root or this
	// user can change (package trust). Empty: no hook.
	Command []string `mapstructure:"command"`
	// Timeout bounds the hook's run. Default 30s.
	Timeout time.Duration `mapstructure:"timeout"`
}

// Set reports whether the hook has a command.
func (h Hook) Set() bool { return len(h.Command) > 0 }

// Named are the hooks with their config keys, in the order a deploy meets them.
func (h Hooks) Named() []namedHook {
	return []namedHook{
		{"pre_deploy", h.PreDeploy}, {"pre_traffic", h.PreTraffic}, {"post_traffic", h.PostTraffic},
		{"post_deploy", h.PostDeploy}, {"on_failure", h.OnFailure},
	}
}

// namedHook is a hook and its key under hooks.
type namedHook struct {
	Name string
	Hook Hook
}

// SmokeRequest is one of services[].smoke.
type SmokeRequest struct {
	// Method is the request's method. Default GET.
	Method string `mapstructure:"method"`
	// Path is the request's path and query, e.g. /orders?dry-run=1. Required.
	Path string `mapstructure:"path"`
	// Body is the request's body ("" for none).
	Body string `mapstructure:"body"`
	// ExpectStatus is the status the answer must have. Default 200.
	ExpectStatus int `mapstructure:"expect_status"`
	// ExpectBody, when set, must appear in the answer's body; {version} is the version deployed.
	ExpectBody string `mapstructure:"expect_body"`
	// Timeout bounds the request. Default balancer.timeout.
	Timeout time.Duration `mapstructure:"timeout"`
}

// ServiceVerify is what the deployer checks, beyond the runtime (the running instance is the one
// started from V's spec) and health (directly and in rotation), to call a host verified. Nothing
// assumes GET / answers anything in particular.
type ServiceVerify struct {
	// VersionHeader, when set, is a response header of GET health.path that must equal the
	// version (X-Version for zero502 app).
	VersionHeader string `mapstructure:"version_header"`
	// VersionPath, when set, is a path whose GET must answer 200 with a body containing
	// ExpectBody ({version} is replaced by the version).
	VersionPath string `mapstructure:"version_path"`
	// ExpectBody is what VersionPath's body must contain. Default {version}.
	ExpectBody string `mapstructure:"expect_body"`
}

// Host is one server of the fleet.
type Host struct {
	// Name identifies the host in output, locks and specs. Required.
	Name string `mapstructure:"name"`
	// Address is where the host's services are reached: a host name or an IP address (IPv6
	// without brackets), without a port. Default 127.0.0.1.
	Address string `mapstructure:"address"`
	// PortOffset is added to every service port on this host, so several "hosts" can share one
	// machine's loopback in the demo; no port of one may then be another's, and every port plus
	// the offset must stay within 65535. Default 0.
	PortOffset int `mapstructure:"port_offset"`
	// SSH, when set (user@host[:port]), runs the host's deploy step there over the system ssh
	// (docs/deploy.md, "A fleet over SSH"); address is then required.
	SSH string `mapstructure:"ssh"`
	// StateDir overrides watchdog.state_dir for this host ({uid}: UIDPlaceholder). An absolute
	// path, as every state dir and lock path.
	StateDir string `mapstructure:"state_dir"`
	// LockPath is this host's lock ({uid}: UIDPlaceholder). Default: deploy.lock in its
	// state_dir when it sets one, else watchdog.lock_path, else deploy.lock in watchdog.state_dir.
	// An absolute path.
	LockPath string `mapstructure:"lock_path"`
	// Target is the host's ALB target id when it differs from Address: an EC2 instance id or an
	// IP address, without a port (the service's port is added). No two hosts may be one target.
	Target string `mapstructure:"target"`
}

// HostStateDir is the state directory of host h.
func (c *Config) HostStateDir(h Host) string {
	if h.StateDir != "" {
		return userPath(h.StateDir)
	}
	return userPath(c.Watchdog.StateDir)
}

// HostLockPath is the deploy lock file of host h: its own lock_path, else deploy.lock in its own
// state_dir, else watchdog.lock_path, else (the default) deploy.lock in watchdog.state_dir.
func (c *Config) HostLockPath(h Host) string {
	switch {
	case h.LockPath != "":
		return userPath(h.LockPath)
	case h.StateDir != "" || c.Watchdog.LockPath == "":
		return filepath.Join(c.HostStateDir(h), "deploy.lock")
	}
	return userPath(c.Watchdog.LockPath)
}

// FleetLockHost is rollout.lock_host's host (by default the first), false when the fleet has
// no host.
func (c *Config) FleetLockHost() (Host, bool) {
	for _, h := range c.Hosts {
		if c.Rollout.LockHost == "" || h.Name == c.Rollout.LockHost {
			return h, true
		}
	}
	return Host{}, false
}

// FleetLockPath is the fleet-wide deploy lock, a path on the lock host: rollout.lock_path, else
// fleet.lock in the lock host's state dir.
func (c *Config) FleetLockPath() string {
	if c.Rollout.LockPath != "" {
		return userPath(c.Rollout.LockPath)
	}
	if h, ok := c.FleetLockHost(); ok {
		return filepath.Join(c.HostStateDir(h), "fleet.lock")
	}
	return filepath.Join(userPath(c.Watchdog.StateDir), "fleet.lock")
}

// BalancedService is the service that sits behind the balancer, or false when none has a port.
func (c *Config) BalancedService() (Service, bool) {
	for _, s := range c.Services {
		if c.Balancer.Service == "" && s.Port > 0 || s.Name == c.Balancer.Service && s.Name != "" {
			return s, true
		}
	}
	return Service{}, false
}

// ServiceAddr is the host:port where service s answers on host h (its first port).
func (h Host) ServiceAddr(s Service) string {
	return net.JoinHostPort(h.Address, strconv.Itoa(s.Port+h.PortOffset))
}

// ServiceAddrs are every host:port service s may answer on, on host h: its port, or both of its
// start-first ports.
func (h Host) ServiceAddrs(s Service) []string {
	if len(s.Ports) == 0 {
		return []string{h.ServiceAddr(s)}
	}
	out := make([]string, 0, len(s.Ports))
	for _, p := range s.Ports {
		out = append(out, net.JoinHostPort(h.Address, strconv.Itoa(p+h.PortOffset)))
	}
	return out
}

// Targets are the balancer's targets: the balanced service's address on every host, in host
// order; both addresses of each host for a start-first service with two ports (the one not in
// use is simply unhealthy at the balancer and gets no traffic).
func (c *Config) Targets() []string {
	s, ok := c.BalancedService()
	if !ok {
		return nil
	}
	out := make([]string, 0, len(c.Hosts)*max(1, len(s.Ports)))
	for _, h := range c.Hosts {
		out = append(out, h.ServiceAddrs(s)...)
	}
	return out
}

// Host returns the host named name.
func (c *Config) Host(name string) (Host, bool) {
	for _, h := range c.Hosts {
		if h.Name == name {
			return h, true
		}
	}
	return Host{}, false
}
