package lb

import (
	"bytes"
	"io"
	"strings"
	"testing"
	"time"

	"github.com/zero502/zero502/internal/testrig/poll"
)

// metricValue is the value of the unlabelled series name on the LB's /metrics, as text.
func metricValue(t *testing.T, l *testLB, name string) string {
	t.Helper()
	_, body := adminCall(t, l.AdminAddr(), "GET", "/metrics", "")
	for _, line := range strings.Split(body, "\n") {
		if v, ok := strings.CutPrefix(line, name+" "); ok {
			return v
		}
	}
	t.Fatalf("/metrics has no %s", name)
	return ""
}

func TestWebSocketEchoesBothWaysAndIsCounted(t *testing.T) {
	a := startBackend(t, "a")
	l := startLB(t, fastSettings(a.addr()))
	ws, err := wsDial(l.Addr())
	if err != nil {
		t.Fatal(err)
	}
	if ws.backend != "a" {
		t.Fatalf("server's first message %q", ws.backend)
	}
	for _, msg := range [][]byte{[]byte("hello"), bytes.Repeat([]byte("x"), 300), bigBody[:256<<10]} {
		got, err := ws.echo(msg)
		if err != nil || !bytes.Equal(got, msg) {
			t.Fatalf("echo of %d bytes: got %d bytes, %v", len(msg), len(got), err)
		}
	}
	if v := metricValue(t, l, "zero502_lb_upgraded_connections"); v != "1" {
		t.Fatalf("upgraded connections while one is open: %s", v)
	}
	if err := ws.close(); err != nil {
		t.Fatal(err)
	}
	poll.Until(t, 5*time.Second, "the upgraded connection is no longer counted", func() bool {
		return metricValue(t, l, "zero502_lb_upgraded_connections") == "0"
	})
	if v := metricValue(t, l, "zero502_lb_upgrades_total"); v != "1" {
		t.Fatalf("upgrades total: %s", v)
	}
	// the 101 is the backend's answer, not a failure charged to it
	if st := l.Backends()[0].Status(); st.Requests["1xx"] != 1 || st.Requests["errors"] != 0 || st.Outcomes.Failures.Total() != 0 {
		t.Fatalf("a relayed 101 counted as %v, failures %+v; want 1xx 1 and no errors", st.Requests, st.Outcomes.Failures)
	}
	// the upgraded backend connection left the pool for good: plain requests still work
	if code, body, _ := get(t, client(), l.url("/")); code != 200 || body != "a" {
		t.Fatalf("a plain request after the WebSocket: %d %q", code, body)
	}
}

func TestWebSocketOutlivesItsBackendsDrain(t *testing.T) {
	a, b := startBackend(t, "a"), startBackend(t, "b")
	l := startLB(t, fastSettings(a.addr(), b.addr()))
	ws, err := wsDial(l.Addr())
	if err != nil {
		t.Fatal(err)
	}
	defer ws.c.Close()
	busy, other := a, b
	if ws.backend == "b" {
		busy, other = b, a
	}
	busy.health.Store(503) // its drain: out of rotation at the next check
	poll.Until(t, 5*time.Second, "the draining backend leaves rotation", func() bool {
		for _, be := range l.Backends() {
			if be.Address == busy.addr() {
				return !be.InRotation()
			}
		}
		return false
	})
	for i := 0; i < 3; i++ {
		if code, body, _ := get(t, client(), l.url("/")); code != 200 || body != other.name {
			t.Fatalf("a new request during the drain went to %q (%d), want %s", body, code, other.name)
		}
	}
	got, err := ws.echo([]byte("still here"))
	if err != nil || string(got) != "still here" {
		t.Fatalf("the WebSocket on the draining backend: %q %v", got, err)
	}
	if err := ws.close(); err != nil {
		t.Fatal(err)
	}
}

func TestLBDrainGivesWebSocketsTheBudgetThenAFIN(t *testing.T) {
	a := startBackend(t, "a")
	set := fastSettings(a.addr())
	set.Shutdown = 500 * time.Millisecond
	l := startLB(t, set)
	ws, err := wsDial(l.Addr())
	if err != nil {
		t.Fatal(err)
	}
	defer ws.c.Close()
	stopped := make(chan struct{})
	go func() { l.stop(); close(stopped) }()
	poll.Until(t, 5*time.Second, "the LB stops accepting", func() bool { return l.closing.Load() })
	if got, err := ws.echo([]byte("in the budget")); err != nil || string(got) != "in the budget" {
		t.Fatalf("the WebSocket during the shutdown budget: %q %v", got, err)
	}
	// the budget runs out: the LB ends the tunnel with a FIN (EOF here, not a reset)
	_ = ws.c.SetDeadline(time.Now().Add(10 * time.Second))
	if _, err := ws.br.ReadByte(); err != io.EOF {
		t.Fatalf("the client's end of the tunnel after the budget: %v, want EOF", err)
	}
	select {
	case <-stopped:
	case <-time.After(15 * time.Second):
		t.Fatal("Run did not return")
	}
}

func TestUpgradeRefusedByTheBackendIsAPlainExchange(t *testing.T) {
	a := startBackend(t, "a")
	l := startLB(t, fastSettings(a.addr()))
	// the backend answers 400 to an Upgrade it does not speak; the connection stays HTTP
	out := raw(t, l.Addr(), "GET /ws HTTP/1.1\r\nHost: x\r\nUpgrade: websocket\r\nConnection: Upgrade\r\n\r\n"+
		"GET / HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n", 5*time.Second)
	if !strings.HasPrefix(out, "HTTP/1.1 400 ") || !strings.HasSuffix(out, "\r\n\r\na") {
		t.Fatalf("refused upgrade, then a plain request: %q", out)
	}
}

func TestUpgradeHeaderWithoutConnectionUpgradeIsDropped(t *testing.T) {
	a := startBackend(t, "a")
	l := startLB(t, fastSettings(a.addr()))
	out := raw(t, l.Addr(), "GET /headers HTTP/1.1\r\nHost: x\r\nUpgrade: websocket\r\nConnection: close\r\n\r\n", 5*time.Second)
	if !strings.HasPrefix(out, "HTTP/1.1 200 ") || strings.Contains(out, "Upgrade") {
		t.Fatalf("an Upgrade not named in Connection is hop-by-hop, never forwarded: %q", out)
	}
}

// An upgraded connection silent both ways for tunnel_idle_timeout is closed, on both engines;
// one that keeps moving, in either direction, stays open past it.
func TestIdleWebSocketIsClosedAfterTheTunnelIdleTimeout(t *testing.T) {
	a := startBackend(t, "a")
	set := fastSettings(a.addr())
	set.TunnelIdleTimeout = 400 * time.Millisecond
	l := startLB(t, set)

	busy, err := wsDial(l.Addr())
	if err != nil {
		t.Fatal(err)
	}
	defer busy.close()
	for range 8 { // 1.6s of an echo every 200ms: four idle timeouts, never 400ms of silence
		if got, err := busy.echo([]byte("tick")); err != nil || string(got) != "tick" {
			t.Fatalf("a busy WebSocket broke within its idle timeout: %q %v", got, err)
		}
		time.Sleep(200 * time.Millisecond)
	}
	_ = busy.close()

	idle, err := wsDial(l.Addr())
	if err != nil {
		t.Fatal(err)
	}
	defer idle.close()
	poll.Until(t, 3*time.Second, "the idle WebSocket closed", func() bool {
		return metricValue(t, l, "zero502_lb_upgraded_connections") == "0"
	})
	if _, err := idle.echo([]byte("late")); err == nil {
		t.Fatal("the idle WebSocket still echoes after its idle timeout")
	}
}

// An open WebSocket is in flight to its backend until it ends: a backend drained at the balancer
// (drain: balancer waits for in_flight 0 before the stop signal; lb-sync deletes a retired
// backend at in_flight 0) is not reported idle while one is open through it.
func TestAnOpenWebSocketIsInFlightToItsBackendUntilItEnds(t *testing.T) {
	a := startBackend(t, "a")
	l := startLB(t, fastSettings(a.addr()))
	ws, err := wsDial(l.Addr())
	if err != nil {
		t.Fatal(err)
	}
	defer ws.c.Close()
	if _, err := ws.echo([]byte("hello")); err != nil {
		t.Fatal(err)
	}
	st, err := l.DrainBackend(a.addr(), "admin")
	if err != nil {
		t.Fatal(err)
	}
	if st.InRotation || st.InFlight != 1 {
		t.Fatalf("drained with a WebSocket open through it: in_rotation %v, in_flight %d; want out of rotation with 1 in flight",
			st.InRotation, st.InFlight)
	}
	if err := ws.close(); err != nil {
		t.Fatal(err)
	}
	poll.Until(t, 10*time.Second, "in_flight back to 0 once the WebSocket ended", func() bool {
		return l.Backends()[0].Status().InFlight == 0
	})
}
