package deployer

import (
	"context"
	"fmt"
	"slices"

	"github.com/zero502/zero502/deployer/balancer"
	"github.com/zero502/zero502/deployer/report"
	"github.com/zero502/zero502/infra/config"
)

// This file is the host's side of a fleet over SSH: what `zero502 host step` and `zero502 host
// look` run ON a host whose config entry has ssh:. The step is a local host's step, with the
// host's own lock and runtime; the deployer on the other end relays its events.

// StepResult is the last line `zero502 host step` prints: the host's report and its error.
type StepResult struct {
	HostReport *report.HostReport `json:"host_report"`
	Error      string             `json:"error,omitempty"`
}

// hostLook is what `zero502 host look` prints: the host's state, read on the host before a
// deploy (preflight) and after one (read-back).
type hostLook struct {
	// From is the version the host runs (its balanced service), else the one it published.
	From string `json:"from"`
	// Instance: a service instance runs; InProgress: the published spec already names the version.
	Instance   bool `json:"instance"`
	InProgress bool `json:"in_progress"`
	// Serving and Detail: the balanced service answers its health check directly, on the host.
	Serving bool   `json:"serving"`
	Detail  string `json:"detail,omitempty"`
	// Target is where the balanced service answers on the host, read from its runtime: a
	// start-first service moves between its two ports. Empty: no instance (or a zero502 there
	// that predates it: the service's first port).
	Target string `json:"target,omitempty"`
	// Previous is the version of the spec the host keeps from before the one it published, when
	// that names the version asked about (hostView.previous). Empty from a zero502 that predates it.
	Previous string `json:"previous,omitempty"`
	// Running is what every service runs, read from the host's runtime (as Report's Running).
	Running string `json:"running"`
	// Status is the host's status as `zero502 status` shows it, read on the host (without the
	// balancer's view, which the caller adds from where it runs).
	Status *HostStatus `json:"status,omitempty"`
}

// DigestHidden is what a look read by a person shows for each secret instead of its digest.
const DigestHidden = "set (its digest goes only to the deployer)"

// WithoutDigests is l with every secret's digest replaced by DigestHidden: a look run by hand
// (its config not framed by a deployer) prints no digest, which would let whoever reads the
// output (a terminal log, a ticket) test guesses of a weak secret offline. The deployer gets the
// digests to compare hosts, and labels them itself (labelSecrets).
func (l hostLook) WithoutDigests() hostLook {
	if l.Status == nil {
		return l
	}
	st := *l.Status
	st.Services = slices.Clone(st.Services)
	for i, s := range st.Services {
		if len(s.Secrets) == 0 {
			continue
		}
		hidden := make(map[string]string, len(s.Secrets))
		for name := range s.Secrets {
			hidden[name] = DigestHidden
		}
		st.Services[i].Secrets = hidden
	}
	l.Status = &st
	return l
}

// onHost returns a Deployer of cfg reduced to the one host named name, taken as local: the
// deployer that runs on that host.
func onHost(cfg *config.Config, name string, opts Options) (*Deployer, config.Host, error) {
	h, ok := cfg.Host(name)
	if !ok {
		return nil, h, fmt.Errorf("--host %q: the config has no host of that name (hosts[].name)", name)
	}
	if h.Address == "" {
		h.Address = "127.0.0.1" // its services, seen from the host itself
	}
	h.SSH = ""
	one := *cfg
	one.Hosts = []config.Host{h}
	d := New(&one, opts)
	d.started = d.clock.Now()
	if err := d.setup(); err != nil {
		return nil, h, err // a host's problem names the host already ("host web-1: runtime: …")
	}
	return d, h, nil
}

// HostStep runs host name's deploy step on this machine: the lock, the spec, the handshake,
// verify, and on failure the rollback, exactly as for a local host. opts.Events receives the
// step's events. The report's Running is read back from the host's runtime.
func HostStep(ctx context.Context, cfg *config.Config, name, version string, opts Options) (report.HostReport, error) {
	rep := report.HostReport{Host: name, To: version, Outcome: report.OutcomeNotReached}
	if err := CheckVersion("--version", version); err != nil {
		return rep, err
	}
	d, h, err := onHost(cfg, name, opts)
	if err != nil {
		return rep, err
	}
	if v, err := d.look(ctx, h, version); err == nil {
		rep.From = v.from
	}
	stepErr := d.deployHost(ctx, h, version, &rep)
	all := &report.Report{Hosts: []report.HostReport{rep}}
	d.readBack(ctx, all)
	rep.Running = all.Hosts[0].Running
	return rep, stepErr
}

// Look reads host name's state on this machine, for a deployer elsewhere: no balancer is
// asked (the deployer asks its own), services are checked directly. It changes nothing
// (lookOnly).
func Look(ctx context.Context, cfg *config.Config, name, version string, opts Options) (hostLook, error) {
	opts.Balancer = balancer.None{}
	d, h, err := onHost(cfg, name, lookOnly(cfg, opts))
	if err != nil {
		return hostLook{}, err
	}
	v, err := d.look(ctx, h, version)
	if err != nil {
		return hostLook{}, err
	}
	all := &report.Report{Hosts: []report.HostReport{{Host: name}}}
	d.readBack(ctx, all)
	st := d.hostStatus(ctx, h)
	return hostLook{From: v.from, Instance: v.instance, InProgress: v.inProgress, Previous: v.previous, Serving: v.serving,
		Detail: v.detail, Target: v.target, Running: all.Hosts[0].Running, Status: &st}, nil
}
