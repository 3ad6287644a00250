package measure

import (
	"context"
	"io"
	"log/slog"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/coder/websocket"

	"github.com/zero502/zero502/infra/app"
	"github.com/zero502/zero502/infra/lb"
	"github.com/zero502/zero502/internal/testrig/lbinproc"
	"github.com/zero502/zero502/internal/testrig/poll"
)

// serveApp runs a real zero502 app on loopback until its context is cancelled (its drain).
func serveApp(t *testing.T, drain time.Duration) (addr string, stop func()) {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	a, err := app.New(app.Options{Version: "v1", Drain: drain, Shutdown: time.Second, IdleTimeout: 30 * time.Second,
		Logger: slog.New(slog.NewTextHandler(io.Discard, nil))})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- a.Serve(ctx, ln) }()
	var stopped bool
	stop = func() {
		if stopped {
			return
		}
		stopped = true
		cancel()
		if err := <-done; err != nil {
			t.Errorf("app: %v", err)
		}
		a.Close()
	}
	t.Cleanup(stop)
	return ln.Addr().String(), stop
}

// TestSessionsSurviveABackendDrain holds WebSocket sessions through a real LB onto two real apps
// and drains the app that holds them: the app ends each session with a close frame when its drain
// window is over, and the load reopens it through the LB onto the other app and resends what was
// unanswered. No session is lost.
func TestSessionsSurviveABackendDrain(t *testing.T) {
	first, stopFirst := serveApp(t, 600*time.Millisecond)
	set := lb.LabSettings("127.0.0.1:0", []string{first})
	set.Interval, set.Timeout = 100*time.Millisecond, 80*time.Millisecond
	s := lbinproc.Start(t, set)

	load, err := New(Options{Target: "http://" + s.Addr(), Rate: 20, HealthShare: 0, Sessions: 3,
		SessionEvery: 20 * time.Millisecond, Timeout: 2 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	res := make(chan *Result, 1)
	go func() { res <- load.Run(ctx) }()
	poll.Until(t, 5*time.Second, "every session echoing on the first app", func() bool {
		st := load.sessions.snapshot()
		return st.Opened >= 3 && st.Echoed >= 30
	})

	// A second app joins, the first drains: the sessions it holds end and come back on the second.
	second, _ := serveApp(t, 600*time.Millisecond)
	if _, _, err := s.AddBackend(second); err != nil {
		t.Fatal(err)
	}
	poll.Until(t, 5*time.Second, "the second app in rotation", func() bool {
		for _, b := range s.Backends() {
			if st := b.Status(); st.Address == second && st.InRotation {
				return true
			}
		}
		return false
	})
	stopFirst()
	before := load.sessions.snapshot().Echoed
	poll.Until(t, 5*time.Second, "the sessions reopened on the second app and echoing", func() bool {
		st := load.sessions.snapshot()
		return st.EndedClean >= 3 && st.Echoed >= before+30
	})
	cancel()
	r := <-res
	st := r.Sessions
	if st == nil || st.Lost != 0 || r.Failed() {
		t.Fatalf("sessions across a backend drain: %+v, failed requests %d", st, r.Failures)
	}
	if st.Opened < 6 {
		t.Errorf("sessions opened %d times, want the 3 first ones and 3 reopenings at least", st.Opened)
	}
}

// TestASessionMessageNobodyAskedForIsALossNotACrash: a WebSocket endpoint that speaks first (a
// welcome on connect, a feed's push) is not the echo the load expects. What it sends unasked is
// a session failure with the message named, and the load goes on to its result.
func TestASessionMessageNobodyAskedForIsALossNotACrash(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path != "/ws" {
			return
		}
		c, err := websocket.Accept(w, r, nil)
		if err != nil {
			return
		}
		defer c.CloseNow()
		if err := c.Write(r.Context(), websocket.MessageText, []byte("welcome")); err != nil {
			return
		}
		for {
			typ, msg, err := c.Read(r.Context())
			if err != nil || c.Write(r.Context(), typ, msg) != nil {
				return
			}
		}
	}))
	defer srv.Close()
	res := run(t, Options{Target: srv.URL, Rate: 10, Duration: 500 * time.Millisecond, Sessions: 1,
		SessionEvery: 20 * time.Millisecond})
	st := res.Sessions
	if st == nil || st.Lost == 0 || !res.Failed() {
		t.Fatalf("sessions with a welcome nobody asked for: %+v, want them counted lost", st)
	}
	if !strings.Contains(strings.Join(st.Errors, " "), `"welcome"`) {
		t.Errorf("session errors %q do not name the message nobody asked for", st.Errors)
	}
}
