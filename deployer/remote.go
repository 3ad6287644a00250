package deployer

import (
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"slices"
	"strings"
	"time"

	"github.com/zero502/zero502/deployer/report"
	"github.com/zero502/zero502/deployer/ssh"
	"github.com/zero502/zero502/infra/config"
)

// This file is the deployer's side of a fleet over SSH. A host with ssh: user@host[:port] is
// reached through the system ssh binary (so ~/.ssh/config, agents and ProxyJump apply), which
// runs `zero502 host step|look --config - --host NAME …` there. The config goes over stdin,
// ended by ConfigEnd; stdin then stays open, and its end tells the host the deployer is gone
// (the host's step then fails and rolls back, and its exit releases the host's lock). The step
// prints one JSON Event per line and a StepResult last; the deployer relays the events.

// checkRemote refuses, before anything changes, a remote host the deployer cannot address.
func checkRemote(i int, h config.Host) error {
	if _, _, err := ssh.Target(h.SSH); err != nil {
		return fmt.Errorf("hosts[%d].ssh %w", i, err)
	}
	if h.Address == "" {
		return fmt.Errorf("hosts[%d].address: required with ssh (host %s): where the balancer and the deployer "+
			"reach its services, e.g. its private IP", i, h.Name)
	}
	return nil
}

// runRemote runs `zero502 ARGS…` on host h with the config on stdin, handing each line of its
// stdout to line. When ctx ends, stdin is closed: the host's step notices, rolls back and ends.
func (d *Deployer) runRemote(ctx context.Context, h config.Host, args []string, line func([]byte)) error {
	cfgYAML, err := encodeFor(d, h, args)
	if err != nil {
		return err
	}
	return d.session(h, args, line, configStream(cfgYAML, d.secretsFor(args))).Run(ctx)
}

// session is the ssh session that runs `zero502 ARGS…` on host h with input on its stdin (over
// the deploy's shared connection to h when it has one: muxFor), renewing the fleet lock's lease
// on the session that holds it.
func (d *Deployer) session(h config.Host, args []string, line func([]byte), input []byte) ssh.Session {
	budget := d.rollbackBudget(len(d.cfg.Services))
	if len(args) > 1 && args[0] == "host" && (args[1] == "look" || args[1] == "logs" || args[1] == "fleet-lock") {
		// A look and logs change nothing, and the fleet lock's process only frees its flock: none
		// has anything to roll back once told to end.
		budget = lookEndBudget
	}
	return ssh.Session{Host: h.Name, Target: h.SSH, SSH: d.opts.SSH, Binary: d.opts.RemoteBinary, Mux: d.muxFor(h), Args: args,
		Input: input, Budget: budget, Line: line,
		Feed: func(ctx context.Context, done <-chan struct{}, stdin io.Writer) error {
			d.renewLease(ctx, done, stdin, args)
			return nil
		}}
}

// muxFor is the deploy's shared connections when h is the fleet lock's host, whose sessions are
// several (the lock's hold, its step, the pause record), else nil: every other host has one
// session for the whole deploy (its step, opened at preflight), and a control master for it would
// only add its start and its `ssh -O exit` (half again a login's CPU, at 50 hosts on 2 cores).
// A later session to such a host (a step reopened at its turn, a rollback after the canary's
// verdict, the read-back's look of a host not vouched for) logs in anew.
func (d *Deployer) muxFor(h config.Host) *ssh.Mux {
	if lh, ok := d.cfg.FleetLockHost(); ok && lh.Name == h.Name {
		return d.mux
	}
	return nil
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
	// Of rollout.max_unavailable the host needs whether it is one of its batch's that drain
	// early: said as 1 (its batch is itself) or 0.
	c.Rollout.MaxUnavailable, c.Rollout.MaxUnavailableShare = 0, 0
	if d.drainsEarly(h) {
		c.Rollout.MaxUnavailable = 1
	}
	return &c
}

// remoteStep is deployHost for a host reached over ssh: the step runs there; its events are
// relayed and its report taken from its last line. A host whose step preflight opened (a turn,
// remote_turn.go) gets the word to start on it; otherwise, or when that session has ended while
// it waited, a session is opened now.
func (d *Deployer) remoteStep(ctx context.Context, h config.Host, version string, rep *report.HostReport, back bool) error {
	t := d.turns.take(h.Name)
	if t != nil && (t.version != version || back) { // not this step's (a rollback: a step back)
		t.abandon()
		t = nil
	}
	if t == nil || !t.begin() {
		// Opened now, it too prints its look and is told go only after: a session lost before
		// that changed nothing (unreachable), one lost after may have begun (unknown). The
		// waiting step it replaces was never told go: what its look saw is what the host ran
		// when last seen.
		var seen *hostLook
		if t != nil && !t.sentGo.Load() {
			seen = t.look
		}
		t = d.openStep(ctx, h, version, back, true)
		t.seen = seen
		t.begin()
		select {
		case <-t.looked:
		case <-ctx.Done():
		}
		if t.predates() { // a zero502 there that does not know --look-first: it starts at once,
			// so it is begun (openStep): a session lost before any event of it is unknown
			t = d.openStep(ctx, h, version, back, false)
		}
	}
	// A step stopped for stalling (watchProgress) is told so as a cancelled deploy's is: its
	// stdin closes, it rolls back by itself, or is cut off after the rollback's budget.
	defer context.AfterFunc(ctx, t.cancel)()
	err := t.finish(rep)
	if svc, balanced := d.cfg.BalancedService(); balanced {
		d.noteRemoteTarget(h, svc, rep.Target) // where it answers now, for the checks between batches
	}
	return err
}

// remoteLockWait is the --lock-timeout a host command over ssh gets: this deploy's or stop's
// own, and 0 for --lock-timeout 0 (New made that the default wait here): a host lock there is
// refused at once too.
func (d *Deployer) remoteLockWait() time.Duration {
	if d.opts.NoLockWait {
		return 0
	}
	return d.opts.LockTimeout
}

// stepArgs are the arguments of `zero502 host step` on host h; back: a step back to the spec the
// host keeps from before, of version (--back); lookFirst: it prints its look and waits for its
// turn (--look-first).
func (d *Deployer) stepArgs(h config.Host, version string, back, lookFirst bool) []string {
	args := []string{"host", "step", "--config", "-", "--host", h.Name, "--version", version,
		"--lock-timeout", d.remoteLockWait().String()}
	if back {
		args = append(args, "--back")
	}
	if d.opts.Naive {
		args = append(args, "--naive")
	}
	if lookFirst {
		args = append(args, "--look-first")
	}
	return args
}

// stepLine is one line a host's step prints: an event, its look (--look-first), or its result.
type stepLine struct {
	Event
	StepResult
	Look      *hostLook `json:"look,omitempty"`
	LookError string    `json:"look_error,omitempty"`
	// Asks, on the look's line: the waiting step answers turnAsk. Ready is that answer.
	Asks  bool `json:"asks,omitempty"`
	Ready bool `json:"ready,omitempty"`
}

// hear handles one line of host h's step: an event is relayed (and marks the step begun), the
// look and the result are kept; anything else is junk for the error message.
func (t *turn) hear(d *Deployer, b []byte) {
	t.junkMu.Lock()
	defer t.junkMu.Unlock()
	var l stepLine
	if json.Unmarshal(b, &l) != nil {
		t.junk.add(string(b))
		return
	}
	switch {
	case l.Look != nil || l.LookError != "":
		t.asks.Store(l.Asks)
		t.said(l.Look, l.LookError)
	case l.Ready:
		t.readyOnce.Do(func() { close(t.ready) })
	case l.HostReport != nil && !t.given(): // a waiting step has done nothing to report
		t.junk.add(fmt.Sprintf("(a report before its turn, dropped: %s %s)", l.HostReport.Host, l.HostReport.Outcome))
	case l.HostReport != nil:
		if l.HostReport.Host != t.h.Name { // a host reports for itself only
			t.junk.add(fmt.Sprintf("(a report for host %q, dropped)", l.HostReport.Host))
			return
		}
		t.result = &l.StepResult
	case l.Step != "" && !t.given():
		t.junk.add(fmt.Sprintf("(an event before its turn, dropped: %s %s)", l.Step, l.Message)) // a waiting step changes nothing
	case l.Step != "":
		if l.Host == "" {
			l.Host = t.h.Name // what its step says is about this host
		}
		if l.Host != t.h.Name { // nor speaks for another host
			t.junk.add(fmt.Sprintf("(an event for host %q, dropped: %s %s)", l.Host, l.Step, l.Message))
			return
		}
		t.began = true
		d.emit(l.Event)
	}
}

// finish waits for the step's session to end and fills rep from what the host reported, or,
// without a report, from what is known: unreachable and unchanged when ssh never got there and
// nothing began; untouched when it was reached but never told go (its look failed there, or it
// ended while it waited); else unknown. A step waiting for its turn that was told go may have begun
// though none of its events arrived (a silent partition right after): unknown.
func (t *turn) finish(rep *report.HostReport) error {
	<-t.ended
	h, err, result := t.h, t.err, t.result
	if result == nil {
		if err == nil {
			err = fmt.Errorf("host %s: the step ended without its report (stdout said: %s)", h.Name, &t.junk)
		}
		if !t.began && (!t.sentGo.Load() || errors.Is(err, ssh.ErrNeverLoggedIn)) && errors.Is(err, ssh.ErrUnreachable) {
			// ssh never got there (it said so, even of a step that would have begun at once), or
			// lost a step that was never told go: nothing ran. The host runs what this step's
			// look saw running, else what the look of the waiting step it replaced saw
			// (preflight's), else what this report last saw it run (a rollback's: the version
			// its deploy put there and verified), else nothing is claimed and the read-back
			// looks again. Never rep.From: a preflight look's From may be only its published
			// spec's version (a host whose service was stopped runs nothing).
			rep.Outcome = report.OutcomeUnreachable
			if l := cmp.Or(t.look, t.seen); l != nil {
				rep.Running = l.Running
			}
			rep.Error = fmt.Sprintf("host %s was unreachable and was not changed: %v; deploy again once it is back", h.Name, err)
			return fmt.Errorf("%s", rep.Error)
		}
		if !t.began && !t.sentGo.Load() {
			// Reached, but its step ended without being told go (its look failed there, or it
			// quit while it waited): nothing was changed. The look's error, when it failed, is why.
			rep.Outcome = report.OutcomeUntouched
			if l := cmp.Or(t.look, t.seen); l != nil {
				rep.Running = l.Running
			}
			why := err.Error()
			if t.look == nil && t.lookErr != "" {
				why = t.lookErr
				if named := "host " + h.Name + ": "; !strings.HasPrefix(why, named) {
					why = named + why
				}
			}
			rep.Error = why + "; its step was never told to begin: nothing was changed on it"
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

// lookBudget bounds the wait for a host's look: every `host look` (re-verify's, status's, the
// read-back's), and preflight's from a step opened with --look-first.
const lookBudget = 30 * time.Second

// lookWithin is lookBudget, or the test's Options.lookBudget.
func (d *Deployer) lookWithin() time.Duration {
	if d.opts.lookBudget > 0 {
		return d.opts.lookBudget
	}
	return lookBudget
}

// lookEndBudget is how long a look told to end (its stdin closed) gets before its session is cut.
const lookEndBudget = 3 * time.Second

// lookRemote runs `zero502 host look` on host h, within lookBudget: a host whose look stops
// answering while its connection lives (keep-alives pass) holds neither a deploy, and the fleet
// lock with it, nor a status.
func (d *Deployer) lookRemote(ctx context.Context, h config.Host, version string) (hostLook, error) {
	ctx, cancel := context.WithTimeout(ctx, d.lookWithin())
	defer cancel()
	var got *hostLook
	err := d.runRemote(ctx, h, []string{"host", "look", "--config", "-", "--host", h.Name, "--version", version},
		func(b []byte) {
			var l hostLook
			if json.Unmarshal(b, &l) == nil {
				got = &l
			}
		})
	if errors.Is(ctx.Err(), context.DeadlineExceeded) && got == nil {
		return hostLook{}, fmt.Errorf("host %s: zero502 host look did not answer within %s; look at the host (is its zero502 or its runtime stuck?): %w",
			h.Name, d.lookWithin(), ssh.ErrUnreachable)
	}
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
	return d.viewOf(ctx, h, l), nil
}

// viewOf is host h's view from its look: read there, while whether it serves is checked from
// here.
func (d *Deployer) viewOf(ctx context.Context, h config.Host, l hostLook) hostView {
	v := hostView{from: l.From, instance: l.Instance, inProgress: l.InProgress, previous: l.Previous, serving: l.Serving, detail: l.Detail}
	if svc, balanced := d.cfg.BalancedService(); balanced && v.instance {
		v.target = knownTarget(h, svc, l.Target) // the host has no runtime here: its look says where it answers
		d.noteRemoteTarget(h, svc, v.target)
		v.serving, v.detail = d.servingAt(ctx, h, svc, v.target)
	}
	return v
}

// readBackRemote fills a remote host's Running when its step did not say (not reached, or lost).
func (d *Deployer) readBackRemote(ctx context.Context, h config.Host, rep *report.HostReport) {
	if rep.Running != "" {
		return
	}
	ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), d.lookWithin())
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
