package drain

import (
	"bufio"
	"context"
	"errors"
	"io"
	"net"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/zero502/zero502/infra/clock"
	"github.com/zero502/zero502/internal/testrig/poll"
)

const (
	window   = 15 * time.Second
	shutdown = 10 * time.Second
	deadline = 10 * time.Second // how long a test polls for a state before failing
)

var t0 = time.Date(2026, 11, 30, 15, 0, 0, 0, time.UTC)

// server is a drain.Serve under test: a real listener, a fake clock, a handler with a slow path
// that blocks until the test releases it.
type server struct {
	addr    string
	clk     *clock.Fake
	cancel  context.CancelFunc
	done    chan error
	entered chan struct{} // one value per /slow request that reached the handler
	release chan struct{} // closed to let /slow requests finish

	mu     sync.Mutex
	phases []phaseAt
}

type phaseAt struct {
	p  Phase
	at time.Time
}

func startServer(t *testing.T) *server {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	s := &server{
		addr:    ln.Addr().String(),
		clk:     clock.NewFake(t0),
		done:    make(chan error, 1),
		entered: make(chan struct{}, 16),
		release: make(chan struct{}),
	}
	mux := http.NewServeMux()
	mux.HandleFunc("/", func(w http.ResponseWriter, r *http.Request) { io.WriteString(w, "hello\n") })
	mux.HandleFunc("/health", func(w http.ResponseWriter, r *http.Request) { io.WriteString(w, "ok\n") })
	mux.HandleFunc("/slow", func(w http.ResponseWriter, r *http.Request) {
		s.entered <- struct{}{}
		<-s.release
		io.WriteString(w, "slow done\n")
	})
	ctx, cancel := context.WithCancel(context.Background())
	s.cancel = cancel
	hs := Handshake{Window: window, Shutdown: shutdown, Clock: s.clk,
		OnPhase: func(p Phase, at time.Time) {
			s.mu.Lock()
			s.phases = append(s.phases, phaseAt{p, at})
			s.mu.Unlock()
		}}
	go func() { s.done <- Serve(ctx, ln, mux, hs) }()
	t.Cleanup(func() {
		cancel()
		select {
		case <-s.release:
		default:
			close(s.release)
		}
	})
	return s
}

// startDrain cancels the context and waits until the window timer is armed (draining is on).
func (s *server) startDrain(t *testing.T) {
	t.Helper()
	s.cancel()
	poll.Until(t, deadline, "the drain window timer", func() bool { return s.clk.Waiters() == 1 })
}

// conn is one client connection speaking raw HTTP/1.1, so the test controls keep-alive exactly.
type conn struct {
	net.Conn
	r *bufio.Reader
}

func dial(t *testing.T, addr string) *conn {
	t.Helper()
	c, err := net.DialTimeout("tcp", addr, deadline)
	if err != nil {
		t.Fatalf("dial %s: %v", addr, err)
	}
	t.Cleanup(func() { c.Close() })
	c.SetDeadline(time.Now().Add(deadline))
	return &conn{Conn: c, r: bufio.NewReader(c)}
}

func (c *conn) send(t *testing.T, path string) {
	t.Helper()
	if _, err := io.WriteString(c, "GET "+path+" HTTP/1.1\r\nHost: test\r\n\r\n"); err != nil {
		t.Fatalf("send %s: %v", path, err)
	}
}

func (c *conn) read(t *testing.T) (*http.Response, string) {
	t.Helper()
	resp, err := http.ReadResponse(c.r, nil)
	if err != nil {
		t.Fatalf("read response: %v", err)
	}
	body, err := io.ReadAll(resp.Body)
	resp.Body.Close()
	if err != nil {
		t.Fatalf("read body: %v", err)
	}
	return resp, string(body)
}

func (c *conn) get(t *testing.T, path string) (*http.Response, string) {
	t.Helper()
	c.send(t, path)
	return c.read(t)
}

func TestDrainWindowFailsHealthButServesAndAccepts(t *testing.T) {
	s := startServer(t)

	// A pooled keep-alive connection from before the drain: its response keeps it open.
	pooled := dial(t, s.addr)
	if resp, _ := pooled.get(t, "/"); resp.Close {
		t.Fatalf("before the drain, / closed the keep-alive connection")
	}
	if resp, _ := dial(t, s.addr).get(t, "/health"); resp.StatusCode != 200 {
		t.Fatalf("before the drain, /health = %d, want 200", resp.StatusCode)
	}

	s.startDrain(t)

	if resp, body := dial(t, s.addr).get(t, "/health"); resp.StatusCode != 503 || body != "draining\n" {
		t.Fatalf("during the window, /health = %d %q, want 503 \"draining\\n\"", resp.StatusCode, body)
	}
	fresh := dial(t, s.addr) // a NEW connection, accepted during the window
	resp, body := fresh.get(t, "/")
	if resp.StatusCode != 200 || body != "hello\n" {
		t.Fatalf("during the window, / on a new connection = %d %q, want 200", resp.StatusCode, body)
	}
	if !resp.Close { // http.ReadResponse turns the Connection: close header into resp.Close
		t.Fatal("during the window, / lacks Connection: close")
	}

	// The pooled connection gets its answer, with Connection: close, and then the server closes it.
	resp, _ = pooled.get(t, "/")
	if resp.StatusCode != 200 || !resp.Close {
		t.Fatalf("pooled connection during the window: %d close=%v, want 200 with Connection: close", resp.StatusCode, resp.Close)
	}
	if n, err := pooled.r.ReadByte(); err != io.EOF {
		t.Fatalf("pooled connection after a Connection: close response: read %v %v, want EOF (server closed it)", n, err)
	}

	select {
	case err := <-s.done:
		t.Fatalf("Serve returned during the window: %v", err)
	default:
	}
}

func TestAfterWindowRefusesAndFinishesInFlight(t *testing.T) {
	s := startServer(t)
	s.startDrain(t)

	slow := dial(t, s.addr)
	slow.send(t, "/slow") // started during the window
	<-s.entered

	s.clk.Advance(window)
	poll.Until(t, deadline, "the listener to close (connection refused)", func() bool {
		c, err := net.DialTimeout("tcp", s.addr, time.Second)
		if err == nil {
			c.Close()
			return false
		}
		return true
	})
	select {
	case err := <-s.done:
		t.Fatalf("Serve returned with a request in flight: %v", err)
	default:
	}

	close(s.release)
	resp, body := slow.read(t)
	if resp.StatusCode != 200 || body != "slow done\n" {
		t.Fatalf("in-flight slow request = %d %q, want 200 \"slow done\\n\"", resp.StatusCode, body)
	}
	// The shutdown budget is never advanced: Serve returns because in-flight work finished,
	// before Window+Shutdown.
	select {
	case err := <-s.done:
		if err != nil {
			t.Fatalf("Serve = %v, want nil", err)
		}
	case <-time.After(deadline):
		t.Fatal("Serve did not return after the last in-flight request finished")
	}

	s.mu.Lock()
	defer s.mu.Unlock()
	want := []phaseAt{{PhaseDraining, t0}, {PhaseStoppedAccepting, t0.Add(window)}, {PhaseDone, t0.Add(window)}}
	if len(s.phases) != len(want) {
		t.Fatalf("phases = %v, want %v", s.phases, want)
	}
	for i := range want {
		if s.phases[i].p != want[i].p || !s.phases[i].at.Equal(want[i].at) {
			t.Fatalf("phase %d = %v, want %v", i, s.phases[i], want[i])
		}
	}
}

func TestShutdownBudgetCutsWhatRemains(t *testing.T) {
	s := startServer(t)
	s.startDrain(t)
	stuck := dial(t, s.addr)
	stuck.send(t, "/slow") // never released
	<-s.entered

	s.clk.Advance(window)
	poll.Until(t, deadline, "the shutdown budget timer", func() bool { return s.clk.Waiters() == 1 })
	s.clk.Advance(shutdown)
	select {
	case err := <-s.done:
		if err != nil {
			t.Fatalf("Serve = %v, want nil after cutting", err)
		}
	case <-time.After(deadline):
		t.Fatal("Serve did not return when the shutdown budget ran out")
	}
	if _, err := http.ReadResponse(stuck.r, nil); err == nil {
		t.Fatal("the cut request got a response; want its connection closed")
	}
}

func TestServeReportsABrokenListenerBeforeAnyDrain(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() {
		done <- Serve(context.Background(), ln, http.NotFoundHandler(), Handshake{Window: time.Second})
	}()
	ln.Close()
	select {
	case err := <-done:
		if err == nil || !errors.Is(err, net.ErrClosed) {
			t.Fatalf("Serve = %v, want an error wrapping net.ErrClosed", err)
		}
	case <-time.After(deadline):
		t.Fatal("Serve did not return after its listener broke")
	}
}

func TestHandshakeRejectsBadNumbers(t *testing.T) {
	for _, tc := range []struct {
		name string
		hs   Handshake
		want string
	}{
		{"negative window", Handshake{Window: -time.Second}, "drain window -1s is negative"},
		{"negative shutdown", Handshake{Shutdown: -time.Second}, "drain shutdown -1s is negative"},
		{"relative health path", Handshake{HealthPath: "health"}, `health path "health" must start with /`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ln, err := net.Listen("tcp", "127.0.0.1:0")
			if err != nil {
				t.Fatal(err)
			}
			defer ln.Close()
			err = Serve(context.Background(), ln, http.NotFoundHandler(), tc.hs)
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("Serve = %v, want an error containing %q", err, tc.want)
			}
		})
	}
}
