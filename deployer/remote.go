package deployer

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"regexp"
	"strings"
	"sync"
	"time"

	"github.com/zero502/zero502/infra"
)

// This file is the deployer's side of a fleet over SSH. A host with ssh: user@host[:port] is
// reached through the system ssh binary (so ~/.ssh/config, agents and ProxyJump apply), which
// runs `zero502 host step|look --config - --host NAME …` there. The config goes over stdin,
// ended by ConfigEnd; stdin then stays open, and its end tells the host the deployer is gone
// (the host's step then fails and rolls back, and its exit releases the host's lock). The step
// prints one JSON Event per line and a StepResult last; the deployer relays the events.

// SSHOptsEnv holds extra ssh options, split on spaces, placed before the deployer's own (ssh
// keeps the first value of an option): ZERO502_SSH_OPTS="-i KEY -o UserKnownHostsFile=FILE".
const SSHOptsEnv = "ZERO502_SSH_OPTS"

var sshRE = regexp.MustCompile(`^(?:[A-Za-z0-9._-]+@)?([A-Za-z0-9._-]+|\[[0-9A-Fa-f:.]+\])(?::([0-9]{1,5}))?$`)

// sshTarget splits hosts[].ssh "user@host[:port]" into ssh's destination and port ("" none).
func sshTarget(s string) (dest, port string, err error) {
	m := sshRE.FindStringSubmatch(s)
	if m == nil || strings.HasPrefix(s, "-") {
		return "", "", fmt.Errorf("%q: must be [user@]host[:port], e.g. deploy@10.0.1.12 or deploy@web-1:2222 "+
			"(a name from ~/.ssh/config works too)", s)
	}
	dest = strings.TrimSuffix(s, ":"+m[2])
	if m[2] == "" {
		dest = s
	}
	return strings.NewReplacer("[", "", "]", "").Replace(dest), m[2], nil
}

// checkRemote refuses, before anything changes, a remote host the deployer cannot address.
func checkRemote(i int, h infra.Host) error {
	if _, _, err := sshTarget(h.SSH); err != nil {
		return fmt.Errorf("hosts[%d].ssh %w", i, err)
	}
	if h.Address == "" {
		return fmt.Errorf("hosts[%d].address: required with ssh (host %s): where the balancer and the deployer "+
			"reach its services, e.g. its private IP", i, h.Name)
	}
	return nil
}

// shellQuote quotes s for the remote login shell.
func shellQuote(s string) string {
	if s != "" && strings.Trim(s, "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789._-/=:@+,") == "" {
		return s
	}
	return "'" + strings.ReplaceAll(s, "'", `'\''`) + "'"
}

// sshCommand is the ssh invocation that runs `zero502 ARGS…` on host h (over the deploy's
// shared connection to h when it has one: sshmux.go).
func (d *Deployer) sshCommand(h infra.Host, args []string) (*exec.Cmd, error) {
	words := []string{shellQuote(orDefault(d.opts.RemoteBinary, "zero502"))}
	for _, a := range args {
		words = append(words, shellQuote(a))
	}
	var mux []string
	if d.mux != nil {
		mux = d.mux.options(h.SSH)
	}
	cmd, err := sshClient(d.opts.SSH, h.SSH, mux, strings.Join(words, " "))
	if err != nil {
		return nil, fmt.Errorf("host %s: ssh %w", h.Name, err)
	}
	return cmd, nil
}

// SSHCommand is the ssh client sshBin (default: ssh on PATH) running the shell command remote
// at target user@host[:port], in batch mode (no password prompts), with the options of
// ZERO502_SSH_OPTS first.
func SSHCommand(sshBin, target, remote string) (*exec.Cmd, error) {
	return sshClient(sshBin, target, nil, remote)
}

// sshClient is ssh to target with ZERO502_SSH_OPTS, then opts, then the deployer's own options,
// then the destination and tail (a remote command, or nothing after -O exit in opts).
func sshClient(sshBin, target string, opts []string, tail ...string) (*exec.Cmd, error) {
	dest, port, err := sshTarget(target)
	if err != nil {
		return nil, err
	}
	args := strings.Fields(os.Getenv(SSHOptsEnv))
	args = append(args, opts...)
	args = append(args, "-o", "BatchMode=yes", "-o", "ConnectTimeout=10",
		"-o", "ServerAliveInterval=5", "-o", "ServerAliveCountMax=3")
	if port != "" {
		args = append(args, "-p", port)
	}
	args = append(args, dest)
	args = append(args, tail...)
	return exec.Command(orDefault(sshBin, "ssh"), args...), nil
}

// ShellQuote quotes s for a remote POSIX shell.
func ShellQuote(s string) string { return shellQuote(s) }

// runRemote runs `zero502 ARGS…` on host h with the config on stdin, handing each line of its
// stdout to line. When ctx ends, stdin is closed: the host's step notices, rolls back and ends.
func (d *Deployer) runRemote(ctx context.Context, h infra.Host, args []string, line func([]byte)) error {
	cfgYAML, err := infra.Encode(d.cfg)
	if err != nil {
		return fmt.Errorf("host %s: %w", h.Name, err)
	}
	cmd, err := d.sshCommand(h, args)
	if err != nil {
		return err
	}
	stdin, err := cmd.StdinPipe()
	if err != nil {
		return err
	}
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		return err
	}
	var stderr tailBuffer
	cmd.Stderr = &stderr
	if err := cmd.Start(); err != nil {
		return fmt.Errorf("host %s: start ssh: %w (is the ssh client installed?)", h.Name, err)
	}
	var closeOnce sync.Once
	closeStdin := func() { closeOnce.Do(func() { stdin.Close() }) }
	go func() {
		_, _ = stdin.Write(append(cfgYAML, []byte("\n"+ConfigEnd+"\n")...))
	}()
	done := make(chan struct{})
	defer close(done)
	go func() {
		select {
		case <-ctx.Done():
			closeStdin()
		case <-done:
		}
	}()
	sc := bufio.NewScanner(stdout)
	sc.Buffer(make([]byte, 64*1024), 4*1024*1024)
	for sc.Scan() {
		line(sc.Bytes())
	}
	closeStdin()
	err = cmd.Wait()
	if err != nil {
		msg := strings.TrimSpace(stderr.String())
		if msg == "" {
			msg = "no message on stderr"
		}
		var exit *exec.ExitError
		if errors.As(err, &exit) && exit.ExitCode() == sshConnectionFailed {
			err = fmt.Errorf("%w: %w", ErrUnreachable, err)
		}
		return fmt.Errorf("host %s: ssh %s `%s %s`: %w: %s", h.Name, h.SSH, orDefault(d.opts.RemoteBinary, "zero502"),
			strings.Join(args, " "), err, msg)
	}
	return nil
}

// sshConnectionFailed is the exit status of ssh(1) when it could not reach or log in to the
// host (a remote command's own status is passed through).
const sshConnectionFailed = 255

// ErrUnreachable is wrapped when ssh could not reach a host at all: nothing ran there.
var ErrUnreachable = errors.New("unreachable over ssh")

// remoteStep is deployHost for a host reached over ssh: the step runs there; its events are
// relayed and its report taken from its last line.
func (d *Deployer) remoteStep(ctx context.Context, h infra.Host, version string, rep *HostReport) error {
	args := []string{"host", "step", "--config", "-", "--host", h.Name, "--version", version,
		"--lock-timeout", d.opts.LockTimeout.String()}
	if d.opts.Naive {
		args = append(args, "--naive")
	}
	var result *StepResult
	var junk []string
	began := false // the host said something of its step: it may have changed
	err := d.runRemote(ctx, h, args, func(b []byte) {
		var l struct {
			Event
			StepResult
		}
		if json.Unmarshal(b, &l) != nil {
			junk = append(junk, string(b))
			return
		}
		if l.HostReport != nil {
			result = &l.StepResult
			return
		}
		if l.Step != "" {
			began = true
			d.emit(l.Event)
		}
	})
	if result == nil {
		if err == nil {
			err = fmt.Errorf("host %s: the step ended without its report (stdout said: %s)", h.Name, strings.Join(junk, " | "))
		}
		if !began && errors.Is(err, ErrUnreachable) {
			// ssh never got there: nothing ran, the host runs what it ran.
			rep.Outcome, rep.Running = OutcomeUnreachable, rep.From
			rep.Error = fmt.Sprintf("host %s was unreachable and was not changed: %v; deploy again once it is back", h.Name, err)
			return fmt.Errorf("%s", rep.Error)
		}
		rep.Outcome, rep.Running = OutcomeUnknown, ""
		rep.Error = fmt.Sprintf("lost the step on host %s after it began: what it runs is unknown: %v; the host's step rolls back by itself "+
			"when it sees the connection gone: check it with zero502 status, then deploy again", h.Name, err)
		return fmt.Errorf("%s", rep.Error)
	}
	from := rep.From
	*rep = *result.HostReport
	if rep.From == "" {
		rep.From = from
	}
	if result.Error != "" {
		return errors.New(result.Error)
	}
	if err != nil { // a report and a failed exit: believe the exit
		return err
	}
	return nil
}

// lookRemote runs `zero502 host look` on host h.
func (d *Deployer) lookRemote(ctx context.Context, h infra.Host, version string) (HostLook, error) {
	var got *HostLook
	err := d.runRemote(ctx, h, []string{"host", "look", "--config", "-", "--host", h.Name, "--version", version},
		func(b []byte) {
			var l HostLook
			if json.Unmarshal(b, &l) == nil {
				got = &l
			}
		})
	if err != nil {
		return HostLook{}, err
	}
	if got == nil {
		return HostLook{}, fmt.Errorf("host %s: zero502 host look printed no state", h.Name)
	}
	return *got, nil
}

// remoteView is look for a host reached over ssh: its runtime and spec are read there, while
// whether it serves is checked from here, as the balancer sees it.
func (d *Deployer) remoteView(ctx context.Context, h infra.Host, version string) (hostView, error) {
	l, err := d.lookRemote(ctx, h, version)
	if err != nil {
		return hostView{}, err
	}
	v := hostView{from: l.From, instance: l.Instance, inProgress: l.InProgress, serving: l.Serving, detail: l.Detail}
	if svc, balanced := d.cfg.BalancedService(); balanced && v.instance {
		v.serving, v.detail = d.serving(ctx, h, svc)
	}
	return v, nil
}

// readBackRemote fills a remote host's Running when its step did not say (not reached, or lost).
func (d *Deployer) readBackRemote(ctx context.Context, h infra.Host, rep *HostReport) {
	if rep.Running != "" {
		return
	}
	ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 30*time.Second)
	defer cancel()
	l, err := d.lookRemote(ctx, h, rep.To)
	if err != nil {
		return
	}
	rep.Running = l.Running
	if rep.Outcome == OutcomeNotReached && rep.From == "" {
		rep.From = l.Running
	}
}

func orDefault(s, def string) string {
	if s == "" {
		return def
	}
	return s
}

// tailBuffer keeps the last 4 KiB written to it (ssh's stderr, for error messages).
type tailBuffer struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (t *tailBuffer) Write(p []byte) (int, error) {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.buf.Write(p)
	if t.buf.Len() > 4096 {
		b := t.buf.Bytes()[t.buf.Len()-4096:]
		t.buf = *bytes.NewBuffer(append([]byte(nil), b...))
	}
	return len(p), nil
}

func (t *tailBuffer) String() string {
	t.mu.Lock()
	defer t.mu.Unlock()
	return t.buf.String()
}
