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
// from its last line. Its lines are heard as a deploy step's are (turn.hear, one rule for both):
// an event naming another host is dropped, as is anything else that is not its result; only a
// well-formed result line ({"stopped":true} or {"stopped":false,"error":…}) counts.
func (d *Deployer) remoteStop(ctx context.Context, h config.Host, service string) error {
	args := []string{"host", "stop", "--config", "-", "--host", h.Name, "--lock-timeout", d.remoteLockWait().String()}
	if service != "" {
		args = append(args, "--service", service)
	}
	heard := hearing(h)
	var result *StopResult
	err := d.runRemote(ctx, h, args, func(b []byte) {
		if r, ok := stopResult(b); ok {
			result = &r
			return
		}
		heard.hear(d, b)
	})
	heard.junkMu.Lock()
	defer heard.junkMu.Unlock()
	switch {
	case result != nil && result.Error != "":
		if named := "host " + h.Name + ": "; !strings.HasPrefix(result.Error, named) {
			return fmt.Errorf("%s%s", named, result.Error)
		}
		return errors.New(result.Error)
	case err != nil:
		return err
	case result == nil:
		return fmt.Errorf("host %s: zero502 host stop ended without its result (stdout said: %s): look at the host with zero502 status, then stop again",
			h.Name, &heard.junk)
	}
	return nil
}

// hearing is a turn that only hears: host h's lines from a command that runs at once (no look,
// no wait for its turn), through turn.hear, so that a host's command over ssh is heard by the
// same rule as its deploy step.
func hearing(h config.Host) *turn {
	t := &turn{h: h, goNow: make(chan struct{}), looked: make(chan struct{}), ended: make(chan struct{}), ready: make(chan struct{})}
	t.once.Do(func() { close(t.goNow) }) // begun: it runs at once
	return t
}

// stopResult reports whether line b is the result `zero502 host stop` prints last: an object
// with "stopped" and no event's step, stopped with no error or not stopped with one.
func stopResult(b []byte) (StopResult, bool) {
	var l struct {
		Step    string  `json:"step"`
		Stopped *bool   `json:"stopped"`
		Error   *string `json:"error"`
	}
	if json.Unmarshal(b, &l) != nil || l.Step != "" || l.Stopped == nil {
		return StopResult{}, false
	}
	r := StopResult{Stopped: *l.Stopped}
	if l.Error != nil {
		r.Error = *l.Error
	}
	if r.Stopped == (r.Error != "") {
		return StopResult{}, false
	}
	return r, true
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
