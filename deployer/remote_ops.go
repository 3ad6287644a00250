package deployer

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"strings"

	"github.com/zero502/zero502/infra/config"
)

// Stop and logs for hosts reached over ssh: as for a deploy step, the command runs on the host
// itself (`zero502 host stop`, `zero502 host logs`), with the host's own lock and runtime, and
// its output comes back over the ssh connection.

// StopResult is the last line `zero502 host stop` prints.
type StopResult struct {
	Stopped bool   `json:"stopped"`
	Error   string `json:"error,omitempty"`
}

// HostStop runs Stop for host name on this machine, taken as local (what `zero502 host stop`
// runs on a host reached over ssh).
func HostStop(ctx context.Context, cfg *config.Config, name, service string, opts Options) error {
	d, h, err := onHost(cfg, name, opts)
	if err != nil {
		return err
	}
	d.action = "zero502 stop"
	return d.stopHost(ctx, h, service)
}

// HostLogs runs Logs for host name on this machine, taken as local.
func HostLogs(ctx context.Context, cfg *config.Config, name, service string, follow bool, w io.Writer) error {
	h, ok := cfg.Host(name)
	if !ok {
		return fmt.Errorf("--host %q: the config has no host of that name (hosts[].name)", name)
	}
	h.SSH = ""
	one := *cfg
	one.Hosts = []config.Host{h}
	return Logs(ctx, &one, name, service, follow, w, Options{})
}

// remoteStop is stopHost for a host reached over ssh: its events are relayed, its error taken
// from its last line.
func (d *Deployer) remoteStop(ctx context.Context, h config.Host, service string) error {
	args := []string{"host", "stop", "--config", "-", "--host", h.Name, "--lock-timeout", d.opts.LockTimeout.String()}
	if service != "" {
		args = append(args, "--service", service)
	}
	var result *StopResult
	err := d.runRemote(ctx, h, args, func(b []byte) {
		var l struct {
			Event
			StopResult
		}
		if json.Unmarshal(b, &l) != nil {
			return
		}
		if l.Step != "" {
			d.emit(l.Event)
			return
		}
		r := l.StopResult
		result = &r
	})
	switch {
	case result != nil && result.Error != "":
		return errors.New(result.Error)
	case err != nil:
		return err
	case result == nil:
		return fmt.Errorf("host %s: zero502 host stop ended without its result: look at the host with zero502 status", h.Name)
	}
	return nil
}

// remoteLogs is Logs for a host reached over ssh: `zero502 host logs` there, its output copied
// to w line by line.
func (d *Deployer) remoteLogs(ctx context.Context, h config.Host, service string, follow bool, w io.Writer) error {
	args := []string{"host", "logs", "--config", "-", "--host", h.Name, "--service", service}
	if follow {
		args = append(args, "--follow")
	}
	var werr error
	err := d.runRemote(ctx, h, args, func(b []byte) {
		if werr == nil {
			_, werr = io.WriteString(w, strings.TrimRight(string(b), "\n")+"\n")
		}
	})
	return errors.Join(err, werr)
}
