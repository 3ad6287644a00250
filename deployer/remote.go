package deployer

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"regexp"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/zero502/zero502/deployer/report"
	"github.com/zero502/zero502/infra/config"
)

// This file is the deployer's side of a fleet over SSH. A host with ssh: user@host[:port] is
// reached through the system ssh binary (so ~/.ssh/config, agents and ProxyJump apply), which
// runs `zero502 host step|look --config - --host NAME …` there. The config goes over stdin,
// ended by ConfigEnd; stdin then stays open, and its end tells the host the deployer is gone
// (the host's step then fails and rolls back, and its exit releases the host's lock). The step
// prints one JSON Event per line and a StepResult last; the deployer relays the events.

// sshOptsEnv holds extra ssh options, split on spaces, placed before the deployer's own (ssh
// keeps the first value of an option): ZERO502_SSH_OPTS="-i KEY -o UserKnownHostsFile=FILE".
const sshOptsEnv = "ZERO502_SSH_OPTS"

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
func checkRemote(i int, h config.Host) error {
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
func (d *Deployer) sshCommand(h config.Host, args []string) (*exec.Cmd, error) {
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
	args := strings.Fields(os.Getenv(sshOptsEnv))
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
func (d *Deployer) runRemote(ctx context.Context, h config.Host, args []string, line func([]byte)) error {
	cfgYAML, err := config.Encode(d.configFor(h, args))
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
	cmd.WaitDelay = 5 * time.Second // once ssh has exited, its stderr gets 5 s to close (see below)
	if err := cmd.Start(); err != nil {
		return fmt.Errorf("host %s: start ssh: %w (is the ssh client installed?)", h.Name, err)
	}
	var closeOnce sync.Once
	closeStdin := func() { closeOnce.Do(func() { stdin.Close() }) }
	done := make(chan struct{})
	defer close(done)
	go func() {
		if _, err := stdin.Write(configStream(cfgYAML, d.secretsFor(args))); err != nil {
			return
		}
		d.renewLease(ctx, done, stdin, args)
	}()
	var cutOff atomic.Bool
	budget := d.rollbackBudget(len(d.cfg.Services))
	go func() {
		select {
		case <-ctx.Done():
		case <-done:
			return
		}
		closeStdin()
		// The host now rolls back and reports; a host that has not ended within what a rollback
		// may take is cut off, so no host can hang a deploy (and the fleet lock it holds).
		t := time.NewTimer(budget)
		defer t.Stop()
		select {
		case <-t.C:
			cutOff.Store(true)
			_ = cmd.Process.Kill()
			// A client on a control master handed its stdout to the master, which keeps it open
			// while the host's end lives: stop reading here, do not wait for the host to close it.
			_ = stdout.Close()
		case <-done:
		}
	}()
	readLines(stdout, maxRemoteLine, line)
	closeStdin()
	err = cmd.Wait()
	if cutOff.Load() {
		err = fmt.Errorf("cut off %s after the deploy was cancelled: the host neither ended nor reported within the rollback budget: %w", budget, err)
	}
	if err != nil {
		msg := strings.TrimSpace(stderr.String())
		if msg == "" {
			msg = "no message on stderr"
		}
		var exit *exec.ExitError
		if errors.As(err, &exit) && exit.ExitCode() == sshConnectionFailed {
			err = fmt.Errorf("%w: %w", errUnreachable, err)
		}
		return fmt.Errorf("host %s: ssh %s `%s %s`: %w: %s", h.Name, h.SSH, orDefault(d.opts.RemoteBinary, "zero502"),
			strings.Join(args, " "), err, msg)
	}
	return nil
}

// maxRemoteLine bounds one line a host prints: an event or report is far smaller; a longer line
// is dropped whole (the line callback gets a note of its size instead).
const maxRemoteLine = 1 << 20

// readLines hands each line of r to line, a line longer than max replaced by a short note.
func readLines(r io.Reader, max int, line func([]byte)) {
	br := bufio.NewReaderSize(r, 64*1024)
	var long []byte
	dropped := 0
	for {
		chunk, err := br.ReadSlice('\n')
		switch {
		case errors.Is(err, bufio.ErrBufferFull):
			if dropped == 0 && len(long)+len(chunk) <= max {
				long = append(long, chunk...)
				continue
			}
			dropped += len(long) + len(chunk)
			long = long[:0]
			continue
		case dropped > 0:
			line([]byte(fmt.Sprintf("(a line of %d bytes, over the %d-byte limit, dropped)", dropped+len(long)+len(chunk), max)))
			dropped, long = 0, long[:0]
		case len(chunk) > 0 || len(long) > 0:
			b := bytes.TrimRight(append(long, chunk...), "\r\n")
			if len(b) > max {
				line([]byte(fmt.Sprintf("(a line of %d bytes, over the %d-byte limit, dropped)", len(b), max)))
			} else {
				line(b)
			}
			long = long[:0]
		}
		if err != nil {
			return
		}
	}
}

// renewLease sends the fleet lock's lease renewals on the session of `zero502 host fleet-lock`
// holding it (no --op: hold), every cfg.LockRenewal(), until the session is done or cancelled.
func (d *Deployer) renewLease(ctx context.Context, done <-chan struct{}, stdin io.Writer, args []string) {
	if len(args) < 2 || args[1] != "fleet-lock" || slices.Contains(args, "--op") || d.cfg.LockRenewal() <= 0 {
		return
	}
	tick := time.NewTicker(d.cfg.LockRenewal())
	defer tick.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-done:
			return
		case <-tick.C:
			if _, err := io.WriteString(stdin, leaseRenewal+"\n"); err != nil {
				return
			}
		}
	}
}

// noBalancer are the host commands that never talk to the balancer: their config goes without
// the balancer's admin token.
var noBalancer = map[string]bool{"look": true, "logs": true, "fleet-lock": true, "lock-path": true}

// configFor is the config sent to host h for `zero502 ARGS…`: this host's entry only (a host
// learns nothing of the others' addresses or ssh targets), and no admin token unless the command
// drains or watches at the balancer (step, stop).
func (d *Deployer) configFor(h config.Host, args []string) *config.Config {
	c := *d.cfg
	c.Hosts = []config.Host{h}
	if c.Rollout.LockHost != h.Name {
		c.Rollout.LockHost = "" // another host's name, not sent: this host is the only one it knows
	}
	if len(args) > 1 && noBalancer[args[1]] {
		c.Balancer.AdminToken = ""
	}
	return &c
}

// sshConnectionFailed is the exit status of ssh(1) when it could not reach or log in to the
// host (a remote command's own status is passed through).
const sshConnectionFailed = 255

// errUnreachable is wrapped when ssh could not reach a host at all: nothing ran there.
var errUnreachable = errors.New("unreachable over ssh")

// remoteStep is deployHost for a host reached over ssh: the step runs there; its events are
// relayed and its report taken from its last line.
func (d *Deployer) remoteStep(ctx context.Context, h config.Host, version string, rep *report.HostReport) error {
	args := []string{"host", "step", "--config", "-", "--host", h.Name, "--version", version,
		"--lock-timeout", d.opts.LockTimeout.String()}
	if d.opts.Naive {
		args = append(args, "--naive")
	}
	var result *StepResult
	var junk remoteJunk
	began := false // the host said something of its step: it may have changed
	err := d.runRemote(ctx, h, args, func(b []byte) {
		var l struct {
			Event
			StepResult
		}
		if json.Unmarshal(b, &l) != nil {
			junk.add(string(b))
			return
		}
		if l.HostReport != nil {
			if l.HostReport.Host != h.Name { // a host reports for itself only
				junk.add(fmt.Sprintf("(a report for host %q, dropped)", l.HostReport.Host))
				return
			}
			result = &l.StepResult
			return
		}
		if l.Step != "" {
			if l.Host == "" {
				l.Host = h.Name // what its step says is about this host
			}
			if l.Host != h.Name { // nor speaks for another host
				junk.add(fmt.Sprintf("(an event for host %q, dropped: %s %s)", l.Host, l.Step, l.Message))
				return
			}
			began = true
			d.emit(l.Event)
		}
	})
	if result == nil {
		if err == nil {
			err = fmt.Errorf("host %s: the step ended without its report (stdout said: %s)", h.Name, &junk)
		}
		if !began && errors.Is(err, errUnreachable) {
			// ssh never got there: nothing ran, the host runs what it ran.
			rep.Outcome, rep.Running = report.OutcomeUnreachable, rep.From
			rep.Error = fmt.Sprintf("host %s was unreachable and was not changed: %v; deploy again once it is back", h.Name, err)
			return fmt.Errorf("%s", rep.Error)
		}
		rep.Outcome, rep.Running = report.OutcomeUnknown, ""
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

// remoteJunk keeps what a host printed that was not an event or a report of its own, for the
// error message: the last few lines, each cut short, and how many there were in all.
type remoteJunk struct {
	last []string
	n    int
}

const (
	junkLines = 8
	junkWidth = 200
)

func (j *remoteJunk) add(s string) {
	j.n++
	if len(s) > junkWidth {
		s = s[:junkWidth] + "…"
	}
	j.last = append(j.last, s)
	if len(j.last) > junkLines {
		j.last = j.last[1:]
	}
}

func (j *remoteJunk) String() string {
	if j.n == 0 {
		return "nothing else"
	}
	s := strings.Join(j.last, " | ")
	if j.n > len(j.last) {
		s = fmt.Sprintf("%d lines, the last %d: %s", j.n, len(j.last), s)
	}
	return s
}

// lookRemote runs `zero502 host look` on host h.
func (d *Deployer) lookRemote(ctx context.Context, h config.Host, version string) (hostLook, error) {
	var got *hostLook
	err := d.runRemote(ctx, h, []string{"host", "look", "--config", "-", "--host", h.Name, "--version", version},
		func(b []byte) {
			var l hostLook
			if json.Unmarshal(b, &l) == nil {
				got = &l
			}
		})
	if err != nil {
		return hostLook{}, err
	}
	if got == nil {
		return hostLook{}, fmt.Errorf("host %s: zero502 host look printed no state", h.Name)
	}
	return *got, nil
}

// remoteView is look for a host reached over ssh: its runtime and spec are read there, while
// whether it serves is checked from here, as the balancer sees it.
func (d *Deployer) remoteView(ctx context.Context, h config.Host, version string) (hostView, error) {
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
func (d *Deployer) readBackRemote(ctx context.Context, h config.Host, rep *report.HostReport) {
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
	if rep.Outcome == report.OutcomeNotReached && rep.From == "" {
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
