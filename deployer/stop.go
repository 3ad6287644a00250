package deployer

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/zero502/zero502/infra/config"
	"github.com/zero502/zero502/infra/spec"
)

// StopTarget selects what Stop stops: one host or every host (Host ""), one service or every
// service (Service "").
type StopTarget struct {
	Host, Service string
}

// Check refuses a host or service the config does not name.
func (t StopTarget) Check(cfg *config.Config) error {
	target := t
	if target.Host != "" && !slices.ContainsFunc(cfg.Hosts, func(h config.Host) bool { return h.Name == target.Host }) {
		return fmt.Errorf("--host %q: no such host in the config (hosts: %s)", target.Host, hostNames(cfg.Hosts))
	}
	if target.Service != "" && !slices.ContainsFunc(cfg.Services, func(s config.Service) bool { return s.Name == target.Service }) {
		var names []string
		for _, s := range cfg.Services {
			names = append(names, s.Name)
		}
		return fmt.Errorf("--service %q: no such service in the config (services: %s)", target.Service, strings.Join(names, ", "))
	}
	return nil
}

// Stop ends the selected services through their drain, host by host, and marks them stopped in
// each host's published spec, so the watchdog never brings them back (it starts nothing the spec
// marks stopped) and status agrees that nothing should run. Per host: the host lock (waiting up
// to Options.LockTimeout, or refusing at once with NoLockWait), the spec republished with the
// services marked stopped, then each running instance drained its way (the handshake watched at
// the balancer, or drain: balancer played by the deployer) and signalled with drain.stop_grace.
// The next zero502 deploy starts them again. A host without a published spec has its running
// instances stopped the same way and gets a spec that says so (a corrupt spec is set aside
// first, as a deploy does); its services that run nowhere there are marked stopped too, selected
// or not, so the watchdog starts nothing that was never deployed there. A host reached over ssh
// runs its part there (zero502 host stop). Interrupted (ctx ends), the host under way is stopped
// to its end and no later host is changed.
//
// Before any of that, Stop takes the fleet lock as a deploy does (fleetLock: on the lock host,
// waiting up to Options.LockTimeout or refusing at once with NoLockWait, its holder recorded as
// zero502 stop) and holds it to the end, as Kamal runs `kamal app stop` inside its deploy lock:
// a deploy running meanwhile would otherwise reach the stopped host later and publish a spec
// without the stop, silently starting the service again. A deploy holding the lock, or the
// fleet locked for maintenance (zero502 lock acquire), refuses the stop before anything changed
// (a *StopRefusedError).
func Stop(ctx context.Context, cfg *config.Config, target StopTarget, opts Options) error {
	d := New(cfg, opts)
	d.action = "zero502 stop"
	if err := target.Check(cfg); err != nil {
		return err
	}
	if err := d.setup(); err != nil {
		return err
	}
	if err := d.resolveSecrets(ctx, ""); err != nil {
		return err
	}
	d.started = d.clock.Now()
	fleet, err := d.fleetLock(ctx, "")
	if err != nil {
		var refused *refusedError
		if errors.As(err, &refused) {
			return &StopRefusedError{refused: refused}
		}
		return err
	}
	d.fleet = fleet
	defer fleet.Release()
	var errs []error
	for _, h := range cfg.Hosts {
		if target.Host != "" && h.Name != target.Host {
			continue
		}
		if err := ctx.Err(); err != nil { // interrupted: a host not reached yet is left as it is
			errs = append(errs, fmt.Errorf("stopped before host %s (it and the hosts after it unchanged; zero502 stop again stops them): %w", h.Name, err))
			break
		}
		if err := d.fleetLost(); err != nil { // over ssh: its session ended, a deploy may hold it now
			errs = append(errs, fmt.Errorf("stopped before host %s: %w", h.Name, err))
			break
		}
		if h.SSH != "" {
			if err := d.remoteStop(ctx, h, target.Service); err != nil {
				errs = append(errs, err)
			}
			continue
		}
		if err := d.stopHost(ctx, h, target.Service); err != nil {
			errs = append(errs, err)
		}
	}
	return errors.Join(errs...)
}

// StopRefusedError is Stop refused at the fleet lock, before anything changed on any host:
// another deploy (or stop) holds it, or the fleet is locked for maintenance. Its reasons are a
// refused deploy's, word for word; errors.Is(err, hostlock.ErrHeld) when another command holds
// the lock.
type StopRefusedError struct {
	refused *refusedError
}

func (e *StopRefusedError) Error() string {
	return "stop refused before anything changed: " + strings.Join(e.refused.Reasons, "; ")
}

func (e *StopRefusedError) Unwrap() error { return e.refused }

// stopHost is Stop on one host, under its lock.
func (d *Deployer) stopHost(ctx context.Context, h config.Host, only string) error {
	lock, err := d.lock(ctx, h, "")
	if err != nil {
		return err
	}
	defer lock.Release()
	rt := d.runtimes[h.Name]
	path := spec.Path(d.cfg.HostStateDir(h))
	s, err := spec.Read(path)
	if errors.Is(err, spec.ErrCorrupt) {
		to, aerr := spec.SetAside(path) // kept for a look, as a deploy does
		if aerr != nil {
			return fmt.Errorf("host %s: %w; %v", h.Name, err, aerr)
		}
		d.emit(Event{Host: h.Name, Step: StepPublish, Message: fmt.Sprintf("the published spec was corrupt: set aside as %s", to)})
		err = spec.ErrNone
	}
	var idle []string // services marked stopped because nothing runs them and no spec asks for them
	switch {
	case errors.Is(err, spec.ErrNone):
		// Stop what runs by the config's word for it; the version is whatever runs. A service
		// not selected that runs nowhere here is marked stopped too: no spec asks for it, so
		// it was never deployed here (or what deployed it is gone), and a spec asking for it
		// at version "" would have the watchdog start it. The next deploy starts it, as it
		// starts the selected ones.
		s = spec.Render(d.cfg, h, "", d.self)
		for i, svc := range s.Services {
			insts, err := running(ctx, rt, h.Name, svc.Name)
			if err != nil {
				return err
			}
			if len(insts) > 0 {
				s.Services[i].Version, s.Version = insts[0].Version, insts[0].Version
			} else if only != "" && svc.Name != only {
				s.Services[i].Stopped = true
				idle = append(idle, svc.Name)
			}
		}
	case err != nil:
		return fmt.Errorf("host %s: %w", h.Name, err)
	}
	for i := range s.Services {
		if only == "" || s.Services[i].Name == only {
			s.Services[i].Stopped = true
		}
	}
	s.PublishedAt, s.PublishedBy = time.Time{}, ""
	if err := d.publish(h, path, s); err != nil {
		return fmt.Errorf("host %s: publish the spec with the stopped services: %w; nothing was stopped", h.Name, err)
	}
	msg := "spec marks " + stoppedNames(s) + " stopped: the watchdog leaves them down"
	if len(idle) > 0 {
		msg += " (" + strings.Join(idle, ", ") + ": running nowhere here and asked for by no published spec, so the watchdog starts nothing never deployed; the next deploy starts them)"
	}
	d.emit(Event{Host: h.Name, Step: StepPublish, Version: s.Version, Message: msg})
	bsvc, balanced := d.cfg.BalancedService()
	for _, svc := range s.Services {
		if !svc.Stopped {
			continue
		}
		insts, err := running(ctx, rt, h.Name, svc.Name)
		if err != nil {
			return err
		}
		watch := balanced && svc.Name == bsvc.Name && d.view
		for _, in := range insts {
			if err := d.stop(ctx, h, rt, in, svc, watch, nil); err != nil {
				return err
			}
		}
	}
	return nil
}

func stoppedNames(s spec.Spec) string {
	var names []string
	for _, svc := range s.Services {
		if svc.Stopped {
			names = append(names, svc.Name)
		}
	}
	return strings.Join(names, ", ")
}
