package edge

import (
	"bufio"
	"context"
	"crypto/rand"
	"crypto/sha256"
	"io"
	"net"
	"net/netip"
	"testing"
	"time"

	"github.com/zero502/zero502/infra/clock"
	"github.com/zero502/zero502/infra/origin"
	"github.com/zero502/zero502/internal/testrig/poll"
	"github.com/zero502/zero502/internal/testrig/tcpserver"
)

// chain is client → Forwarder → Relay (origin.Listener) → backend, all on real loopback sockets.
type chain struct {
	fwd   *Forwarder
	relay *Relay
	logs  *logs
}

func startChain(t *testing.T) chain {
	t.Helper()
	log, lines := newLogs()
	m := &innerMap{}
	relay := startRelay(t, &Relay{Backend: startBackend(t, m), Map: m, Trusted: []netip.Prefix{loopback}, Logger: log})
	fwd := startForwarder(t, &Forwarder{Origins: []string{relay.Addr().String()}, Logger: log})
	// the edge's first check (Open: a TCP connect) is an empty connection to the relay, which
	// counts it on its own time: counts taken afterwards see only the test's own connections
	poll.Until(t, deadline, "the relay to count the edge's first check", func() bool { return relay.Counts().Empty == 1 })
	return chain{fwd: fwd, relay: relay, logs: lines}
}

func TestForwarderCarriesBytesIntactBothWaysWithHalfCloseAndTheOriginSeesClaimAndMeasurement(t *testing.T) {
	ch := startChain(t)
	client := dialFrom(t, "127.0.0.2", ch.fwd.Addr().String())
	r := bufio.NewReader(client)

	who := ask(t, client, r)
	if !who.Found {
		t.Fatalf("the backend found no entry for its peer %s in the inner map", who.Inner)
	}
	if want := mustAddrPort(t, client.LocalAddr()); who.Claimed != want {
		t.Errorf("Claimed = %v, want the client's real address %v", who.Claimed, want)
	}
	if who.Measured.Addr().String() != "127.0.0.1" || who.Measured == who.Claimed {
		t.Errorf("Measured = %v, want the forwarder's own address (127.0.0.1:its port), not the claim", who.Measured)
	}
	if who.Header != origin.HeaderV2 {
		t.Errorf("Header = %q, want v2", who.Header)
	}

	payload := make([]byte, 1<<20)
	if _, err := rand.Read(payload); err != nil {
		t.Fatal(err)
	}
	sent := make(chan error, 1)
	go func() {
		_, err := client.Write(payload)
		if err == nil {
			err = client.CloseWrite() // half-close: the backend must see EOF and still answer
		}
		sent <- err
	}()
	got, err := io.ReadAll(r)
	if err != nil {
		t.Fatalf("read the echo: %v", err)
	}
	if err := <-sent; err != nil {
		t.Fatalf("send 1 MiB: %v", err)
	}
	want := sha256.Sum256(append(append([]byte{}, payload...), trailer...))
	if sha256.Sum256(got) != want || len(got) != len(payload)+len(trailer) {
		t.Fatalf("echo: %d bytes, sha256 differs from the %d sent plus the trailer", len(got), len(payload))
	}
	client.Close()

	poll.Until(t, deadline, "the relay's connection line", func() bool { return len(ch.logs.withMsg(t, "origin connection closed")) == 1 })
	line := ch.logs.withMsg(t, "origin connection closed")[0]
	if line["claimed"] != who.Claimed.String() || line["measured"] != who.Measured.String() {
		t.Errorf("relay log line: claimed %v measured %v, want %v and %v", line["claimed"], line["measured"], who.Claimed, who.Measured)
	}
	poll.Until(t, deadline, "the edge's connection line", func() bool { return len(ch.logs.withMsg(t, "edge connection closed")) == 1 })
	if line := ch.logs.withMsg(t, "edge connection closed")[0]; line["measured"] != who.Claimed.String() || line["end"] != "closed" {
		t.Errorf("edge log line: measured %v end %v, want %v and closed", line["measured"], line["end"], who.Claimed)
	}
}

func TestForwarderClosesTheClientWhenTheOriginIsUnreachable(t *testing.T) {
	log, lines := newLogs()
	fwd := startForwarder(t, &Forwarder{Origins: []string{tcpserver.FreeAddr(t)}, ConnectTimeout: time.Second, Logger: log})
	client := dialFrom(t, "127.0.0.1", fwd.Addr().String())
	if !closedByPeer(client) {
		t.Fatal("the client connection stayed open with no origin behind it")
	}
	poll.Until(t, deadline, "the unreachable count", func() bool { return fwd.Counts().Unreachable == 1 })
	if len(lines.withMsg(t, "edge: no upstream reachable; client connection closed")) != 1 {
		t.Fatalf("want one line for the unreachable origin, got:\n%s", lines)
	}
}

func TestForwarderIdleTimeoutIsSilenceInBothDirectionsNotDuration(t *testing.T) {
	// The origin only reads (a sink): the origin→client direction is silent throughout, so only
	// the client's bytes keep the connection alive.
	sink := tcpserver.Serve(t, func(c net.Conn) { _, _ = io.Copy(io.Discard, c) })
	// The idle timeout is well above the 100ms pace, so a writer delayed by a loaded machine does
	// not look like silence; the connection still lives for three of them.
	const idle = 750 * time.Millisecond
	fwd := startForwarder(t, &Forwarder{Origins: []string{sink}, IdleTimeout: idle})
	client := dialFrom(t, "127.0.0.1", fwd.Addr().String())
	// One direction busy every 100ms for three idle timeouts: the connection lives on.
	for end := time.Now().Add(3 * idle); time.Now().Before(end); {
		if _, err := io.WriteString(client, "still here\n"); err != nil {
			t.Fatalf("the connection closed while bytes were moving: %v", err)
		}
		<-time.After(100 * time.Millisecond) // the pace of the traffic, not a wait for a state
	}
	// Silence both ways: the edge closes it.
	start := time.Now()
	if !closedByPeer(client) {
		t.Fatal("the silent connection was not closed")
	}
	if took := time.Since(start); took > 5*time.Second {
		t.Fatalf("closed %s after the silence began, want about the idle timeout", took)
	}
}

// TestForwarderDrainKeepsForwardingThenRefusesThenFinishes follows docs/ARCHITECTURE.md, "The
// drain contract", with a fake clock: during Drain the edge reports draining (Draining, health
// refused) and still forwards old and new connections; then it refuses new ones while the old
// one finishes.
func TestForwarderDrainKeepsForwardingThenRefusesThenFinishes(t *testing.T) {
	const drainWindow, shutdown = 30 * time.Second, 10 * time.Second
	relay := startRelay(t, &Relay{Backend: startBackend(t, nil), Trusted: []netip.Prefix{loopback}})
	clk := clock.NewFake(time.Unix(0, 0))
	fwd := &Forwarder{Listen: "127.0.0.1:0", Health: "127.0.0.1:0", Origins: []string{relay.Addr().String()},
		Drain: drainWindow, Shutdown: shutdown, Clock: clk}
	ForTests(fwd)
	if err := fwd.Open(); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	done := make(chan error, 1)
	go func() { done <- fwd.Serve(ctx) }()
	addr, health := fwd.Addr().String(), fwd.HealthAddr().String()

	old := dialFrom(t, "127.0.0.1", addr)
	oldR := bufio.NewReader(old)
	echoLine(t, old, oldR, "before")
	if refused(health) || fwd.Draining() {
		t.Fatal("before the drain: health must accept and Draining be false")
	}

	cancel()
	// Two timers: the drain's and the upstream check loop's.
	poll.Until(t, deadline, "the drain window timer", func() bool { return clk.Waiters() == 2 })
	if !fwd.Draining() {
		t.Fatal("Draining is false during the drain window")
	}
	if !refused(health) {
		t.Fatal("the health listener still accepts during the drain window")
	}
	fresh := dialFrom(t, "127.0.0.1", addr)
	echoLine(t, fresh, bufio.NewReader(fresh), "a new connection during the window")
	fresh.Close()
	echoLine(t, old, oldR, "the old connection during the window")

	clk.Advance(drainWindow)
	poll.Until(t, deadline, "new connections to be refused", func() bool { return refused(addr) })
	echoLine(t, old, oldR, "in flight after the window")
	select {
	case err := <-done:
		t.Fatalf("Serve returned with a connection open: %v", err)
	default:
	}
	old.Close()
	select {
	case err := <-done:
		if err != nil {
			t.Fatalf("Serve = %v, want nil", err)
		}
	case <-time.After(deadline):
		t.Fatal("Serve did not return once the last connection finished")
	}
}

func TestForwarderShutdownBudgetClosesBothSidesOfWhatRemains(t *testing.T) {
	d := startDraining(t)
	clk, held, m, done := d.clk, d.held, d.m, d.done
	// Two timers in the window: the drain's, and the upstream check loop's (it goes on in the
	// drain); three in the budget: the FIN a linger before its end as well.
	poll.Until(t, deadline, "the drain window timer", func() bool { return clk.Waiters() == 2 })
	clk.Advance(drainWindow)
	poll.Until(t, deadline, "the shutdown budget timer", func() bool { return clk.Waiters() == 3 })
	clk.Advance(shutdown)
	select {
	case err := <-done:
		if err != nil {
			t.Fatalf("Serve = %v, want nil", err)
		}
	case <-time.After(deadline):
		t.Fatal("Serve did not return when the budget ran out")
	}
	// the linger's FIN and the budget's cut come with the same advance of the clock: the
	// backend may have answered the FIN with its trailer before the cut reached the client
	_ = held.SetReadDeadline(time.Now().Add(deadline))
	if got, err := io.ReadAll(held); isTimeout(err) || len(got) > 0 && string(got) != trailer {
		t.Fatalf("the held client connection after the budget: read %q, %v; want it closed (after the trailer at most)", got, err)
	}
	poll.Until(t, deadline, "the origin side to close too (inner map empty)", func() bool { return m.Len() == 0 })
}

// loopback is the trusted edge range of the tests: every forwarder dials from 127.0.0.1.
var loopback = netip.MustParsePrefix("127.0.0.0/8")

// A linger before the shutdown budget ends, the drain half-closes what is still open toward its
// server: the server closes, and the client reads a clean end (EOF) while the budget still runs,
// not a reset when it is over.
func TestForwarderDrainEndsOpenConnectionsWithAFINBeforeTheBudget(t *testing.T) {
	d := startDraining(t)
	clk, held, heldR, done := d.clk, d.held, d.heldR, d.done
	poll.Until(t, deadline, "the drain window timer", func() bool { return clk.Waiters() == 2 })
	clk.Advance(drainWindow)
	poll.Until(t, deadline, "the shutdown budget's timers", func() bool { return clk.Waiters() == 3 })
	clk.Advance(shutdown - finLinger)
	_ = held.SetReadDeadline(time.Now().Add(deadline))
	// the backend answers its last words (the trailer) on the FIN, then closes: the client reads
	// them, then a clean end
	if rest, err := io.ReadAll(heldR); err != nil || string(rest) != trailer {
		t.Fatalf("read after the FIN: %q, %v; want the server's last answer %q, then a clean EOF while the budget still runs", rest, err, trailer)
	}
	select {
	case err := <-done:
		t.Fatalf("Serve returned (%v) before the budget ran out", err)
	default:
	}
	_ = held.Close() // the client closes its side, as a WebSocket client does
	clk.Advance(finLinger)
	select {
	case err := <-done:
		if err != nil {
			t.Fatalf("Serve = %v, want nil", err)
		}
	case <-time.After(deadline):
		t.Fatal("Serve did not return when the budget ran out")
	}
}

// The drain tests' timings: a window and a budget the fake clock advances through.
const drainWindow, shutdown = 30 * time.Second, 10 * time.Second

// draining is a forwarder on a fake clock whose drain has begun, with one connection held open
// through it to a relay and its backend.
type draining struct {
	clk   *clock.Fake
	held  net.Conn
	heldR *bufio.Reader
	m     *innerMap
	done  chan error
}

func startDraining(t *testing.T) draining {
	t.Helper()
	d := draining{m: &innerMap{}, clk: clock.NewFake(time.Unix(0, 0)), done: make(chan error, 1)}
	relay := startRelay(t, &Relay{Backend: startBackend(t, d.m), Map: d.m, Trusted: []netip.Prefix{loopback}})
	fwd := ForTests(&Forwarder{Listen: "127.0.0.1:0", Origins: []string{relay.Addr().String()}, Drain: drainWindow, Shutdown: shutdown, Clock: d.clk})
	if err := fwd.Open(); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	t.Cleanup(cancel)
	go func() { d.done <- fwd.Serve(ctx) }()
	d.held = dialFrom(t, "127.0.0.1", fwd.Addr().String())
	d.heldR = bufio.NewReader(d.held)
	if a := ask(t, d.held, d.heldR); !a.Found {
		t.Fatal("the held connection is not in the inner map")
	}
	cancel()
	return d
}
