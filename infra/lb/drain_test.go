package lb

import (
	"bufio"
	"encoding/json"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/zero502/zero502/infra/adminapi"
	"github.com/zero502/zero502/internal/testrig/poll"
)

func TestOwnDrainHandshake(t *testing.T) {
	a := startBackend(t, "a")
	set := fastSettings(a.addr())
	set.Drain = 800 * time.Millisecond
	set.Shutdown = 5 * time.Second
	l := startLB(t, set)
	c := client()
	if code, _, _ := get(t, c, l.url("/_lb/health")); code != 200 {
		t.Fatalf("own health before the drain: %d", code)
	}
	// a request in flight when the listener closes must finish
	inflight := make(chan string, 1)
	stopped := make(chan struct{})
	go func() { l.stop(); close(stopped) }()
	poll.Until(t, 5*time.Second, "own health 503", func() bool {
		code, _, _ := get(t, c, l.url("/_lb/health"))
		return code == 503
	})
	out := raw(t, l.Addr(), "GET / HTTP/1.1\r\nHost: x\r\n\r\n", 5*time.Second)
	if !strings.HasPrefix(out, "HTTP/1.1 200 ") || !strings.Contains(out, "\r\nConnection: close\r\n") || !strings.HasSuffix(out, "\r\n\r\na") {
		t.Fatalf("during the drain window the LB keeps proxying with Connection: close: %q", out)
	}
	resp, err := http.Get("http://" + l.AdminAddr() + "/admin/health")
	if err != nil || resp.StatusCode != 503 {
		t.Fatalf("/admin/health during the drain: %v %v", resp, err)
	}
	resp.Body.Close()
	go func() {
		_, body, _ := get(t, client(), l.url("/slow"))
		inflight <- body
	}()
	select {
	case <-stopped:
	case <-time.After(15 * time.Second):
		t.Fatal("Run did not return")
	}
	select {
	case body := <-inflight:
		if body != "slow" {
			t.Fatalf("in-flight request: %q", body)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("in-flight request did not finish")
	}
	if _, err := net.DialTimeout("tcp", l.Addr(), time.Second); err == nil {
		t.Fatal("the LB still accepts after its drain")
	}
}

func TestAdminAPI(t *testing.T) {
	a, b := startBackend(t, "a"), startBackend(t, "b")
	l := startLB(t, fastSettings(a.addr(), b.addr()))
	c := client()
	for i := 0; i < 4; i++ {
		get(t, c, l.url("/"))
	}
	b.health.Store(503)
	poll.Until(t, 5*time.Second, "b draining", func() bool { return l.Backends()[1].State() == Draining })
	admin := "http://" + l.AdminAddr()
	code, body, _ := get(t, c, admin+"/admin/backends")
	var got struct {
		Backends []map[string]any `json:"backends"`
	}
	if err := json.Unmarshal([]byte(body), &got); code != 200 || err != nil || len(got.Backends) != 2 {
		t.Fatalf("/admin/backends: %d %v %s", code, err, body)
	}
	bb := got.Backends[1]
	if bb["address"] != b.addr() || bb["state"] != "draining" || bb["in_rotation"] != false {
		t.Fatalf("backend b: %v", bb)
	}
	for _, k := range []string{"since", "consecutive_failures", "consecutive_successes", "last_check", "last_error", "in_flight", "requests", "transitions"} {
		if _, ok := bb[k]; !ok {
			t.Fatalf("backend b has no %q: %v", k, bb)
		}
	}
	if _, err := time.Parse(time.RFC3339Nano, bb["since"].(string)); err != nil {
		t.Fatalf("since: %v", err)
	}
	if req := got.Backends[0]["requests"].(map[string]any); req["2xx"] != float64(2) {
		t.Fatalf("a requests: %v", req)
	}
	trs := bb["transitions"].([]any)
	tr := trs[len(trs)-1].(map[string]any)
	if tr["from"] != "healthy" || tr["to"] != "draining" || tr["reason"] != "health 503" {
		t.Fatalf("transition: %v", tr)
	}

	code, body, _ = get(t, c, admin+"/admin/settings")
	var set map[string]any
	if err := json.Unmarshal([]byte(body), &set); code != 200 || err != nil {
		t.Fatalf("/admin/settings: %d %v", code, err)
	}
	want := map[string]any{"health_path": "/health", "interval": "500ms", "timeout": "400ms", "unhealthy_threshold": float64(2),
		"healthy_threshold": float64(2), "idle_timeout": "4s", "connect_timeout": "1s", "header_timeout": "3s", "max_header_bytes": float64(65536), "listen": l.Addr()}
	for k, v := range want {
		if set[k] != v {
			t.Errorf("settings %s = %v, want %v", k, set[k], v)
		}
	}
	if code, body, _ := get(t, c, admin+"/admin/health"); code != 200 || body != "ok" {
		t.Fatalf("/admin/health: %d %q", code, body)
	}
	// The transition is counted just after the state changed (the checker records it, then
	// changed counts it): wait for its count rather than race it.
	drained := `zero502_lb_health_transitions_total{backend="` + b.addr() + `",from="healthy",to="draining"} 1`
	poll.Until(t, 5*time.Second, "b's transition counted", func() bool {
		code, body, _ = get(t, c, admin+"/metrics")
		return code == 200 && strings.Contains(body, drained)
	})
	for _, m := range []string{`zero502_lb_requests_total{backend="` + a.addr() + `",class="2xx"} 2`,
		"zero502_lb_upstream_connect_seconds_bucket", "zero502_lb_upstream_header_seconds_bucket",
		"zero502_lb_retries_total 0", "zero502_lb_resent_after_eject_total 0", "zero502_lb_passive_ejections_total 0"} {
		if !strings.Contains(body, m) {
			t.Errorf("/metrics lacks %q", m)
		}
	}
	code, body, _ = get(t, c, admin+"/")
	if code != 200 || !strings.Contains(body, "<table>") || !strings.Contains(body, b.addr()) || !strings.Contains(body, "draining") {
		t.Fatalf("status page: %d %.200s", code, body)
	}
}

func TestAdminOffLoopbackNeedsToken(t *testing.T) {
	set := fastSettings("127.0.0.1:1")
	set.Admin = "0.0.0.0:18081"
	if _, err := New(set); err == nil || !strings.Contains(err.Error(), "--admin") {
		t.Fatalf("non-loopback admin without a token must be refused naming the flag: %v", err)
	}
	set.AdminToken = "s3cret"
	if _, err := New(set); err != nil {
		t.Fatalf("with a token: %v", err)
	}
	h := adminapi.RequireBearer("s3cret", "zero502 lb admin", "balancer.admin_token", http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { io.WriteString(w, "ok") }))
	for _, tc := range []struct {
		auth string
		want int
	}{
		{"", 401}, {"Bearer wrong", 401}, {"s3cret", 401}, {"Bearer s3cret", 200},
		// RFC 7235: the scheme is case-insensitive, the token is not
		{"bearer s3cret", 200}, {"BEARER s3cret", 200}, {"BeArEr s3cret", 200}, {"bearer S3CRET", 401},
		{"Bearer", 401}, {"Bearer ", 401}, {"Bearers3cret", 401}, {"Basic s3cret", 401}, {"Bearer s3cret2", 401},
	} {
		rec := httptest.NewRecorder()
		req := httptest.NewRequest("GET", "/admin/settings", nil)
		if tc.auth != "" {
			req.Header.Set("Authorization", tc.auth)
		}
		h.ServeHTTP(rec, req)
		if rec.Code != tc.want {
			t.Errorf("Authorization %q: %d, want %d", tc.auth, rec.Code, tc.want)
		}
	}
}

func TestInvalidSettingsAreRefusedNamingTheFlag(t *testing.T) {
	for _, tc := range []struct {
		name  string
		edit  func(*Settings)
		wants string
	}{
		{"timeout not below interval", func(s *Settings) { s.Timeout = s.Interval }, "--health-timeout"},
		{"zero interval", func(s *Settings) { s.Interval = 0 }, "--health-interval"},
		{"threshold 0", func(s *Settings) { s.UnhealthyThreshold = 0 }, "--unhealthy-threshold"},
		{"tiny header limit", func(s *Settings) { s.MaxHeaderBytes = 10 }, "--max-header-bytes"},
		{"bad backend", func(s *Settings) { s.Backends = []string{"nope"} }, `backend "nope"`},
		{"no backends", func(s *Settings) { s.Backends = nil }, "no backends"},
		{"health path", func(s *Settings) { s.HealthPath = "health" }, "--health-path"},
		{"negative drain", func(s *Settings) { s.Drain = -time.Second }, "--drain"},
		{"negative loops", func(s *Settings) { s.Loops = -1 }, "--loops -1"},
		{"no connections", func(s *Settings) { s.MaxConns = 0 }, "--max-conns 0: must be at least 1"},
		{"no slow bodies", func(s *Settings) { s.MaxSlowBodiesPerIP = 0 }, "--max-slow-bodies-per-ip 0: must be at least 1"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s := LabSettings("127.0.0.1:0", []string{"127.0.0.1:9001"})
			tc.edit(&s)
			if err := s.Validate(); err == nil || !strings.Contains(err.Error(), tc.wants) {
				t.Fatalf("got %v, want an error naming %s", err, tc.wants)
			}
		})
	}
	if err := LabSettings("127.0.0.1:8080", []string{"127.0.0.1:9001"}).Validate(); err != nil {
		t.Fatalf("lab defaults must be valid: %v", err)
	}
}

// A drain after a hand-off to an upgraded process (WithHandoff) keeps the LB's own health at 200:
// the successor shares the listening socket and serves the address, so a health check that lands
// on this process must not take the address out. It still drains what it serves: responses carry
// Connection: close, and it stops accepting after the window. Its admin listener closes at once.
func TestADrainAfterAHandOffKeepsItsHealthUp(t *testing.T) {
	a := startBackend(t, "a")
	set := fastSettings(a.addr())
	set.Drain = 5 * time.Second // outlasts the checks below on a loaded machine
	set.Shutdown = 2 * time.Second
	l := startLB(t, set, WithHandoff(func() bool { return true }))
	// Two keep-alive connections, used before the hand-off: this process serves them on.
	work, health := dialLB(t, l.Addr(), 20*time.Second), dialLB(t, l.Addr(), 20*time.Second)
	works, healths := bufio.NewReader(work), bufio.NewReader(health)
	ask := func(c net.Conn, r *bufio.Reader, path string) *http.Response {
		t.Helper()
		if _, err := io.WriteString(c, "GET "+path+" HTTP/1.1\r\nHost: x\r\n\r\n"); err != nil {
			t.Fatalf("GET %s: %v", path, err)
		}
		resp, err := http.ReadResponse(r, nil)
		if err != nil {
			t.Fatalf("GET %s: %v", path, err)
		}
		_, _ = io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
		return resp
	}
	ask(work, works, "/")
	ask(health, healths, "/_lb/health")
	stopped := make(chan struct{})
	go func() { l.stop(); close(stopped) }()
	poll.Until(t, 5*time.Second, "the drain window: a response carries Connection: close", func() bool {
		return ask(work, works, "/").Close
	})
	if resp := ask(health, healths, "/_lb/health"); resp.StatusCode != 200 {
		t.Errorf("own health during the drain after a hand-off: %d, want 200", resp.StatusCode)
	}
	// It accepts no new connection: the successor shares the socket and takes every one, so what
	// this process has is served for a whole window before its idle connections are closed.
	if c, err := net.DialTimeout("tcp", l.Addr(), time.Second); err == nil {
		_ = c.SetDeadline(time.Now().Add(5 * time.Second))
		_, _ = io.WriteString(c, "GET / HTTP/1.1\r\nHost: x\r\n\r\n")
		if resp, err := http.ReadResponse(bufio.NewReader(c), nil); err == nil {
			t.Errorf("a connection made during the drain after a hand-off was served (%d): this process must not accept it", resp.StatusCode)
		}
		c.Close()
	}
	// Its admin listener is closed at once: the successor shares that socket too and answers
	// every admin request (a change made here would be gone when this process exits).
	if resp, err := http.Get("http://" + l.AdminAddr() + "/admin/health"); err == nil {
		resp.Body.Close()
		t.Errorf("/admin/health during the drain after a hand-off: %d from this process, want its admin listener closed (the successor answers)", resp.StatusCode)
	}
	select {
	case <-stopped:
	case <-time.After(15 * time.Second):
		t.Fatal("Run did not return")
	}
}

// A keep-alive connection the goroutine path served (a chunked upload) and then parked in an
// event loop was used: once the drain stops accepting it is closed at once with the other idle
// ones, as on the goroutines engine, not given the grace of a connection accepted and not used
// yet (freshGrace), in which a new request on it would still be served.
func TestAParkedConnectionIsClosedWithTheIdleOnesAtTheDrain(t *testing.T) {
	a := startBackend(t, "a")
	set := fastSettings(a.addr())
	set.Loops = 1 // one loop wakes to the drain for both connections at once
	l := startLB(t, set)
	plain, handed := dialLB(t, l.Addr(), 20*time.Second), dialLB(t, l.Addr(), 20*time.Second)
	plainR, handedR := bufio.NewReader(plain), bufio.NewReader(handed)
	_, _ = io.WriteString(plain, "GET / HTTP/1.1\r\nHost: x\r\n\r\n")
	if got := readResponses(t, plainR, 1, "GET"); got[0] != "200 a" {
		t.Fatalf("GET: %q", got)
	}
	_, _ = io.WriteString(handed, "POST /upload HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\n\r\n5\r\nhello\r\n0\r\n\r\n")
	if got := readResponses(t, handedR, 1, "POST"); !strings.HasPrefix(got[0], "200 5 ") {
		t.Fatalf("chunked POST: %q", got)
	}
	poll.Until(t, 5*time.Second, "both connections idle without a read buffer", func() bool { return parked(l.Server) == 2 })
	stopped := make(chan struct{})
	go func() { l.stop(); close(stopped) }()
	if _, err := plainR.ReadByte(); err != io.EOF {
		t.Fatalf("the idle connection at the drain: %v, want EOF", err)
	}
	_, _ = io.WriteString(handed, "GET / HTTP/1.1\r\nHost: x\r\n\r\n")
	if resp, err := http.ReadResponse(handedR, nil); err == nil {
		t.Errorf("a request on the parked connection after the drain closed the idle ones was served (%d), want the connection closed", resp.StatusCode)
	}
	select {
	case <-stopped:
	case <-time.After(15 * time.Second):
		t.Fatal("Run did not return")
	}
}
