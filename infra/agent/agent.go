package agent

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"log/slog"
	"net/netip"
	"time"

	"github.com/zero502/zero502/infra/backoff"
	"github.com/zero502/zero502/infra/clock"
	"github.com/zero502/zero502/infra/edgepick"
)

// Agent holds one session at a time to the origin, through an edge, and keeps it: Run dials,
// serves the session until it ends, and dials again, forever. Set the fields, then call Run
// once; Send may be called from any goroutine, before or during Run.
type Agent struct {
	// Picker is the edge choice: Name or Addrs, Probe, StatePath, Clock, Logger. Its Clock and
	// Logger are the agent's too.
	Picker *edgepick.Picker
	// Watcher's Interval, Hysteresis and Rand are the failback watcher's settings; its Picker
	// is set by Run.
	Watcher edgepick.Watcher
	// TLS is the session's TLS configuration: ServerName, RootCAs, and Certificates when the
	// origin asks for a client certificate.
	TLS *tls.Config
	// Backoff is the wait after a real failure.
	Backoff backoff.Backoff
	// DialTimeout bounds one address's connect and handshake; 0 is defaultDialTimeout.
	DialTimeout time.Duration
	// Outbox holds the messages (required: NewOutbox).
	Outbox *Outbox
	// Events, when set, is called for every session event, in order, from Run's goroutine.
	Events func(Event)
}

// eventKind names a session event.
type eventKind string

// Session events.
const (
	// Connected: a session is established (Edge, FromState: the choice came from the state file).
	Connected eventKind = "connected"
	// Switched: the watcher ended the session on purpose (Switch); the next dial goes to
	// Switch.To at once, with no backoff.
	Switched eventKind = "switched"
	// Failed: a dial or a session failed (Err); Backoff is the wait before the next dial.
	Failed eventKind = "failed"
)

// Event is one thing that happened to the session.
type Event struct {
	Kind      eventKind
	Edge      netip.AddrPort // the edge of the session (invalid: dialed through the resolver)
	FromState bool
	Switch    edgepick.SwitchReason
	Err       error
	Backoff   time.Duration
	// Replayed is how many waiting messages a new session sent first.
	Replayed int
}

// Send queues body and returns its id; it is sent now if a session is up, else after the
// reconnect. errOutboxFull when the outbox is at its limit; errTooLarge, and nothing queued,
// when the body's frame would be over MaxFrame.
func (a *Agent) Send(body string) (string, error) { return a.Outbox.Send(body) }

// Pending is how many messages wait for the server's acknowledgement.
func (a *Agent) Pending() int { return a.Outbox.Len() }

// stableSession is how long a session must last before its end starts the backoff ladder again.
// One that ends sooner (an origin that completes the handshake and drops the connection, one
// overloaded, or refusing this agent) climbs the ladder as a failed dial does: reset at every
// handshake, every agent would reconnect within Backoff.Base, for ever, at an origin already
// struggling.
const stableSession = 10 * time.Second

// Run keeps a session up until ctx ends, then returns ctx's error. Every failure is retried.
func (a *Agent) Run(ctx context.Context) error {
	if a.Picker == nil {
		return errors.New("agent: no edge picker (set Agent.Picker with the edge name or addresses)")
	}
	if a.Outbox == nil {
		return errors.New("agent: no outbox (set Agent.Outbox to NewOutbox(limit))")
	}
	log := a.logger()
	var (
		next     netip.AddrPort // a planned switch's target: dialled first, at once
		failures int            // real failures in a row: the backoff ladder's rung
	)
	for ctx.Err() == nil {
		choice, _ := a.Picker.Choose(ctx)
		order := dialOrder(next, choice)
		next = netip.AddrPort{}
		d, err := a.dial(ctx, order, func(ap netip.AddrPort, err error) {
			log.Warn("agent: edge did not answer; trying the next", "edge", ap, "err", err)
			if ap == choice.Addr {
				choice, _ = a.Picker.Failover(choice, ap)
			}
		})
		if err == nil {
			if choice.Addr.IsValid() && d.edge.IsValid() {
				choice.Addr = d.edge
			}
			began := a.clock().Now()
			var r *edgepick.SwitchReason
			r, err = a.session(ctx, d, choice)
			if ctx.Err() != nil {
				break
			}
			if a.clock().Now().Sub(began) >= stableSession {
				failures = 0 // a session that held: the ladder starts again
			}
			if r != nil {
				a.emit(Event{Kind: Switched, Edge: d.edge, Switch: *r})
				log.Info("agent: session ended as planned; reconnecting at once", "reason", r.String())
				next = r.To
				continue
			}
			if choice.Addr.IsValid() && d.edge.IsValid() {
				a.Picker.Failover(choice, d.edge)
			}
		}
		if ctx.Err() != nil {
			break
		}
		wait := a.Backoff.Delay(failures)
		failures++
		a.emit(Event{Kind: Failed, Edge: d.edge, Err: err, Backoff: wait})
		log.Warn("agent: session failed; backing off", "edge", d.edge, "err", err, "backoff", wait, "failures_in_a_row", failures)
		select {
		case <-ctx.Done():
		case <-a.clock().After(wait):
		}
	}
	return ctx.Err()
}

// session serves one established connection: replay the outbox, then send new messages and
// read acknowledgements, with the failback watcher beside it. It returns the watcher's reason
// when the session ended on purpose, else the error that ended it.
func (a *Agent) session(ctx context.Context, d dialed, choice edgepick.Choice) (*edgepick.SwitchReason, error) {
	defer d.conn.Close()
	sctx, cancel := context.WithCancelCause(ctx)
	defer cancel(nil)
	// A write has no deadline and blocks once the origin stops reading and the socket buffers
	// fill: closing the connection when the session's context ends (Run's context, or a
	// planned switch) is what unblocks it, so a SIGTERM or a switch is never stuck behind it.
	stopClosing := context.AfterFunc(sctx, func() { d.conn.Close() })
	defer stopClosing()
	ob := a.Outbox
	log := a.logger()

	replay, sent := ob.after(0)
	a.emit(Event{Kind: Connected, Edge: d.edge, FromState: choice.FromState, Replayed: len(replay)})
	log.Info("agent: session established", "edge", d.edge, "from_state", choice.FromState, "replayed", len(replay))

	switched := make(chan edgepick.SwitchReason, 1)
	watcherDone := make(chan struct{})
	go func() {
		defer close(watcherDone)
		if !choice.Addr.IsValid() {
			return
		}
		w := a.Watcher
		w.Picker = a.Picker
		w.Run(sctx, choice, func(r edgepick.SwitchReason) {
			switched <- r
			cancel(errSwitch)
		})
	}()
	defer func() { cancel(nil); <-watcherDone }()

	readErr := make(chan error, 1)
	go func() {
		for {
			f, err := readFrame(d.conn)
			if err != nil {
				readErr <- fmt.Errorf("session through %s: read: %w", d.edge, err)
				return
			}
			if f.Kind == kindAck {
				ob.Ack(f.ID)
			}
		}
	}()

	// ended is how the session ended after err broke its connection: when the session's
	// context ended first, the connection was closed on purpose and the context says why.
	ended := func(err error) (*edgepick.SwitchReason, error) {
		if sctx.Err() == nil {
			return nil, err
		}
		if errors.Is(context.Cause(sctx), errSwitch) {
			r := <-switched
			return &r, nil
		}
		return nil, ctx.Err()
	}
	frames := replay
	for {
		for _, f := range frames {
			if err := writeFrame(d.conn, f); err != nil {
				return ended(fmt.Errorf("session through %s: write message %s: %w", d.edge, f.ID, err))
			}
		}
		select {
		case <-sctx.Done():
			return ended(nil)
		case err := <-readErr:
			return ended(err)
		case <-ob.changed:
			frames, sent = ob.after(sent)
		}
	}
}

// errSwitch is the session context's cause when the watcher ends it on purpose.
var errSwitch = errors.New("planned edge switch")

func (a *Agent) emit(e Event) {
	if a.Events != nil {
		a.Events(e)
	}
}

func (a *Agent) logger() *slog.Logger {
	if a.Picker.Logger == nil {
		return slog.Default()
	}
	return a.Picker.Logger
}

func (a *Agent) clock() clock.Clock {
	if a.Picker.Clock == nil {
		return clock.Real{}
	}
	return a.Picker.Clock
}

func (a *Agent) dialTimeout() time.Duration {
	if a.DialTimeout <= 0 {
		return defaultDialTimeout
	}
	return a.DialTimeout
}
