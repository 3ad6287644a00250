package standing

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"os"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/zero502/zero502/infra/clock"
	"github.com/zero502/zero502/internal/testrig/poll"
)

var zeroTime = time.Date(2026, 11, 30, 15, 0, 0, 0, time.UTC)

func inRotation() *Standing {
	s := &Standing{}
	s.StartInRotation(zeroTime)
	return s
}

func TestStateMachine(t *testing.T) {
	ok := Verdict{Status: 200}
	connected := Verdict{}
	s503 := Verdict{Status: 503}
	s500 := Verdict{Status: 500}
	refused := Verdict{Err: errors.New("connect: connection refused")}
	th := Thresholds{Unhealthy: 2, Healthy: 2}
	for _, tc := range []struct {
		name     string
		verdicts []Verdict
		want     State
	}{
		{"healthy stays healthy", []Verdict{ok, ok}, Healthy},
		{"one failure is not enough", []Verdict{refused}, Healthy},
		{"two failures take it out", []Verdict{refused, s500}, Unhealthy},
		{"a success resets the streak", []Verdict{refused, ok, refused}, Healthy},
		{"503 drains at once", []Verdict{s503}, Draining},
		{"503 keeps draining", []Verdict{s503, s503, s503}, Draining},
		{"draining then refused twice is unhealthy", []Verdict{s503, refused, refused}, Unhealthy},
		{"one 200 is not enough to come back", []Verdict{refused, refused, ok}, Unhealthy},
		{"two 200 bring it back", []Verdict{refused, refused, ok, ok}, Healthy},
		{"two TCP connects bring it back", []Verdict{refused, refused, connected, connected}, Healthy},
		{"drained target comes back after two 200", []Verdict{s503, ok, ok}, Healthy},
		{"unhealthy then 503 is draining", []Verdict{refused, refused, s503}, Draining},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s := inRotation()
			now := zeroTime
			for _, v := range tc.verdicts {
				now = now.Add(time.Second)
				s.Record(v, now, th)
			}
			if got := s.State(); got != tc.want {
				t.Fatalf("after %v: %s, want %s", tc.verdicts, got, tc.want)
			}
			if s.InRotation() != (tc.want == Healthy) {
				t.Fatalf("rotation flag disagrees with state %s", tc.want)
			}
		})
	}
}

func TestPassiveEjectionNeedsHealthyThresholdToReturn(t *testing.T) {
	s := inRotation()
	th := Thresholds{Unhealthy: 2, Healthy: 2}
	tr, moved := s.Eject("connect failed", zeroTime.Add(time.Second))
	if !moved || tr.To != Unhealthy || tr.Reason != "passive: connect failed" {
		t.Fatalf("eject: %+v %v", tr, moved)
	}
	s.Record(Verdict{Status: 200}, zeroTime.Add(2*time.Second), th)
	if s.State() != Unhealthy {
		t.Fatal("one 200 after a passive ejection must not be enough")
	}
	s.Record(Verdict{Status: 200}, zeroTime.Add(3*time.Second), th)
	st := s.Status("x", 3)
	if st.State != Healthy || !st.InRotation || len(st.Transitions) != 2 || !st.Since.Equal(zeroTime.Add(3*time.Second)) ||
		st.Address != "x" || st.InFlight != 3 {
		t.Fatalf("status after recovery: %+v", st)
	}
}

func TestTransitionsKeepTheLastTwenty(t *testing.T) {
	s := inRotation()
	th := Thresholds{Unhealthy: 1, Healthy: 1}
	now := zeroTime
	for i := 0; i < 30; i++ {
		now = now.Add(time.Second)
		s.Record(Verdict{Status: 500}, now, th)
		now = now.Add(time.Second)
		s.Record(Verdict{Status: 200}, now, th)
	}
	st := s.Status("x", 0)
	if len(st.Transitions) != 20 || !st.Transitions[19].At.Equal(now) {
		t.Fatalf("transitions: %d, last %v", len(st.Transitions), st.Transitions[len(st.Transitions)-1])
	}
}

// TestAdminHolds: a drained target stays out whatever its checks say, rejoins only through the
// healthy threshold counted from the undrain, and can be removed only once out of rotation.
func TestAdminHolds(t *testing.T) {
	s := inRotation()
	th := Thresholds{Unhealthy: 1, Healthy: 2}
	if _, err := s.MarkRemoved(); !errors.Is(err, ErrInRotation) {
		t.Fatalf("remove in rotation: %v, want ErrInRotation", err)
	}
	if tr, ok := s.AdminDrain(zeroTime, "admin"); !ok || tr.To != Draining || tr.Reason != ReasonAdmin {
		t.Fatalf("drain: %+v %v", tr, ok)
	}
	if _, ok := s.AdminDrain(zeroTime, "admin"); ok {
		t.Fatal("a second drain changed something")
	}
	for i := 0; i < 3; i++ {
		s.Record(Verdict{Status: 200}, zeroTime, th)
	}
	if s.InRotation() {
		t.Fatal("checks brought an admin-drained target back")
	}
	if tr, ok := s.Undrain(zeroTime); !ok || tr.To != Joining {
		t.Fatalf("undrain: %+v %v", tr, ok)
	}
	s.Record(Verdict{Status: 200}, zeroTime, th)
	if s.InRotation() {
		t.Fatal("one check after the undrain was enough: checks from before the undrain counted")
	}
	s.Record(Verdict{Status: 200}, zeroTime, th)
	if !s.InRotation() {
		t.Fatal("not back after the healthy threshold")
	}
	s.AdminDrain(zeroTime, "admin")
	if from, err := s.MarkRemoved(); err != nil || from != Draining {
		t.Fatalf("remove drained: %s %v", from, err)
	}
	s.Record(Verdict{Status: 200}, zeroTime, th)
	s.Record(Verdict{Status: 200}, zeroTime, th)
	if s.State() != Draining {
		t.Fatalf("a removed target moved: %s", s.State())
	}
}

func TestJoiningStaysOutUntilHealthy(t *testing.T) {
	s := &Standing{}
	s.StartJoining(zeroTime)
	th := Thresholds{Unhealthy: 1, Healthy: 2}
	s.Record(Verdict{Err: errors.New("refused")}, zeroTime, th)
	if s.State() != Joining {
		t.Fatalf("a failed check moved a joining target to %s", s.State())
	}
	s.Record(Verdict{}, zeroTime, th)
	s.Record(Verdict{}, zeroTime, th)
	if !s.InRotation() {
		t.Fatal("joining target not in rotation after two good checks")
	}
}

// TestWatchRunsOnTheClock drives the check loop with a fake clock: one check at start, one per
// interval, also while the target is out.
// watched is a target in rotation whose Watch (thresholds 2 and 2, a check every second of a
// fake clock) gets answers in turn (the last one again after them): count says how many checks
// ran, moves the transitions.
type watched struct {
	s     *Standing
	clock *clock.Fake
	mu    sync.Mutex
	n     int
	moves []Transition
}

func watch(t *testing.T, answers ...Verdict) *watched {
	w := &watched{s: inRotation(), clock: clock.NewFake(zeroTime)}
	ctx, cancel := context.WithCancel(context.Background())
	t.Cleanup(cancel)
	go w.s.Watch(ctx, Checks{Clock: w.clock, Every: time.Second, Thresholds: Thresholds{Unhealthy: 2, Healthy: 2}},
		func(context.Context) Verdict {
			w.mu.Lock()
			defer w.mu.Unlock()
			v := answers[min(w.n, len(answers)-1)]
			w.n++
			return v
		},
		func(tr Transition) {
			w.mu.Lock()
			defer w.mu.Unlock()
			w.moves = append(w.moves, tr)
		})
	return w
}

func (w *watched) count() int { w.mu.Lock(); defer w.mu.Unlock(); return w.n }

func TestWatchRunsOnTheClock(t *testing.T) {
	w := watch(t, Verdict{Status: 500}, Verdict{Status: 500}, Verdict{Status: 200}, Verdict{Status: 200})
	s, fc, count := w.s, w.clock, w.count
	for want := 1; want <= 4; want++ {
		poll.Until(t, 10*time.Second, "the check loop waits on the clock", func() bool { return fc.Waiters() == 1 && count() == want })
		if want == 2 && s.State() != Unhealthy {
			t.Fatalf("after two 500s: %s", s.State())
		}
		fc.Advance(time.Second)
	}
	poll.Until(t, 10*time.Second, "back in rotation", func() bool { return s.State() == Healthy })
	w.mu.Lock()
	defer w.mu.Unlock()
	if moves := w.moves; len(moves) != 2 || moves[0].To != Unhealthy || moves[1].To != Healthy || !moves[1].At.Equal(zeroTime.Add(3*time.Second)) {
		t.Fatalf("transitions: %+v", moves)
	}
}

// TestProbesAgainstRealSockets: TCP connects or is refused; HTTP reads the status behind an
// optional preamble, which the server sees first.
func TestProbesAgainstRealSockets(t *testing.T) {
	ctx := context.Background()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	var mu sync.Mutex
	var firstLine string
	srv := &http.Server{Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		switch r.URL.Path {
		case "/drain":
			w.WriteHeader(http.StatusServiceUnavailable)
		case "/hints": // an interim 103 Early Hints, then the final answer
			w.Header().Set("Link", "</app.css>; rel=preload")
			w.WriteHeader(http.StatusEarlyHints)
			w.WriteHeader(http.StatusOK)
		}
	})}
	// A tiny front that records the preamble line, then hands the rest to the HTTP server.
	go func() { _ = srv.Serve(&preambleListener{Listener: ln, mu: &mu, first: &firstLine}) }()
	defer srv.Close()
	addr := ln.Addr().String()

	if v := TCPProbe(ctx, addr, time.Second); !v.OK() {
		t.Fatalf("TCP probe of a listener: %+v", v)
	}
	if v := HTTPProbe(ctx, addr, "/health", "test", time.Second, nil); !v.OK() || v.Status != 200 {
		t.Fatalf("HTTP probe: %+v", v)
	}
	if v := HTTPProbe(ctx, addr, "/hints", "test", time.Second, nil); !v.OK() || v.Status != 200 {
		t.Fatalf("HTTP probe of a 103 then a 200: %+v; want the final 200, not the interim 103", v)
	}
	v := HTTPProbe(ctx, addr, "/drain", "test", time.Second, func(net.Conn) ([]byte, error) { return []byte("HELLO\r\n"), nil })
	if v.OK() || v.Status != 503 {
		t.Fatalf("HTTP probe of a 503: %+v", v)
	}
	mu.Lock()
	if firstLine != "HELLO" {
		t.Errorf("the preamble did not come first: %q", firstLine)
	}
	mu.Unlock()

	dead, _ := net.Listen("tcp", "127.0.0.1:0")
	deadAddr := dead.Addr().String()
	_ = dead.Close()
	if v := TCPProbe(ctx, deadAddr, time.Second); v.OK() || !strings.Contains(v.Reason(), "refused") {
		t.Fatalf("TCP probe of a closed port: %+v %s", v, v.Reason())
	}
	if v := HTTPProbe(ctx, deadAddr, "/", "test", time.Second, nil); v.OK() || !strings.Contains(v.Reason(), "connect") {
		t.Fatalf("HTTP probe of a closed port: %+v %s", v, v.Reason())
	}
}

// preambleListener strips a first line starting with HELLO, recording it.
type preambleListener struct {
	net.Listener
	mu    *sync.Mutex
	first *string
}

func (l *preambleListener) Accept() (net.Conn, error) {
	c, err := l.Listener.Accept()
	if err != nil {
		return nil, err
	}
	return &preambleConn{Conn: c, l: l}, nil
}

type preambleConn struct {
	net.Conn
	l    *preambleListener
	done bool
	rest []byte
}

func (c *preambleConn) Read(p []byte) (int, error) {
	if !c.done {
		c.done = true
		buf := make([]byte, 4096)
		n, err := c.Conn.Read(buf)
		if err != nil {
			return 0, err
		}
		buf = buf[:n]
		if line, rest, ok := strings.Cut(string(buf), "\r\n"); ok && strings.HasPrefix(line, "HELLO") {
			c.l.mu.Lock()
			*c.l.first = line
			c.l.mu.Unlock()
			buf = []byte(rest)
		}
		c.rest = buf
	}
	if len(c.rest) > 0 {
		n := copy(p, c.rest)
		c.rest = c.rest[n:]
		return n, nil
	}
	return c.Conn.Read(p)
}

// FailsOpen: only a target that served and left by failed checks or an ejection.
func TestFailsOpenOnlyAfterServingAndLeavingByChecks(t *testing.T) {
	ok := Verdict{Status: 200}
	s503 := Verdict{Status: 503}
	refused := Verdict{Err: errors.New("connect: connection refused")}
	th := Thresholds{Unhealthy: 2, Healthy: 2}
	now := zeroTime
	record := func(s *Standing, vs ...Verdict) {
		for _, v := range vs {
			now = now.Add(time.Second)
			s.Record(v, now, th)
		}
	}
	check := func(what string, s *Standing, want bool) {
		t.Helper()
		if got := s.FailsOpen(); got != want {
			t.Errorf("%s (state %s): fails open %v, want %v", what, s.State(), got, want)
		}
	}

	s := inRotation()
	check("in rotation", s, false)
	record(s, refused, refused)
	check("served, then two failed checks", s, true)
	record(s, ok, ok)
	check("back in rotation", s, false)
	record(s, s503)
	check("asked to leave (503)", s, false)
	record(s, refused, refused)
	check("draining, then two failed checks", s, true)

	e := inRotation()
	e.Eject("connect: connection refused", now)
	check("ejected", e, true)
	e.AdminDrain(now, "admin")
	check("ejected, then drained by the admin API", e, false)
	e.Undrain(now)
	check("undrained: joining", e, false)

	r := inRotation()
	record(r, refused, refused)
	if _, err := r.MarkRemoved(); err != nil {
		t.Fatal(err)
	}
	check("removed", r, false)

	first := &Standing{}
	first.StartAwaitingFirstCheck(zeroTime)
	record(first, refused, refused, refused)
	check("never passed a check", first, false)
	record(first, ok)
	record(first, refused, refused)
	check("passed its first check, then failed", first, true)

	j := &Standing{}
	j.StartJoining(zeroTime)
	record(j, refused, refused)
	check("joining, never in rotation", j, false)
}

// A check that could not even be made for the checker's own lack (socket(): EMFILE, as a
// TCPProbe under a spent descriptor limit fails) is no verdict on the target: three of them in a
// row leave a target in rotation that two failed checks would take out; real failures still do.
func TestAChecksOwnShortageIsNoVerdict(t *testing.T) {
	short := Verdict{Err: fmt.Errorf("connect: %w", UnwrapOp(&net.OpError{Op: "dial", Net: "tcp", Err: os.NewSyscallError("socket", syscall.EMFILE)}))}
	w := watch(t, short, short, short, Verdict{Status: 500}, Verdict{Status: 500})
	s, fc, count := w.s, w.clock, w.count
	for want := 1; want <= 5; want++ {
		poll.Until(t, 10*time.Second, "the check loop waits on the clock", func() bool { return fc.Waiters() == 1 && count() == want })
		if want == 3 && s.State() != Healthy {
			t.Fatalf("after three checks the checker could not make (%v): %s, want healthy", short.Err, s.State())
		}
		fc.Advance(time.Second)
	}
	poll.Until(t, 10*time.Second, "out of rotation after two 500s", func() bool { return s.State() == Unhealthy })
}
