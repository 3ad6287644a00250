package deployer

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"slices"
	"strings"
	"time"

	"github.com/zero502/zero502/deployer/balancer"
	"github.com/zero502/zero502/infra/config"
	"github.com/zero502/zero502/infra/hostlock"
	"github.com/zero502/zero502/infra/runtime/process"
	"github.com/zero502/zero502/infra/spec"
	"github.com/zero502/zero502/watchdog"
)

// FleetStatus is what runs where, against what each host's published spec asks: `zero502 status`.
type FleetStatus struct {
	// Balancer names the balancer whose view InRotation comes from.
	Balancer string       `json:"balancer"`
	Hosts    []HostStatus `json:"hosts"`
}

// HostStatus is one host: its published spec, its lock, its services.
type HostStatus struct {
	Host string `json:"host"`
	// Published is the published spec's version ("" when none), PublishedAt when it was written.
	Published   string    `json:"published"`
	PublishedAt time.Time `json:"published_at,omitzero"`
	// LockHeldBy names the host lock's holder ("" when free).
	LockHeldBy string          `json:"lock_held_by,omitempty"`
	Services   []serviceStatus `json:"services"`
	// Problems are the host's own disagreements (no spec, unreadable state), before its services'.
	Problems []string `json:"problems,omitempty"`
}

// serviceStatus is one service on one host.
type serviceStatus struct {
	Service string `json:"service"`
	// Want is the version the spec asks for; Stopped says the spec marks it stopped.
	Want    string `json:"want"`
	Stopped bool   `json:"stopped,omitempty"`
	// Secrets are the service's secrets by name, as its spec records them, each with whether
	// every host has the same value (SecretSame) or which of the values this host has (Status
	// labels them): never the value, nor its digest (a digest in a CI log would let anyone test
	// guesses of a weak secret offline).
	Secrets   map[string]string `json:"secrets,omitempty"`
	Instances []instanceStatus  `json:"instances"`
	// Watchdog is the watchdog's streak and last heal for the service (nil: it never ticked).
	Watchdog *watchdog.Streak `json:"watchdog,omitempty"`
	// Problems say where the service disagrees with its spec; empty when it agrees.
	Problems []string `json:"problems,omitempty"`
}

// instanceStatus is one running instance: which version, since when, healthy directly and at
// the balancer.
type instanceStatus struct {
	ID      string    `json:"id"`
	Version string    `json:"version"`
	Address string    `json:"address,omitempty"`
	Since   time.Time `json:"since"`
	// Digest is the config digest it was started from (runtime.Instance.Digest).
	Digest string `json:"digest,omitempty"`
	// Healthy is the direct health check (for a service without a port: the runtime's view);
	// HealthError says why not.
	Healthy     bool   `json:"healthy"`
	HealthError string `json:"health_error,omitempty"`
	// Balancer is the balancer's view of the instance's target (nil: no view, not balanced).
	Balancer *balancer.TargetState `json:"balancer,omitempty"`
}

// OK reports whether every host agrees with its published spec.
func (s *FleetStatus) OK() bool {
	for _, h := range s.Hosts {
		if len(h.Problems) > 0 {
			return false
		}
		for _, svc := range h.Services {
			if len(svc.Problems) > 0 {
				return false
			}
		}
	}
	return true
}

// lookOnly is opts for a command that only looks (status, a host's look): with the process
// runtime and no runtime given, the runtime that makes no directory (process.Open), so a host
// never deployed keeps having no state dir (one root made would refuse the deploy user's first
// deploy).
func lookOnly(cfg *config.Config, opts Options) Options {
	if opts.Runtime == nil && cfg.Rollout.Runtime == config.RuntimeProcess {
		opts.Runtime = func(h config.Host) (Runtime, error) {
			rt, err := process.Open(cfg.HostStateDir(h))
			if err != nil {
				return nil, err // never a typed nil *process.Runtime inside the interface
			}
			return rt, nil
		}
	}
	return opts
}

// Status reads every host's published spec, lock, watchdog state and running instances, checks
// each instance's health directly and its target at the balancer, and says where the fleet
// disagrees with its specs. It changes nothing: no lock is taken, no file written. Hosts reached
// over ssh are reported as not looked at (run zero502 status on them).
func Status(ctx context.Context, cfg *config.Config, opts Options) (*FleetStatus, error) {
	d := New(cfg, lookOnly(cfg, opts))
	if err := d.setup(); err != nil {
		return nil, err
	}
	// One look per host: no control master (its start and `ssh -O exit` would cost half again a
	// login), each host's look is a connection of its own.
	out := &FleetStatus{Balancer: d.bal.Name(), Hosts: make([]HostStatus, len(cfg.Hosts))}
	d.eachHost(hostIndexes(len(cfg.Hosts)), func(i int) { out.Hosts[i] = d.hostStatus(ctx, cfg.Hosts[i]) })
	labelSecrets(out)
	return out, nil
}

// SecretSame labels a secret every host that has it has with the same value.
const SecretSame = "the same on every host"

// labelSecrets replaces each secret's digest (what the hosts' specs record) with what it tells:
// SecretSame, or "value K of N: differs between hosts", the values numbered in host order.
func labelSecrets(out *FleetStatus) {
	type secret struct{ service, name string }
	values := map[secret][]string{}
	for _, h := range out.Hosts {
		for _, s := range h.Services {
			for _, name := range slices.Sorted(maps.Keys(s.Secrets)) {
				k := secret{s.Service, name}
				if !slices.Contains(values[k], s.Secrets[name]) {
					values[k] = append(values[k], s.Secrets[name])
				}
			}
		}
	}
	for _, h := range out.Hosts {
		for _, s := range h.Services {
			labels := make(map[string]string, len(s.Secrets))
			for name, digest := range s.Secrets {
				vs := values[secret{s.Service, name}]
				labels[name] = SecretSame
				if len(vs) > 1 {
					labels[name] = fmt.Sprintf("value %d of %d: differs between hosts", slices.Index(vs, digest)+1, len(vs))
				}
			}
			maps.Copy(s.Secrets, labels)
		}
	}
}

func (d *Deployer) hostStatus(ctx context.Context, h config.Host) HostStatus {
	hs := HostStatus{Host: h.Name}
	if h.SSH != "" {
		return d.remoteHostStatus(ctx, h)
	}
	// Bounded as a remote host's look is: a runtime that stopped answering (a hung Docker
	// Engine) makes this host's row a problem, not status a wait for ever.
	ctx, cancel := context.WithTimeout(ctx, d.lookWithin())
	defer cancel()
	if held, who, err := hostlock.Held(d.cfg.HostLockPath(h)); err != nil {
		hs.Problems = append(hs.Problems, err.Error())
	} else if held {
		hs.LockHeldBy = who.String()
	}
	dir := d.cfg.HostStateDir(h)
	published, err := spec.Read(spec.Path(dir))
	noSpec := errors.Is(err, spec.ErrNone)
	switch {
	case noSpec: // said once the services are seen: noSpecProblem
	case err != nil:
		hs.Problems = append(hs.Problems, err.Error())
	default:
		hs.Published, hs.PublishedAt = published.Version, published.PublishedAt
	}
	streaks, _, err := watchdog.ReadStreaks(dir)
	if err != nil {
		hs.Problems = append(hs.Problems, err.Error())
	}
	rt := d.runtimes[h.Name]
	for _, svc := range d.cfg.Services {
		want, inSpec := published.Service(svc.Name)
		ss := serviceStatus{Service: svc.Name, Want: want.Version, Stopped: want.Stopped, Secrets: want.Secrets}
		if st, ok := streaks[svc.Name]; ok {
			ss.Watchdog = &st
		}
		insts, err := running(ctx, rt, h.Name, svc.Name)
		if err != nil {
			ss.Problems = append(ss.Problems, err.Error())
			hs.Services = append(hs.Services, ss)
			continue
		}
		for _, in := range insts {
			is := instanceStatus{ID: in.ID, Version: in.Version, Address: in.Address, Since: in.StartedAt, Digest: in.Digest}
			switch {
			case in.Address != "" && inSpec:
				check := want.HealthRule()
				if _, err := d.checkHealth(ctx, in.Address, check); err != nil {
					is.HealthError = fmt.Sprintf("GET %s on %s: %v", check.Path, in.Address, err)
				} else {
					is.Healthy = true
				}
			case in.Health == "unhealthy":
				is.HealthError = "the runtime's health check says unhealthy"
			default:
				is.Healthy = true
			}
			if bsvc, ok := d.cfg.BalancedService(); ok && bsvc.Name == svc.Name && d.view && in.Address != "" {
				if st, err := d.bal.TargetState(ctx, in.Address); err == nil {
					is.Balancer = &st
				} else {
					is.Balancer = &balancer.TargetState{State: "unknown: " + err.Error()}
				}
			}
			ss.Instances = append(ss.Instances, is)
		}
		ss.Problems = append(ss.Problems, disagreements(want, inSpec, ss.Instances)...)
		hs.Services = append(hs.Services, ss)
	}
	if noSpec {
		hs.Problems = append(hs.Problems, noSpecProblem(spec.Path(dir), hs.Services))
	}
	return hs
}

// noSpecProblem is what status says of a host with no spec published at path: never deployed
// when none of its services runs; otherwise what runs, since a deploy did publish one, at another
// state dir (a config whose hosts[].state_dir differs), or its services were started by hand.
func noSpecProblem(path string, services []serviceStatus) string {
	var runs []string
	for _, s := range services {
		for _, in := range s.Instances {
			runs = append(runs, s.Service+" "+in.Version)
		}
	}
	if len(runs) == 0 {
		return "no published spec: never deployed (zero502 deploy --version V)"
	}
	return fmt.Sprintf("no published spec at %s, but %s runs: deployed with another state dir (make hosts[].state_dir match the "+
		"deployer's config) or started by hand; zero502 deploy --version V publishes one", path, strings.Join(runs, ", "))
}

// remoteHostStatus is hostStatus for a host reached over ssh: everything the host knows is read
// there by `zero502 host look`; the balancer's view of its instances is added from here, as the
// balancer sees them.
func (d *Deployer) remoteHostStatus(ctx context.Context, h config.Host) HostStatus {
	l, err := d.lookRemote(ctx, h, "none")
	switch {
	case err != nil:
		return HostStatus{Host: h.Name, Problems: []string{fmt.Sprintf("reached over ssh (%s): %v", h.SSH, err)}}
	case l.Status == nil:
		return HostStatus{Host: h.Name, Problems: []string{fmt.Sprintf("reached over ssh (%s): its zero502 reports no status: "+
			"install this version there (zero502 host install)", h.SSH)}}
	case l.Status.Host != "" && l.Status.Host != h.Name: // a host reports for itself only (as a step's report: turn.hear)
		return HostStatus{Host: h.Name, Problems: []string{fmt.Sprintf("reached over ssh (%s): its look reports the status of host %q, "+
			"not of %s: dropped; check what hosts[].ssh of %s reaches, and the zero502 there", h.SSH, l.Status.Host, h.Name, h.Name)}}
	}
	hs := *l.Status
	hs.Host = h.Name
	bsvc, balanced := d.cfg.BalancedService()
	for i := range hs.Services {
		ss := &hs.Services[i]
		if !balanced || ss.Service != bsvc.Name || !d.view {
			continue
		}
		for j := range ss.Instances {
			in := &ss.Instances[j]
			if in.Address == "" {
				continue
			}
			st, err := d.bal.TargetState(ctx, in.Address)
			if err != nil {
				st = balancer.TargetState{State: "unknown: " + err.Error()}
			}
			in.Balancer = &st
			if !st.InRotation && !ss.Stopped {
				ss.Problems = append(ss.Problems, fmt.Sprintf("%s not in rotation at the balancer (%s)", in.ID, st.State))
			}
		}
	}
	return hs
}

// disagreements says where a service's running instances differ from its published spec: the
// same rules as a deploy's verify (one instance, of the spec's version and config, on its address, healthy,
// in rotation where the balancer has a view), and nothing running when the spec says stopped.
func disagreements(want spec.Service, inSpec bool, insts []instanceStatus) []string {
	var out []string
	switch {
	case !inSpec && len(insts) > 0:
		return []string{fmt.Sprintf("%d instance(s) run but no published spec asks for this service", len(insts))}
	case !inSpec:
		return nil // the host's own problem (no spec) says it
	case want.Stopped && len(insts) > 0:
		return []string{fmt.Sprintf("stopped by the spec, but %d instance(s) run", len(insts))}
	case want.Stopped:
		return nil
	case len(insts) == 0:
		return []string{fmt.Sprintf("the spec asks for %s, nothing runs (the watchdog heals it after watchdog.heal_after failed ticks)", want.Version)}
	case len(insts) > 1:
		out = append(out, fmt.Sprintf("%d instances run, the spec asks for one", len(insts)))
	}
	for _, in := range insts {
		if in.Version != want.Version {
			out = append(out, fmt.Sprintf("%s runs %s, the spec asks for %s", in.ID, in.Version, want.Version))
		}
		if in.Address != "" && want.Address != "" && in.Address != want.Address {
			out = append(out, fmt.Sprintf("%s answers on %s, the spec publishes %s", in.ID, in.Address, want.Address))
		}
		if in.Version == want.Version && in.Digest != "" && in.Digest != want.Digest() {
			out = append(out, fmt.Sprintf("%s runs %s from another config (digest %s) than the spec's (%s): a deploy of it was interrupted; deploy again",
				in.ID, in.Version, in.Digest, want.Digest()))
		}
		if !in.Healthy {
			out = append(out, fmt.Sprintf("%s unhealthy: %s", in.ID, in.HealthError))
		}
		if in.Balancer != nil && !in.Balancer.InRotation {
			out = append(out, fmt.Sprintf("%s not in rotation at the balancer (%s)", in.ID, in.Balancer.State))
		}
	}
	return out
}
