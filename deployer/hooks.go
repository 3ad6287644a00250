package deployer

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"sort"
	"strings"
	"time"

	"github.com/zero502/zero502/deployer/report"
	"github.com/zero502/zero502/deployer/ssh"
	"github.com/zero502/zero502/infra/boundedcmd"
	"github.com/zero502/zero502/infra/config"
	"github.com/zero502/zero502/infra/trust"
)

// Lifecycle hooks (config hooks.*), as Kamal's and CodeDeploy's: pre_deploy once before any
// host is touched, pre_traffic per host before its new instance takes users, post_traffic per
// host once it is in rotation and verified, post_deploy once after the last host, on_failure
// once after a failed deploy. A hook is a program the deployer runs with the deploy's facts in
// ZERO502_* variables (HookEnv) and the deploy job's environment less zero502's own secrets
// (boundedcmd.ChildEnv: the admin tokens, the mesh key, the webhook), its output kept in the
// hook's event, killed with its process group when its timeout runs out, and that group killed
// once it exits: what it started in the background ends with it, whether or not the deploy runs
// from a terminal. The program must be a file only root or this user can change (package trust):
// a hook another user could rewrite would run with the deployer's rights.

// stepHook is a hook that ran (its outcome and the end of its output in the message).
const stepHook = "hook"

// The variables a hook gets, besides the deployer's own environment.
const (
	hookEnvHook            = "ZERO502_HOOK"             // the hook's name: pre_deploy, pre_traffic, …
	hookEnvVersion         = "ZERO502_VERSION"          // the version being deployed
	hookEnvDeployer        = "ZERO502_DEPLOYER"         // who deploys (user@machine)
	hookEnvFleetHosts      = "ZERO502_FLEET_HOSTS"      // every host, comma-separated, in deploy order
	HookEnvHost            = "ZERO502_HOST"             // pre_traffic, post_traffic: the host
	HookEnvService         = "ZERO502_SERVICE"          // pre_traffic, post_traffic: the balanced service
	HookEnvTarget          = "ZERO502_TARGET"           // pre_traffic, post_traffic: the new instance's host:port
	HookEnvPreviousVersion = "ZERO502_PREVIOUS_VERSION" // pre_traffic, post_traffic: what the host ran before ("" fresh)
	HookEnvRunning         = "ZERO502_RUNNING"          // post_deploy, on_failure: host=version,… as read back
	HookEnvError           = "ZERO502_ERROR"            // on_failure: why the deploy failed
)

// HookEnv lists every variable a hook gets (the config loader accepts them in a hook that runs
// zero502 itself).
func HookEnv() []string {
	return []string{hookEnvHook, hookEnvVersion, hookEnvDeployer, hookEnvFleetHosts, HookEnvHost, HookEnvService,
		HookEnvTarget, HookEnvPreviousVersion, HookEnvRunning, HookEnvError}
}

// runHook runs hook name (hooks.NAME) with vars and waits for it; nil when the hook is unset. The
// error names the hook, its exit and the end of its output.
func (d *Deployer) runHook(ctx context.Context, name string, h config.Hook, version string, vars map[string]string) error {
	if !h.Set() {
		return nil
	}
	key := "hooks." + name
	prog, err := trust.Command(h.Command, "", os.Getuid())
	var notFound *exec.Error
	switch {
	case errors.As(err, &notFound):
		return fmt.Errorf("%s: %q: %w; give hooks.%s.command an absolute path or put the program on PATH", key, h.Command[0], err, name)
	case err != nil:
		return fmt.Errorf("%s: %w", key, err)
	}
	hctx, cancel := context.WithTimeout(ctx, h.Timeout)
	defer cancel()
	cmd := exec.CommandContext(hctx, prog, h.Command[1:]...)
	cmd.Args[0] = h.Command[0] // the file checked runs, under the name it was given (busybox picks its applet by it)
	// the deploy job's environment, less zero502's own secrets, and the deploy's facts
	cmd.Env = append(boundedcmd.ChildEnv(os.Environ()), d.hookEnv(name, version, vars)...)
	out := &ssh.TailBuffer{} // the end of its output, for its event and error
	cmd.Stdout, cmd.Stderr = out, out
	began := d.clock.Now()
	// Its own process group even from a terminal (it never prompts: its stdin is /dev/null), killed
	// at its timeout and once it exits: nothing it started goes on after the deploy moved past it.
	err = boundedcmd.RunGroup(cmd)
	took := d.clock.Now().Sub(began).Round(time.Millisecond)
	tail := strings.TrimSpace(out.String())
	shown := ""
	if tail != "" {
		shown = "; its output ends: " + tail
	}
	switch {
	case hctx.Err() == context.DeadlineExceeded:
		err = fmt.Errorf("%s (%s) did not finish within hooks.%s.timeout %s and was killed%s", key, strings.Join(h.Command, " "), name, h.Timeout, shown)
	case errors.Is(err, exec.ErrWaitDelay):
		err = fmt.Errorf("%s (%s) exited, but a process it started outside its process group (setsid) still held its output %s later; "+
			"send that process's output elsewhere (>/dev/null 2>&1) or have the hook wait for it%s", key, strings.Join(h.Command, " "), boundedcmd.WaitDelay, shown)
	case err != nil:
		var ee *exec.ExitError
		if errors.As(err, &ee) {
			err = fmt.Errorf("%s (%s) failed after %s: %s%s", key, strings.Join(h.Command, " "), took, ee.ProcessState, shown)
		} else {
			err = fmt.Errorf("%s (%s): %w", key, strings.Join(h.Command, " "), err)
		}
	}
	ev := Event{Host: vars[HookEnvHost], Service: vars[HookEnvService], Step: stepHook, Version: version}
	if err != nil {
		ev.Message = err.Error()
	} else {
		ev.Message = fmt.Sprintf("%s (%s) passed in %s%s", key, strings.Join(h.Command, " "), took, shown)
	}
	d.emit(ev)
	return err
}

// hookEnv is the ZERO502_* variables of one hook run.
func (d *Deployer) hookEnv(name, version string, vars map[string]string) []string {
	names := make([]string, len(d.cfg.Hosts))
	for i, h := range d.cfg.Hosts {
		names[i] = h.Name
	}
	env := []string{hookEnvHook + "=" + name, hookEnvVersion + "=" + version, hookEnvDeployer + "=" + whoDeploys(),
		hookEnvFleetHosts + "=" + strings.Join(names, ",")}
	keys := make([]string, 0, len(vars))
	for k := range vars {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	for _, k := range keys {
		env = append(env, k+"="+vars[k])
	}
	return env
}

// hostHookVars are the variables of a per-host hook on svc's new instance at target.
func hostHookVars(h config.Host, svc, target, previous string) map[string]string {
	return map[string]string{HookEnvHost: h.Name, HookEnvService: svc, HookEnvTarget: target, HookEnvPreviousVersion: previous}
}

// runningList is host=version,… of a report, in deploy order.
func runningList(r *report.Report) string {
	parts := make([]string, len(r.Hosts))
	for i, h := range r.Hosts {
		parts[i] = h.Host + "=" + orDefault(h.Running, "unknown")
	}
	return strings.Join(parts, ",")
}
