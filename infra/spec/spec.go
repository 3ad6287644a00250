// Package spec owns the published desired state of a host: which services it runs, at which
// version, from which image or command, on which ports, with which health paths and environment.
// One file per host, written only by the deployer under the host lock, atomically (temp file,
// fsync, rename, fsync of the directory), so a reader (the watchdog) sees the old spec or the new
// one and never half of either. See docs/ARCHITECTURE.md, "Locks and the published spec".
package spec

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"os/user"
	"path/filepath"
	"reflect"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/zero502/zero502/infra/config"
	"github.com/zero502/zero502/infra/healthcheck"
	"github.com/zero502/zero502/infra/secrets"
	"github.com/zero502/zero502/infra/trust"
)

// fileName is the spec's file name inside a host's state dir.
const fileName = "spec.json"

// The modes of what zero502 writes in a state dir. The spec (which holds services' env) and the
// instance records are PrivateMode, the owner's alone, and so is the host lock (infra/hostlock);
// the rest (metrics, the lock's holder record, the watchdog's counters) is FileMode, readable by
// a collector or a status reader. A
// state dir is DirMode: only its owner may write it, its group (node_exporter's textfile
// collector, added to it) may read it, others may not enter.
const (
	FileMode    os.FileMode = 0o644
	PrivateMode os.FileMode = 0o600
	DirMode     os.FileMode = 0o750
)

// Spec is the desired state of one host.
type Spec struct {
	// Host is the host's name.
	Host string `json:"host"`
	// Version is the version the deployer rolled out to this host.
	Version string `json:"version"`
	// PublishedAt and PublishedBy say when and by whom (user@machine pid N) it was written.
	PublishedAt time.Time `json:"published_at"`
	PublishedBy string    `json:"published_by"`
	// LockPath is the host lock its publisher held (the deploy's config's, Config.HostLockPath):
	// the watchdog takes it too, so a server whose own config names another lock never acts
	// while a deploy holds this one. Empty in a spec published before it was recorded.
	LockPath string `json:"lock_path,omitempty"`
	// Services are the host's services, rendered for this host (placeholders filled in).
	Services []Service `json:"services"`
}

// Service is one service's desired state on one host.
type Service struct {
	Name    string   `json:"name"`
	Version string   `json:"version"`
	Image   string   `json:"image,omitempty"`
	Command []string `json:"command,omitempty"`
	// Address is host:port where the service answers (port offset applied); empty without a port.
	Address string `json:"address,omitempty"`
	// Port is the port the service listens on (port offset applied); 0 without a port.
	Port int `json:"port,omitempty"`
	// Ports are a start-first service's two ports (offset applied); Port is one of them.
	Ports      []int             `json:"ports,omitempty"`
	HealthPath string            `json:"health_path,omitempty"`
	Env        map[string]string `json:"env,omitempty"`
	// Secrets are the digests (secrets.Digest) of the service's secrets by name: what the spec
	// says of them. Their values, SecretEnv, live beside the spec in its secrets file (SecretsPath,
	// PrivateMode), never in it.
	Secrets   map[string]string        `json:"secrets,omitempty"`
	SecretEnv map[string]secrets.Value `json:"-"`
	// HealthStatus is the status a healthy answer on HealthPath has (services[].health);
	// HealthTimeout bounds one check.
	HealthStatus  int           `json:"health_status,omitempty"`
	HealthTimeout time.Duration `json:"health_timeout,omitempty"`
	// Drain is handshake or balancer (services[].drain): who takes the target out of rotation.
	Drain string `json:"drain,omitempty"`
	// VersionHeader, VersionPath and ExpectBody are services[].verify, {version} filled in.
	VersionHeader string `json:"version_header,omitempty"`
	VersionPath   string `json:"version_path,omitempty"`
	ExpectBody    string `json:"expect_body,omitempty"`
	// StopSignal asks the service to stop gracefully (services[].stop_signal): SIGTERM, or
	// SIGQUIT for nginx…; empty means SIGTERM. Runtimes send it, then SIGKILL after the grace.
	StopSignal string `json:"stop_signal,omitempty"`
	// User is services[].user as configured ("" when not set). RunAs is the user the process
	// runtime starts it as, resolved when the spec is published: User, or else the publisher
	// (the deploy's user on the host), so every heal starts it as the same user whoever runs
	// the watchdog. Empty for a docker service without User (the image's USER applies).
	User  string `json:"user,omitempty"`
	RunAs string `json:"run_as,omitempty"`
	// Stopped marks a service that must not run; the watchdog never starts it.
	Stopped bool `json:"stopped,omitempty"`
}

// HealthRule is the service's HTTP health rule as published (services[].health): GET HealthPath
// answers HealthStatus (200 when the spec names none) within HealthTimeout (0 when the spec
// carries none: the checker's own bound applies). The deployer, the watchdog and the status
// view all check a published service by it.
func (s Service) HealthRule() healthcheck.Rule {
	return healthcheck.Rule{Path: s.HealthPath, Status: s.HealthStatus, Timeout: s.HealthTimeout}
}

// Environment is the service's whole configured environment: Env with its secrets' values on
// top, what a runtime gives the process or the container (and nothing else prints).
func (s Service) Environment() map[string]string {
	if len(s.SecretEnv) == 0 {
		return s.Env
	}
	env := make(map[string]string, len(s.Env)+len(s.SecretEnv))
	for k, v := range s.Env {
		env[k] = v
	}
	for k, v := range s.SecretEnv {
		env[k] = string(v)
	}
	return env
}

// Digest names what an instance of the service is made from: its name, version, image,
// command, address, environment (its secrets by their digests, never their values), user and
// stop signal. A runtime records it with each instance it starts, so that an instance of the
// same version started from another config (a deploy that changed only the env, interrupted
// after it published) is not taken for this one.
func (s Service) Digest() string {
	sum := sha256.New()
	_ = json.NewEncoder(sum).Encode([]any{s.Name, s.Version, s.Image, s.Command, s.Address, s.Env, s.Secrets, s.User, s.StopSignal})
	return hex.EncodeToString(sum.Sum(nil))[:16]
}

// Service returns the service named name.
func (s Spec) Service(name string) (Service, bool) {
	for _, svc := range s.Services {
		if svc.Name == name {
			return svc, true
		}
	}
	return Service{}, false
}

// Unresolved is the digest a rendered spec records for a secret whose value the config does not
// hold (nobody resolved it): it matches no published digest, and Publish refuses it.
const Unresolved = "unresolved"

// Path is the spec file of a host whose state dir is stateDir.
func Path(stateDir string) string { return filepath.Join(stateDir, fileName) }

// Render builds host h's spec at version from the config, every service on its (first) port.
// self is the path of the running zero502 binary, which {self} in a command stands for.
func Render(cfg *config.Config, h config.Host, version, self string) Spec {
	return RenderOn(cfg, h, version, self, nil)
}

// RenderOn is Render with a chosen port for some services: on[name] is one of the service's
// ports (services[].ports, before the host's offset), the one its new instance is to take.
func RenderOn(cfg *config.Config, h config.Host, version, self string, on map[string]int) Spec {
	s := Spec{Host: h.Name, Version: version}
	for _, svc := range cfg.Services {
		port := 0
		addr := ""
		if p, ok := on[svc.Name]; ok && p > 0 {
			svc.Port = p
		}
		if svc.Port > 0 {
			port = svc.Port + h.PortOffset
			addr = h.ServiceAddr(svc)
		}
		r := strings.NewReplacer(
			"{self}", self,
			"{version}", version,
			"{port}", fmt.Sprint(port),
			"{host}", h.Name,
			"{address}", h.Address,
			"{drain}", cfg.Drain.Window.String(),
			"{shutdown}", cfg.Drain.Shutdown.String(),
			"{idle_timeout}", cfg.App.KeepAliveIdleTimeout.String(),
		)
		out := Service{
			Name:       svc.Name,
			Version:    version,
			Image:      r.Replace(svc.Image),
			Address:    addr,
			Port:       port,
			HealthPath: svc.HealthPath,
			StopSignal: svc.StopSignal,
			User:       svc.User,

			HealthStatus:  svc.Health.ExpectStatus,
			HealthTimeout: svc.Health.Timeout,
			Drain:         svc.Drain,
			VersionHeader: svc.Verify.VersionHeader,
			VersionPath:   r.Replace(svc.Verify.VersionPath),
			ExpectBody:    r.Replace(svc.Verify.ExpectBody),
		}
		for _, p := range svc.Ports {
			out.Ports = append(out.Ports, p+h.PortOffset)
		}
		for _, a := range svc.Command {
			out.Command = append(out.Command, r.Replace(a))
		}
		if len(svc.Env) > 0 {
			out.Env = map[string]string{}
			for k, v := range svc.Env {
				out.Env[k] = r.Replace(v)
			}
		}
		for _, name := range svc.Secrets {
			v, ok := cfg.SecretValues[name]
			if out.Secrets == nil {
				out.Secrets, out.SecretEnv = map[string]string{}, map[string]secrets.Value{}
			}
			out.Secrets[name] = Unresolved
			if ok {
				out.Secrets[name], out.SecretEnv[name] = secrets.Digest(name, v), v
			}
		}
		s.Services = append(s.Services, out)
	}
	return s
}

// Same reports whether a and b ask for the same thing: the same host, version and services,
// whoever published them and when (and so whoever a default services[].user resolved to). A
// deploy of an unchanged version with a changed config (env, command, ports, user) is not the
// same and is rolled out.
func Same(a, b Spec) bool {
	return reflect.DeepEqual(unpublished(a), unpublished(b))
}

// unpublished is s without what Publish adds: when, by whom, under which lock, and each
// service's RunAs.
func unpublished(s Spec) Spec {
	s.PublishedAt, s.PublishedBy, s.LockPath = time.Time{}, "", ""
	s.Services = slices.Clone(s.Services)
	for i := range s.Services {
		s.Services[i].RunAs = ""
	}
	return s
}

// resolveRunAs fills each service's RunAs: its User, or for a process service the publisher
// (this process's user, as the user database names it).
func resolveRunAs(s Spec) Spec {
	s.Services = slices.Clone(s.Services)
	for i, svc := range s.Services {
		switch {
		case svc.RunAs != "":
		case svc.User != "":
			s.Services[i].RunAs = svc.User
		case svc.Image == "":
			s.Services[i].RunAs = publisher()
		}
	}
	return s
}

// publisher is the name of the user running this process (its uid when the user database has
// no name for it).
func publisher() string {
	if u, err := user.Current(); err == nil && u.Username != "" {
		return u.Username
	}
	return strconv.Itoa(os.Getuid())
}

// ErrNone is returned by Read when the host has no published spec yet (a fresh host).
var ErrNone = errors.New("no published spec")

// ErrCorrupt is wrapped by Read when the spec file is not a spec (half-written by hand, a full
// disk): the deployer sets it aside with SetAside and treats the host by what runs on it.
var ErrCorrupt = errors.New("not a readable spec")

// CorruptSuffix is added to a corrupt spec's name when it is set aside.
const CorruptSuffix = ".corrupt"

// SetAside renames the corrupt spec at path to path+CorruptSuffix (replacing an older one), so
// the host can be republished and the bad file is kept for a look. Call it under the host lock.
func SetAside(path string) (string, error) {
	to := path + CorruptSuffix
	if err := os.Rename(path, to); err != nil {
		return "", fmt.Errorf("set the corrupt spec %s aside: %w", path, err)
	}
	return to, nil
}

// ErrUntrusted is wrapped by Read when the spec, or a directory above it, could be changed by
// another user than root and the one zero502 runs as (infra/trust): what it says would be run.
var ErrUntrusted = errors.New("not trusted")

// Read reads the spec at path. A missing file is ErrNone; a corrupt one is an error that says so;
// one another user could have written (trust.Check: the file or a directory above it group- or
// world-writable, or owned by someone else) is refused, ErrUntrusted, and never believed. A spec
// replaced by a publish between the read of it and the read of its secret values (which the
// publish drops once the new spec is in place) is read again: a reader without the host lock
// (status) never takes a publish for corruption.
func Read(path string) (Spec, error) {
	for attempt := 1; ; attempt++ {
		s, read, err := readOnce(path)
		if err == nil || read == nil || attempt == 3 {
			return s, err
		}
		if now, serr := os.Stat(path); serr != nil || os.SameFile(now, read) {
			return s, err
		}
	}
}

// afterSpecRead, when set (tests), runs between the read of a spec and the read of its values.
var afterSpecRead func()

// readOnce is one Read; read is the spec file it read, when its secret values were unreadable.
func readOnce(path string) (Spec, os.FileInfo, error) {
	// Checked before a byte is read, and the file read is the one checked (trust.Open).
	f, err := trust.Open(path, os.Getuid())
	switch {
	case errors.Is(err, trust.ErrRefused):
		return Spec{}, nil, fmt.Errorf("spec %s is %w, so nothing it says is run: %w", path, ErrUntrusted, err)
	case errors.Is(err, os.ErrNotExist):
		return Spec{}, nil, fmt.Errorf("%s: %w", path, ErrNone)
	case err != nil:
		return Spec{}, nil, fmt.Errorf("read spec: %w", err)
	}
	fi, err := f.Stat()
	if err != nil {
		f.Close()
		return Spec{}, nil, fmt.Errorf("read spec: %w", err)
	}
	data, err := io.ReadAll(f)
	f.Close()
	if err != nil {
		return Spec{}, nil, fmt.Errorf("read spec: %w", err)
	}
	var s Spec
	if err := json.Unmarshal(data, &s); err != nil {
		return Spec{}, nil, fmt.Errorf("spec %s is corrupt (%v): %w; zero502 deploy --version V sets it aside "+
			"(as %s%s) and republishes the host", path, err, ErrCorrupt, fileName, CorruptSuffix)
	}
	if afterSpecRead != nil {
		afterSpecRead()
	}
	if err := readSecrets(path, &s); err != nil {
		return Spec{}, fi, fmt.Errorf("spec %s: %w: %w; zero502 deploy --version V sets it aside and republishes the host", path, err, ErrCorrupt)
	}
	return s, nil, nil
}

// Publish writes s to path atomically: a temp file in the same directory, fsync, rename over the
// old spec, fsync of the directory. Call it only under the host lock.
func Publish(path string, s Spec) error {
	if s.PublishedAt.IsZero() {
		s.PublishedAt = time.Now().UTC()
	}
	if s.PublishedBy == "" {
		s.PublishedBy = Holder()
	}
	s = resolveRunAs(s)
	data, err := json.MarshalIndent(s, "", "  ")
	if err != nil {
		return err
	}
	return publishWithSecrets(path, s, func() error { return WritePrivate(path, append(data, '\n')) })
}

// WriteAtomic replaces the file at path with data so that readers see either the old or the new
// content: temp file in the same directory, fsync, rename, fsync of the directory. The file gets
// FileMode whatever the umask (a temp file starts 0600); a missing directory is created DirMode.
func WriteAtomic(path string, data []byte) error { return writeAtomic(path, data, FileMode) }

// WritePrivate is WriteAtomic for a file only its owner may read (PrivateMode): the spec, an
// instance record.
func WritePrivate(path string, data []byte) error { return writeAtomic(path, data, PrivateMode) }

func writeAtomic(path string, data []byte, mode os.FileMode) error {
	dir := filepath.Dir(path)
	if err := trust.MkdirAll(dir, DirMode, os.Getuid()); err != nil {
		return fmt.Errorf("create %s: %w", dir, err)
	}
	f, err := os.CreateTemp(dir, "."+filepath.Base(path)+".tmp-*")
	if err != nil {
		return fmt.Errorf("write %s: %w", path, err)
	}
	tmp := f.Name()
	defer os.Remove(tmp) // no-op after a successful rename
	if err := f.Chmod(mode); err != nil {
		f.Close()
		return fmt.Errorf("chmod %s: %w", tmp, err)
	}
	if _, err := f.Write(data); err != nil {
		f.Close()
		return fmt.Errorf("write %s: %w", path, err)
	}
	if err := f.Sync(); err != nil {
		f.Close()
		return fmt.Errorf("fsync %s: %w", tmp, err)
	}
	if err := f.Close(); err != nil {
		return fmt.Errorf("write %s: %w", path, err)
	}
	if err := os.Rename(tmp, path); err != nil {
		return fmt.Errorf("rename %s over %s: %w", tmp, path, err)
	}
	d, err := os.Open(dir)
	if err != nil {
		return fmt.Errorf("fsync %s: %w", dir, err)
	}
	defer d.Close()
	if err := d.Sync(); err != nil {
		return fmt.Errorf("fsync %s: %w", dir, err)
	}
	return nil
}

// Holder names this process for lock and spec records: user@machine pid N.
func Holder() string {
	host, _ := os.Hostname()
	user := os.Getenv("USER")
	if user == "" {
		user = fmt.Sprint(os.Getuid())
	}
	return fmt.Sprintf("%s@%s pid %d", user, host, os.Getpid())
}
