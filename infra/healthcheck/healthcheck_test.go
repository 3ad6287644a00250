package healthcheck_test

import (
	"bytes"
	"context"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/zero502/zero502/infra/healthcheck"
)

// serve runs h on a real listener on 127.0.0.1 and returns its address (host:port).
func serve(t *testing.T, h http.HandlerFunc) string {
	t.Helper()
	srv := httptest.NewServer(h)
	t.Cleanup(srv.Close)
	return srv.Listener.Addr().String()
}

func TestCheckPassesOnlyTheExpectedStatus(t *testing.T) {
	for _, tc := range []struct {
		name    string
		answer  int
		expect  int
		wantErr string
	}{
		{"200 against the default", 200, 0, ""},
		{"200 against 200", 200, 200, ""},
		{"204 against 204", 204, 204, ""},
		{"503 against the default", 503, 0, "answered 503, want 200"},
		{"204 against the default: no 2xx range", 204, 0, "answered 204, want 200"},
		{"200 against 204", 200, 204, "answered 200, want 204"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			addr := serve(t, func(w http.ResponseWriter, r *http.Request) {
				if r.URL.Path != "/health" {
					http.NotFound(w, r)
					return
				}
				w.Header().Set("X-Version", "v7")
				w.WriteHeader(tc.answer)
				if tc.answer != http.StatusNoContent {
					w.Write([]byte("state ok"))
				}
			})
			a, err := healthcheck.Check(context.Background(), addr, healthcheck.Rule{Path: "/health", Status: tc.expect, Timeout: 2 * time.Second}, "")
			if tc.wantErr == "" && err != nil {
				t.Fatalf("check: %v, want a pass", err)
			}
			if tc.wantErr != "" && (err == nil || err.Error() != tc.wantErr) {
				t.Fatalf("check: %v, want %q", err, tc.wantErr)
			}
			if a.Status != tc.answer || a.Header.Get("X-Version") != "v7" {
				t.Fatalf("answer %d %v, want %d with X-Version v7 (the answer comes back pass or fail)", a.Status, a.Header, tc.answer)
			}
			if tc.answer != http.StatusNoContent && string(a.Body) != "state ok" {
				t.Fatalf("body %q, want %q", a.Body, "state ok")
			}
		})
	}
}

func TestCheckNeverFollowsARedirect(t *testing.T) {
	var elsewhere atomic.Int32
	addr := serve(t, func(w http.ResponseWriter, r *http.Request) {
		switch r.URL.Path {
		case "/health":
			http.Redirect(w, r, "/elsewhere", http.StatusMovedPermanently)
		case "/elsewhere":
			elsewhere.Add(1)
			w.WriteHeader(http.StatusOK)
		}
	})
	if _, err := healthcheck.Check(context.Background(), addr, healthcheck.Rule{Path: "/health", Status: 200, Timeout: 2 * time.Second}, ""); err == nil || err.Error() != "answered 301, want 200" {
		t.Fatalf("rule 200 on a redirecting path: %v, want %q", err, "answered 301, want 200")
	}
	a, err := healthcheck.Check(context.Background(), addr, healthcheck.Rule{Path: "/health", Status: 301, Timeout: 2 * time.Second}, "")
	if err != nil {
		t.Fatalf("rule 301 on a redirecting path: %v, want a pass", err)
	}
	if got := a.Header.Get("Location"); got != "/elsewhere" {
		t.Fatalf("Location %q, want /elsewhere", got)
	}
	if n := elsewhere.Load(); n != 0 {
		t.Fatalf("the redirect's target was asked %d times, want never", n)
	}
}

func TestCheckSaysWhenNoAnswerCameWithinTheTimeout(t *testing.T) {
	release := make(chan struct{})
	addr := serve(t, func(w http.ResponseWriter, r *http.Request) {
		select {
		case <-r.Context().Done():
		case <-release:
		}
	})
	t.Cleanup(func() { close(release) }) // before the server's Close, which waits for handlers
	begin := time.Now()
	_, err := healthcheck.Check(context.Background(), addr, healthcheck.Rule{Path: "/health", Timeout: 150 * time.Millisecond}, "")
	if err == nil || err.Error() != "no answer within 150ms" {
		t.Fatalf("check of a silent service: %v, want %q", err, "no answer within 150ms")
	}
	if took := time.Since(begin); took > 5*time.Second {
		t.Fatalf("the check took %s, want about its timeout of 150ms", took)
	}
}

func TestCheckWaitsOutASlowAnswerWithinItsTimeout(t *testing.T) {
	addr := serve(t, func(w http.ResponseWriter, r *http.Request) {
		time.Sleep(300 * time.Millisecond) // the service is slow, not the test
		w.WriteHeader(http.StatusOK)
	})
	if _, err := healthcheck.Check(context.Background(), addr, healthcheck.Rule{Path: "/health", Timeout: 5 * time.Second}, ""); err != nil {
		t.Fatalf("check of a 300ms answer with a 5s timeout: %v, want a pass", err)
	}
}

func TestCheckSaysTheConnectionWasRefused(t *testing.T) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := l.Addr().String()
	l.Close() // nothing listens there now
	_, err = healthcheck.Check(context.Background(), addr, healthcheck.Rule{Path: "/health", Timeout: 2 * time.Second}, "")
	if err == nil || err.Error() != "connect: connection refused" {
		t.Fatalf("check of a closed port: %v, want %q", err, "connect: connection refused")
	}
}

func TestCheckReadsABoundedBody(t *testing.T) {
	addr := serve(t, func(w http.ResponseWriter, r *http.Request) {
		w.Write(bytes.Repeat([]byte("x"), healthcheck.MaxBody+64<<10))
	})
	a, err := healthcheck.Check(context.Background(), addr, healthcheck.Rule{Path: "/health", Timeout: 5 * time.Second}, "")
	if err != nil {
		t.Fatalf("check of a long body: %v, want a pass", err)
	}
	if len(a.Body) != healthcheck.MaxBody {
		t.Fatalf("read %d bytes of the body, want exactly MaxBody %d", len(a.Body), healthcheck.MaxBody)
	}
}

func TestEveryCheckIsOnAFreshConnectionWithTheCheckersAgent(t *testing.T) {
	var conns atomic.Int32
	var agents []string
	srv := httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		agents = append(agents, r.UserAgent()) // one check at a time
	}))
	srv.Config.ConnState = func(_ net.Conn, s http.ConnState) {
		if s == http.StateNew {
			conns.Add(1)
		}
	}
	srv.Start()
	t.Cleanup(srv.Close)
	addr := srv.Listener.Addr().String()
	for range 3 {
		if _, err := healthcheck.Check(context.Background(), addr, healthcheck.Rule{Path: "/health", Timeout: 2 * time.Second}, "zero502-test"); err != nil {
			t.Fatal(err)
		}
	}
	if n := conns.Load(); n != 3 {
		t.Fatalf("3 checks came on %d connections, want 3 (no keep-alive: a pooled connection hides a peer that stopped accepting)", n)
	}
	if strings.Join(agents, ",") != "zero502-test,zero502-test,zero502-test" {
		t.Fatalf("User-Agents %q, want zero502-test on every check", agents)
	}
}

func TestPasses(t *testing.T) {
	for _, tc := range []struct {
		status, want int
		pass         bool
	}{
		{200, 0, true}, {200, 200, true}, {201, 0, false}, {301, 301, true}, {301, 0, false},
		{503, 503, true}, {0, 0, false},
		{healthcheck.LBStatus, healthcheck.LBStatus, true}, {204, healthcheck.LBStatus, false},
	} {
		if got := healthcheck.Passes(tc.status, tc.want); got != tc.pass {
			t.Errorf("Passes(%d, %d) = %v, want %v", tc.status, tc.want, got, tc.pass)
		}
	}
}
