package deployer

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/zero502/zero502/deployer/ssh"
	"github.com/zero502/zero502/infra/config"
)

// A host over ssh gets one step process for the whole deploy, opened at preflight: `zero502
// host step --look-first` prints the host's look (what preflight needs, the same as `host
// look`), then waits for its turn. The deployer writes turnGo on its stdin when the host's
// batch comes; closing stdin first ends it with nothing changed. So the ssh session, the
// binary's start and the config's load happen once per host, off the batches' path, and
// preflight's look costs no process of its own. A turn whose session ended while it waited (the
// host went away) is replaced by a fresh session at its turn.

// turnGo is the line that starts a step opened with --look-first.
const turnGo = "go"

// turnAsk is the line the deployer sends a waiting step just before turnGo; the step answers
// {"ready":true}. Only a step that answered within turnAskBudget is told go: one whose host
// went silent while it waited (a pulled cable that ssh has not noticed yet) is never told, so
// it is known not to have begun: "unreachable, not changed", not "unknown".
const turnAsk = "ready?"

// turnAskBudget is how long a waiting step has to answer turnAsk: a process already running,
// reading its stdin, one round trip away; ssh itself would notice a dead connection only after
// ServerAliveInterval × ServerAliveCountMax (15 s).
const turnAskBudget = 5 * time.Second

// AwaitTurn is the host's side of a turn: it prints host name's look as one line
// ({"look":…,"asks":true}, or {"look_error":…}) on out, then reads lines from stdin, the rest of
// the deployer's config stream: it answers each turnAsk with {"ready":true} and reports whether
// the line after is turnGo: false (stdin ended, the deployer went on without this host) means
// the step must end with nothing changed.
func AwaitTurn(ctx context.Context, cfg *config.Config, name, version string, stdin *bufio.Reader, out io.Writer) bool {
	var line stepLine
	l, err := Look(ctx, cfg, name, version, Options{})
	if err != nil {
		line.LookError = err.Error()
	} else {
		line.Look, line.Asks = &l, true
	}
	enc := json.NewEncoder(out)
	if err := enc.Encode(line); err != nil {
		return false
	}
	if line.Look == nil {
		return false // the deployer refuses the deploy: nothing to wait for
	}
	for {
		got, err := stdin.ReadString('\n')
		if err != nil {
			return false
		}
		if strings.TrimSpace(got) != turnAsk {
			return strings.TrimSpace(got) == turnGo
		}
		if _, err := io.WriteString(out, `{"ready":true}`+"\n"); err != nil { // a stepLine's Ready, alone
			return false
		}
	}
}

// turn is a host's step session over ssh, opened at preflight and waiting for its turn, or
// opened at its turn.
type turn struct {
	h       config.Host
	version string
	cancel  context.CancelFunc
	goNow   chan struct{} // closed: write turnGo
	once    sync.Once
	looked  chan struct{} // closed once the look arrived (or the session ended)
	ended   chan struct{} // closed once the session ended; then err is set

	// Set by hear while the session lives; read after ended (look after looked).
	look     *hostLook
	lookErr  string
	seen     *hostLook // the look of the waiting step this one replaced (never told go), if any
	saidOnce sync.Once
	began    bool // an event of the step arrived: it may have changed the host
	// sentGo: turnGo was (about to be) written to the waiting step, or the step was opened
	// without --look-first (it starts at once): it may have begun, even when no event of it
	// arrived before its session was lost.
	sentGo atomic.Bool
	// asks: the step's look said it answers turnAsk; ready closes on its answer.
	asks      atomic.Bool
	ready     chan struct{}
	readyOnce sync.Once
	result    *StepResult
	junkMu    sync.Mutex // view may read junk while the session lives
	junk      remoteJunk
	err       error
}

// openStep starts `zero502 host step` on host h for version (back: a step back to the spec the
// host keeps from before, of version). With lookFirst the step prints its
// look and waits for begin; without, it starts at once.
func (d *Deployer) openStep(ctx context.Context, h config.Host, version string, back, lookFirst bool) *turn {
	ctx, cancel := context.WithCancel(ctx)
	t := &turn{h: h, version: version, cancel: cancel, goNow: make(chan struct{}), looked: make(chan struct{}), ended: make(chan struct{}),
		ready: make(chan struct{})}
	if !lookFirst {
		// Begun: nothing to write, it starts as soon as ssh reaches the host, so a session lost
		// before any event of it arrived may have changed the host (unknown, finish).
		t.once.Do(func() { close(t.goNow) })
		t.sentGo.Store(true)
	}
	args := d.stepArgs(h, version, back, lookFirst)
	cfgYAML, err := encodeFor(d, h, args)
	if err != nil {
		t.err = err
		t.said(nil, "")
		close(t.ended)
		return t
	}
	s := d.session(h, args, func(b []byte) { t.hear(d, b) }, configStream(cfgYAML, d.secretsFor(args)))
	if lookFirst {
		s.Feed = func(ctx context.Context, done <-chan struct{}, stdin io.Writer) error {
			select {
			case <-t.goNow:
			case <-ctx.Done():
				return nil
			case <-done:
				return nil
			}
			// Go only once the host's look arrived: ssh reached it and the step waits; one whose
			// session ended first was never told go, and changed nothing.
			select {
			case <-t.looked:
			case <-ctx.Done():
				return nil
			case <-done:
				return nil
			}
			if t.look == nil {
				return nil
			}
			if t.asks.Load() {
				if answered, err := t.ask(ctx, done, stdin); !answered {
					return err
				}
			}
			t.sentGo.Store(true)
			_, _ = io.WriteString(stdin, turnGo+"\n")
			return nil
		}
	}
	go func() {
		t.err = s.Run(ctx)
		t.said(nil, "")
		close(t.ended)
	}()
	return t
}

// ask sends turnAsk and waits for the step's answer, at most turnAskBudget; answered false: do
// not tell it go. No answer in time is an error wrapping ssh.ErrUnreachable (the session is cut
// off, the step never told go); a session ending meanwhile is no error of ask's (its own says
// why).
func (t *turn) ask(ctx context.Context, done <-chan struct{}, stdin io.Writer) (answered bool, _ error) {
	if _, err := io.WriteString(stdin, turnAsk+"\n"); err != nil {
		return false, nil
	}
	wait := time.NewTimer(turnAskBudget)
	defer wait.Stop()
	select {
	case <-t.ready:
		return true, nil
	case <-ctx.Done():
	case <-done:
	case <-wait.C:
		return false, fmt.Errorf("host %s: its waiting step did not answer within %s when its turn came, so it was not told to begin: %w",
			t.h.Name, turnAskBudget, ssh.ErrUnreachable)
	}
	return false, nil
}

// encodeFor is the config sent to host h for `zero502 ARGS…`.
func encodeFor(d *Deployer, h config.Host, args []string) ([]byte, error) {
	b, err := config.Encode(d.configFor(h, args))
	if err != nil {
		return nil, fmt.Errorf("host %s: %w", h.Name, err)
	}
	return b, nil
}

// said records the step's look (the first time only) and wakes view.
func (t *turn) said(l *hostLook, lookErr string) {
	t.saidOnce.Do(func() {
		t.look, t.lookErr = l, lookErr
		close(t.looked)
	})
}

// view waits for the step's look, at most lookBudget: preflight's view of host h, as remoteView
// makes it.
func (t *turn) view(ctx context.Context, d *Deployer) (hostView, error) {
	wait := time.NewTimer(d.lookWithin())
	defer wait.Stop()
	select {
	case <-t.looked:
	case <-ctx.Done():
		return hostView{}, ctx.Err()
	case <-wait.C:
		t.junkMu.Lock()
		defer t.junkMu.Unlock()
		return hostView{}, fmt.Errorf("host %s: its step printed no look within %s (stdout said: %s); deploy again, or look at the host",
			t.h.Name, d.lookWithin(), &t.junk)
	}
	if t.look == nil {
		if t.lookErr != "" {
			if named := "host " + t.h.Name + ": "; !strings.HasPrefix(t.lookErr, named) {
				return hostView{}, fmt.Errorf("%s%s", named, t.lookErr)
			}
			return hostView{}, errors.New(t.lookErr)
		}
		<-t.ended
		if t.err != nil {
			return hostView{}, t.err
		}
		return hostView{}, fmt.Errorf("host %s: zero502 host step --look-first printed no state (stdout said: %s)", t.h.Name, &t.junk)
	}
	return d.viewOf(ctx, t.h, *t.look), nil
}

// predates reports whether the step's session ended with no look while ssh reached the host:
// a zero502 there that does not know --look-first. Its look is `host look`'s, and its step
// opens at its turn.
func (t *turn) predates() bool {
	select {
	case <-t.ended:
	default:
		return false
	}
	return t.look == nil && t.lookErr == "" && !errors.Is(t.err, ssh.ErrUnreachable)
}

// given reports whether the step was given its turn (or started without waiting for one).
func (t *turn) given() bool {
	select {
	case <-t.goNow:
		return true
	default:
		return false
	}
}

// begin gives the step its turn; false when its session has already ended (it never got the
// word, and nothing was changed).
func (t *turn) begin() bool {
	select {
	case <-t.ended:
		return false
	default:
	}
	t.once.Do(func() { close(t.goNow) })
	return true
}

// abandon ends a step that never got its turn: its stdin closes and it exits, nothing changed.
func (t *turn) abandon() { t.cancel() }

// turns are the steps preflight opened, by host name, until each host's batch takes its own.
type turns struct {
	mu sync.Mutex
	by map[string]*turn
}

func (ts *turns) put(t *turn) {
	ts.mu.Lock()
	defer ts.mu.Unlock()
	if ts.by == nil {
		ts.by = map[string]*turn{}
	}
	ts.by[t.h.Name] = t
}

// take removes and returns host name's turn (nil: none).
func (ts *turns) take(name string) *turn {
	ts.mu.Lock()
	defer ts.mu.Unlock()
	t := ts.by[name]
	delete(ts.by, name)
	return t
}

// abandonAll ends every turn no batch took and waits, up to wait, for their sessions to end.
func (ts *turns) abandonAll(wait time.Duration) {
	ts.mu.Lock()
	left := ts.by
	ts.by = nil
	ts.mu.Unlock()
	deadline := time.After(wait)
	for _, t := range left {
		t.abandon()
	}
	for _, t := range left {
		select {
		case <-t.ended:
		case <-deadline:
			return
		}
	}
}
