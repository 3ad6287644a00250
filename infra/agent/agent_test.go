package agent

import (
	"context"
	"crypto/rand"
	"crypto/tls"
	"errors"
	"fmt"
	"net"
	"net/netip"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/zero502/zero502/infra/backoff"
	"github.com/zero502/zero502/infra/edgepick"
	"github.com/zero502/zero502/internal/testrig/poll"
)

// newAgent is an agent over edges with a real TLS probe, fast backoff and a fast watcher.
func newAgent(t *testing.T, client *tls.Config, edges []netip.AddrPort, state string, ev *events) *Agent {
	t.Helper()
	return &Agent{
		Picker: &edgepick.Picker{Addrs: edges, Probe: edgepick.TLSProbe(client, 2*time.Second), StatePath: state,
			Logger: testLogger(t)},
		Watcher: edgepick.Watcher{Interval: time.Hour},
		TLS:     client,
		Backoff: backoff.Backoff{Base: 20 * time.Millisecond, Cap: 200 * time.Millisecond},
		Outbox:  NewOutbox(0),
		Events:  ev.add,
	}
}

// sendAll sends n messages and returns their ids.
func sendAll(t *testing.T, a *Agent, n int, tag string) []string {
	t.Helper()
	var ids []string
	for i := range n {
		id, err := a.Send(fmt.Sprintf("%s %d", tag, i))
		if err != nil {
			t.Fatal(err)
		}
		ids = append(ids, id)
	}
	return ids
}

// assertExactlyOnce checks every id was applied exactly once and nothing else was.
func assertExactlyOnce(t *testing.T, applied map[string]int, ids []string) {
	t.Helper()
	for _, id := range ids {
		if applied[id] != 1 {
			t.Errorf("message %s applied %d times, want exactly once", id, applied[id])
		}
	}
	if len(applied) != len(ids) {
		t.Errorf("server applied %d distinct messages, agent sent %d", len(applied), len(ids))
	}
}

func TestKillingTheChosenEdgeMidSessionFailsOverWithoutLosingOrRepeatingAMessage(t *testing.T) {
	serverConf, client := newPKI(t)
	srv, origin, applied := startServer(t, serverConf)
	a, b := startEdge(t, freeAddr(t), origin), startEdge(t, freeAddr(t), origin)
	edges := map[netip.AddrPort]*edgeProc{a.addr: a, b.addr: b}

	ev := &events{}
	ag := newAgent(t, client, []netip.AddrPort{a.addr, b.addr}, filepath.Join(t.TempDir(), "state.json"), ev)
	runAgent(t, ag)
	poll.Until(t, 20*time.Second, "the first session", func() bool { _, ok := ev.last(Connected); return ok })
	first, _ := ev.last(Connected)

	ids := sendAll(t, ag, 50, "before")
	poll.Until(t, 20*time.Second, "the first 50 acknowledged", func() bool { return ag.Pending() == 0 })

	// Kill the chosen edge while messages are still flowing: some are in flight through it.
	inflight := make(chan []string)
	go func() { inflight <- sendAll(t, ag, 100, "during") }()
	edges[first.Edge].kill()
	ids = append(ids, <-inflight...)
	ids = append(ids, sendAll(t, ag, 50, "after")...)

	poll.Until(t, 20*time.Second, "every message acknowledged", func() bool { return ag.Pending() == 0 })
	assertExactlyOnce(t, applied(), ids)

	if _, ok := ev.last(Failed); !ok {
		t.Errorf("no failure recorded after the edge was killed: %+v", ev.list())
	}
	now, _ := ev.last(Connected)
	if now.Edge == first.Edge || !now.Edge.IsValid() {
		t.Errorf("the session is on %s after killing %s; want the other edge", now.Edge, first.Edge)
	}
	t.Logf("server counts %+v (duplicates are replays the dedup store refused)", srv.Counts())
	if st, err := edgepick.LoadState(ag.Picker.StatePath); err != nil || st.Chosen != now.Edge {
		t.Errorf("state file records %s (%v); want the failover to %s", st.Chosen, err, now.Edge)
	}
}

func TestABetterEdgeAppearingIsTakenAfterTheStreakAndBothThresholds(t *testing.T) {
	serverConf, client := newPKI(t)
	_, origin, applied := startServer(t, serverConf)
	// Two far edges, within a millisecond of each other: neither may ever replace the other.
	slow := startSlowPath(t, origin, 60*time.Millisecond)
	far1, far2 := startEdge(t, freeAddr(t), slow), startEdge(t, freeAddr(t), slow)
	near := freeAddr(t) // not up yet: it fails the first measurement

	ev := &events{}
	ag := newAgent(t, client, []netip.AddrPort{far1.addr, far2.addr, near}, "", ev)
	ag.Picker.MaxAge = 150 * time.Millisecond // re-measure often: that is how a new edge is found
	ag.Watcher.Interval = 100 * time.Millisecond
	runAgent(t, ag)
	poll.Until(t, 20*time.Second, "the first session", func() bool { _, ok := ev.last(Connected); return ok })
	first, _ := ev.last(Connected)
	if first.Edge == near {
		t.Fatalf("connected to %s, which is not up", near)
	}
	ids := sendAll(t, ag, 20, "far")
	poll.Until(t, 20*time.Second, "acknowledged on the far edge", func() bool { return ag.Pending() == 0 })

	startEdge(t, near, origin)
	poll.Until(t, 20*time.Second, "a planned switch", func() bool { _, ok := ev.last(Switched); return ok })
	sw, _ := ev.last(Switched)
	r := sw.Switch
	if r.To != near || r.From != first.Edge {
		t.Errorf("switch %s; want %s → %s", r, first.Edge, near)
	}
	if r.Streak < edgepick.DefaultStreak {
		t.Errorf("switched after %d successful probes; the streak is %d", r.Streak, edgepick.DefaultStreak)
	}
	if gain := r.FromHandshake - r.ToHandshake; gain < edgepick.DefaultMinGain || float64(gain) < edgepick.DefaultMinGainRatio*float64(r.FromHandshake) {
		t.Errorf("switched for a gain of %s from %s: below 20 ms or 25 %%", gain, r.FromHandshake)
	}
	poll.Until(t, 20*time.Second, "the session on the near edge", func() bool { c, _ := ev.last(Connected); return c.Edge == near })
	ids = append(ids, sendAll(t, ag, 20, "near")...)
	poll.Until(t, 20*time.Second, "acknowledged on the near edge", func() bool { return ag.Pending() == 0 })
	assertExactlyOnce(t, applied(), ids)

	// A planned end is not a failure: nothing was backed off, and the far edges never swapped.
	for _, e := range ev.list() {
		switch {
		case e.Kind == Failed:
			t.Errorf("a failure was recorded (%v, backoff %s); a switch must not feed the backoff", e.Err, e.Backoff)
		case e.Kind == Switched && e.Switch.To != near:
			t.Errorf("switched between the far edges: %s", e.Switch)
		}
	}
}

func TestARestartedAgentReusesItsStateFile(t *testing.T) {
	serverConf, client := newPKI(t)
	_, origin, applied := startServer(t, serverConf)
	a, b := startEdge(t, freeAddr(t), origin), startEdge(t, freeAddr(t), origin)
	state := filepath.Join(t.TempDir(), "state.json")

	var probes atomic.Int64
	run := func(tag string) (Event, []string) {
		ev := &events{}
		ag := newAgent(t, client, []netip.AddrPort{a.addr, b.addr}, state, ev)
		probe := ag.Picker.Probe
		ag.Picker.Probe = func(ctx context.Context, ap netip.AddrPort) edgepick.Measurement {
			probes.Add(1)
			return probe(ctx, ap)
		}
		ctx, cancel := context.WithCancel(context.Background())
		done := make(chan struct{})
		go func() { defer close(done); _ = ag.Run(ctx) }()
		defer func() { cancel(); <-done }()
		poll.Until(t, 20*time.Second, tag+": a session", func() bool { _, ok := ev.last(Connected); return ok })
		ids := sendAll(t, ag, 10, tag)
		poll.Until(t, 20*time.Second, tag+": acknowledged", func() bool { return ag.Pending() == 0 })
		c, _ := ev.last(Connected)
		return c, ids
	}

	c1, ids1 := run("first run")
	if c1.FromState || probes.Load() != 2 {
		t.Fatalf("first run: from state %v after %d probes; want a measurement of both edges", c1.FromState, probes.Load())
	}
	probes.Store(0)
	c2, ids2 := run("restart")
	if !c2.FromState || probes.Load() != 0 || c2.Edge != c1.Edge {
		t.Errorf("restart: on %s, from state %v, %d probes; want %s read from the state file with no probe",
			c2.Edge, c2.FromState, probes.Load(), c1.Edge)
	}
	assertExactlyOnce(t, applied(), append(ids1, ids2...))
}

func TestAReplayedMessageIsAcknowledgedButAppliedOnce(t *testing.T) {
	serverConf, client := newPKI(t)
	srv, origin, applied := startServer(t, serverConf)
	msg := Frame{Kind: kindMsg, ID: "m-1", Body: "hello"}
	for i, wantDup := range []bool{false, true} { // the second session replays the message
		c, err := tls.Dial("tcp", origin, client)
		if err != nil {
			t.Fatal(err)
		}
		if err := writeFrame(c, msg); err != nil {
			t.Fatal(err)
		}
		ack, err := readFrame(c)
		c.Close()
		if err != nil || ack.Kind != kindAck || ack.ID != msg.ID || ack.Dup != wantDup {
			t.Fatalf("session %d: ack %+v (%v); want an ack of %s with dup=%v", i+1, ack, err, msg.ID, wantDup)
		}
	}
	if got := applied()[msg.ID]; got != 1 {
		t.Errorf("applied %d times, want once", got)
	}
	if c := srv.Counts(); c.Applied != 1 || c.Duplicates != 1 {
		t.Errorf("counts %+v; want 1 applied and 1 duplicate", c)
	}
}

func TestTheOutboxIsBounded(t *testing.T) {
	o := NewOutbox(2)
	a, _ := o.Send("a")
	if _, err := o.Send("b"); err != nil {
		t.Fatal(err)
	}
	if _, err := o.Send("c"); !errors.Is(err, errOutboxFull) {
		t.Fatalf("third message into an outbox of 2: %v, want ErrOutboxFull", err)
	}
	if !o.Ack(a) || o.Ack(a) {
		t.Fatal("the first ack removes a message, the second finds nothing")
	}
	if _, err := o.Send("c"); err != nil {
		t.Fatalf("after an ack there is room: %v", err)
	}
}

// An origin that finished the handshake and then stopped reading blocks the agent's writes once
// the socket buffers fill. Cancelling Run's context (SIGTERM) still ends Run promptly: the
// session's connection is closed under the blocked write.
func TestAnAgentStopsWhenCancelledWhileItsOriginStopsReading(t *testing.T) {
	serverConf, client := newPKI(t)
	ln, err := tls.Listen("tcp", "127.0.0.1:0", serverConf)
	if err != nil {
		t.Fatal(err)
	}
	var (
		mu   sync.Mutex
		held []net.Conn // handshaken, never read again
	)
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			_ = c.(*tls.Conn).Handshake()
			mu.Lock()
			held = append(held, c)
			mu.Unlock()
		}
	}()

	ev := &events{}
	a := newAgent(t, client, []netip.AddrPort{netip.MustParseAddrPort(ln.Addr().String())}, "", ev)
	a.Picker.Probe = nil
	// 32 MiB queued before Run: the session replays all of it before it looks at its context,
	// and loopback's socket buffers hold a few MiB, so the replay blocks in a write.
	body := strings.Repeat("x", 512<<10)
	for range 64 {
		if _, err := a.Send(body); err != nil {
			t.Fatal(err)
		}
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { defer close(done); _ = a.Run(ctx) }()
	t.Cleanup(func() {
		cancel()
		ln.Close()
		mu.Lock()
		for _, c := range held {
			c.Close() // unblocks a writer the cancel did not
		}
		mu.Unlock()
		<-done
	})
	poll.Until(t, 20*time.Second, "the session", func() bool { _, ok := ev.last(Connected); return ok })

	cancel()
	select {
	case <-done:
	case <-time.After(5 * time.Second):
		t.Fatal("Agent.Run did not return 5s after its context was cancelled: a write blocked on an origin that stopped reading")
	}
	if e, ok := ev.last(Failed); ok {
		t.Errorf("a stop by cancel was recorded as a failure (%v); want the session ended quietly", e.Err)
	}
}

// A body whose frame would be over MaxFrame, in bytes or once JSON-escaped, is refused by Send,
// naming its size and the limit, and never queued: the messages sent after it are delivered,
// the largest body that fits among them.
func TestABodyOverTheFrameLimitIsRefusedAndTheMessagesAfterItAreDelivered(t *testing.T) {
	serverConf, client := newPKI(t)
	_, origin, applied := startServer(t, serverConf)
	ev := &events{}
	a := newAgent(t, client, []netip.AddrPort{netip.MustParseAddrPort(origin)}, "", ev)
	a.Picker.Probe = nil

	for _, tc := range []struct{ name, body string }{
		{"a body over the limit", strings.Repeat("x", MaxFrame+1)},
		// 174 763 bytes, each escaped to the 6 bytes of \u0001: over the limit as a frame.
		{"a body of control characters under the limit", strings.Repeat("\x01", MaxFrame/6+1)},
	} {
		id, err := a.Send(tc.body)
		if !errors.Is(err, errTooLarge) {
			t.Fatalf("%s: id %q, err %v; want it refused as too large", tc.name, id, err)
		}
		for _, want := range []string{fmt.Sprintf("body of %d bytes", len(tc.body)), fmt.Sprintf("%d-byte frame limit", MaxFrame)} {
			if !strings.Contains(err.Error(), want) {
				t.Errorf("%s: %v; want it to say %q", tc.name, err, want)
			}
		}
		if n := a.Pending(); n != 0 {
			t.Fatalf("%s: %d messages pending after the refusal; want none queued", tc.name, n)
		}
	}
	ids := []string{}
	for _, body := range []string{"small", strings.Repeat("x", MaxFrame-len(`{"kind":"msg","id":"`+rand.Text()+`","body":""}`))} {
		id, err := a.Send(body)
		if err != nil {
			t.Fatalf("a body of %d bytes: %v; want it queued", len(body), err)
		}
		ids = append(ids, id)
	}
	runAgent(t, a)
	poll.Until(t, 20*time.Second, "the messages after the refused ones acknowledged", func() bool { return a.Pending() == 0 })
	assertExactlyOnce(t, applied(), ids)
	if e, ok := ev.last(Failed); ok {
		t.Errorf("a session failed (%v); want one session that carried every message", e.Err)
	}
}

// maxRand draws the longest wait of every rung: the ladder's climb shows in each Failed event.
type maxRand struct{}

func (maxRand) Int64N(n int64) int64 { return n - 1 }

// An origin that completes the TLS handshake and drops the connection at once is a failure that
// climbs the backoff ladder: the agent used to start the ladder again at every handshake and
// reconnect within Backoff.Base for ever, at an origin already refusing it.
func TestASessionDroppedAtOnceClimbsTheBackoffLadder(t *testing.T) {
	serverTLS, clientTLS := newPKI(t)
	ln, err := tls.Listen("tcp", "127.0.0.1:0", serverTLS)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { ln.Close() })
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			_ = c.(*tls.Conn).Handshake() // the session is established, then dropped
			c.Close()
		}
	}()
	var ev events
	a := newAgent(t, clientTLS, []netip.AddrPort{netip.MustParseAddrPort(ln.Addr().String())}, filepath.Join(t.TempDir(), "state.json"), &ev)
	a.Backoff.Rand = maxRand{}
	runAgent(t, a)
	failed := func() []Event {
		var out []Event
		for _, e := range ev.list() {
			if e.Kind == Failed {
				out = append(out, e)
			}
		}
		return out
	}
	poll.Until(t, 20*time.Second, "five failed sessions", func() bool { return len(failed()) >= 5 })
	f := failed()
	for i, e := range f[:5] {
		if want := a.Backoff.Delay(i); e.Backoff != want {
			t.Errorf("failure %d (%v): backoff %s, want %s: a session dropped at once must climb the ladder", i+1, e.Err, e.Backoff, want)
		}
	}
}
