package lb

import (
	"bufio"
	"io"
	"net"
	"net/http"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/zero502/zero502/internal/testrig/poll"
)

// drainContractBackend is a backend that keeps the drain handshake: once draining its health
// answers 503 while it still serves; at the end of its window it closes its listener (checks are
// refused) and finishes what it has. GET /slow takes held to answer "A". Silent, it answers
// nothing more (a host lost or frozen): connections are accepted and never answered.
type drainContractBackend struct {
	ln       net.Listener
	draining atomic.Bool
	silent   atomic.Bool
	// slowOnce: its next health answer comes 300 ms late (a GC pause, a busy process)
	slowOnce atomic.Bool
	slow     atomic.Int64
	gone     chan struct{} // closed at the test's end: whatever it holds ends
	wg       sync.WaitGroup
}

func startDrainContractBackend(t *testing.T, held time.Duration) *drainContractBackend {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	b := &drainContractBackend{ln: ln, gone: make(chan struct{})}
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			b.wg.Add(1)
			go b.serve(c, held)
		}
	}()
	t.Cleanup(func() { ln.Close(); close(b.gone); b.wg.Wait() })
	return b
}

func (b *drainContractBackend) serve(c net.Conn, held time.Duration) {
	defer b.wg.Done()
	defer c.Close()
	br := bufio.NewReader(c)
	for {
		req, err := http.ReadRequest(br)
		if err != nil {
			return
		}
		_, _ = io.Copy(io.Discard, req.Body)
		switch {
		case b.silent.Load():
			<-b.gone
			return
		case req.URL.Path == "/health" && b.draining.Load():
			if b.slowOnce.CompareAndSwap(true, false) {
				time.Sleep(300 * time.Millisecond)
			}
			_, _ = io.WriteString(c, "HTTP/1.1 503 Service Unavailable\r\nContent-Length: 0\r\n\r\n")
		case req.URL.Path == "/slow":
			b.slow.Add(1)
			select {
			case <-time.After(held):
			case <-b.gone:
				return
			}
			_, _ = io.WriteString(c, "HTTP/1.1 200 OK\r\nContent-Length: 1\r\nConnection: close\r\n\r\nA")
			return
		default:
			_, _ = io.WriteString(c, "HTTP/1.1 200 OK\r\nContent-Length: 1\r\n\r\nA")
		}
	}
}

// getAnswer is what a client got for one GET through the LB.
type getAnswer struct {
	body string
	err  error
}

// drainingWithAGetInFlight starts an LB (checks every 100 ms, header_timeout headerTimeout) in
// front of a drain-contract backend A, whose GET /slow takes held, and an ordinary backend B;
// sends two GET /slow through it (round robin gives one to each) and, once A has taken its own,
// has A drain: it returns when the LB sees A draining, with the two answers to come.
func drainingWithAGetInFlight(t *testing.T, held, headerTimeout time.Duration) (*drainContractBackend, *testLB, Settings, chan getAnswer) {
	t.Helper()
	a := startDrainContractBackend(t, held)
	b := startBackend(t, "B")
	set := fastSettings(a.ln.Addr().String(), b.addr())
	set.Interval, set.Timeout = 100*time.Millisecond, 80*time.Millisecond
	set.UnhealthyThreshold, set.HealthyThreshold = 2, 2
	set.HeaderTimeout = headerTimeout
	l := startLB(t, set)
	poll.Until(t, 10*time.Second, "both backends in rotation", func() bool {
		bs := l.Backends()
		return bs[0].InRotation() && bs[1].InRotation()
	})
	answers := make(chan getAnswer, 2)
	for range 2 {
		go func() {
			resp, err := client().Get(l.url("/slow"))
			if err != nil {
				answers <- getAnswer{err: err}
				return
			}
			body, _ := io.ReadAll(resp.Body)
			resp.Body.Close()
			answers <- getAnswer{body: string(body)}
		}()
	}
	poll.Until(t, 5*time.Second, "A took a GET /slow", func() bool { return a.slow.Load() == 1 })
	a.draining.Store(true)
	poll.Until(t, 5*time.Second, "A draining", func() bool { return l.Backends()[0].State() == Draining })
	return a, l, set, answers
}

// requireFinishedAtA fails t unless, of the two GET /slow of drainingWithAGetInFlight, A
// answered the one it held, which ran there once and was not resent; why says what went wrong.
func requireFinishedAtA(t *testing.T, a *drainContractBackend, l *testLB, answers chan getAnswer, why string) {
	t.Helper()
	fromA := 0
	for range 2 {
		got := <-answers
		if got.err != nil {
			t.Fatalf("GET /slow: %v", got.err)
		}
		if got.body == "A" {
			fromA++
		}
	}
	if fromA != 1 || l.resent.Load() != 0 || a.slow.Load() != 1 {
		t.Fatalf("answers from A %d (want 1), resent after eject %d (want 0), GETs A ran %d (want 1): %s (transitions %+v)",
			fromA, l.resent.Load(), a.slow.Load(), why, l.Backends()[0].Status().Transitions)
	}
}

// A GET in flight at a backend that drains by the handshake finishes there: when the backend
// closes its listener at the end of its window, its refused checks take it from draining to
// unhealthy, which is no outage (it left rotation when it asked to), so the LB neither gives the
// request up nor resends it elsewhere (it would run twice).
func TestAGetInFlightAtADrainingBackendFinishesThere(t *testing.T) {
	a, l, _, answers := drainingWithAGetInFlight(t, 2*time.Second, 10*time.Second)
	a.ln.Close() // the end of its window: it stops accepting and finishes what it has
	poll.Until(t, 5*time.Second, "A's refused checks take it to unhealthy", func() bool { return l.Backends()[0].State() == Unhealthy })

	requireFinishedAtA(t, a, l, answers, "the GET in flight at the draining backend was given up and resent")
}

// A GET in flight at a draining backend whose checks then get no answer at all (its host lost or
// frozen mid-drain: what it had will never come back) is resent to another backend at once, as
// one at a backend that failed in rotation is: the client does not wait out
// balancer.header_timeout for a 504. Refused checks (above) leave it where it is.
func TestAGetInFlightAtADrainingBackendThatGoesSilentIsResent(t *testing.T) {
	// the GET /slow A takes never answers
	a, l, set, answers := drainingWithAGetInFlight(t, time.Hour, 20*time.Second)
	// the host is gone: its checks get no answer, nor will the GET it holds
	a.silent.Store(true)
	silentAt := time.Now()

	for range 2 {
		select {
		case got := <-answers:
			if got.err != nil || got.body != "slow" {
				t.Fatalf("GET /slow: %q, %v; want B's answer, \"slow\" (to both: the one A held, resent)", got.body, got.err)
			}
		case <-time.After(10 * time.Second):
			t.Logf("A: %+v", l.Backends()[0].Status().Transitions)
			t.Fatalf("the GET A held while draining is still unanswered %s after A went silent (state %s): not resent, "+
				"it waits out balancer.header_timeout %s", time.Since(silentAt).Round(time.Millisecond), l.Backends()[0].State(), set.HeaderTimeout)
		}
	}
	if got := l.resent.Load(); got != 1 {
		t.Errorf("resent after A went silent: %d, want 1", got)
	}
	var last Transition
	for _, tr := range l.Backends()[0].Status().Transitions {
		last = tr
	}
	if last.From != Draining || last.To != Unhealthy || !last.NoAnswer {
		t.Errorf("A's last transition %+v; want draining → unhealthy with no_answer", last)
	}
}

// One slow check of a draining backend (its 503 came after the check's timeout) between 503s
// is no outage, though its 503s counted as failed checks: the GET it holds finishes there, not
// resent to run twice. Silence takes as many checks as the unhealthy threshold.
func TestOneSlowCheckOfADrainingBackendResendsNothing(t *testing.T) {
	a, l, _, answers := drainingWithAGetInFlight(t, 2*time.Second, 10*time.Second)
	poll.Until(t, 5*time.Second, "A's 503s counted as failed checks", func() bool { return l.Backends()[0].Status().ConsecutiveFailures >= 3 })
	a.slowOnce.Store(true)
	requireFinishedAtA(t, a, l, answers, "one slow 503 gave up the GET A was still serving")
}
