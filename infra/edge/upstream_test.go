package edge

import (
	"bufio"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/pires/go-proxyproto"

	"github.com/zero502/zero502/infra/adminapi"
	"github.com/zero502/zero502/internal/testrig/poll"
)

// upstreamServer is a stand-in LB instance on a real socket: it reads the edge's PROXY header,
// answers an HTTP GET (the edge's check) with its health status, and echoes any other line
// prefixed with its name, so a client sees which upstream it reached.
type upstreamServer struct {
	name string
	addr string

	mu     sync.Mutex
	ln     net.Listener
	served chan struct{} // closed when the accept loop of ln has returned
	conns  map[net.Conn]bool
	health int // status of the HTTP check

	checks atomic.Int64 // HTTP checks answered
	locals atomic.Int64 // PROXY headers of command LOCAL (the checks')
}

// looseChecks are fast checks that still hold on a loaded test machine: one slow answer does
// not take a healthy upstream out.
var looseChecks = UpstreamCheck{Interval: 150 * time.Millisecond, Timeout: 120 * time.Millisecond, HealthyThreshold: 2, UnhealthyThreshold: 3}

func withPath(c UpstreamCheck, path string) UpstreamCheck {
	c.Path = path
	return c
}

func startUpstream(t *testing.T, name string) *upstreamServer {
	t.Helper()
	u := &upstreamServer{name: name, health: 200, conns: map[net.Conn]bool{}}
	u.listen(t, "127.0.0.1:0")
	t.Cleanup(u.kill)
	return u
}

func (u *upstreamServer) listen(t *testing.T, addr string) {
	t.Helper()
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	served := make(chan struct{})
	u.mu.Lock()
	u.ln, u.addr, u.served = ln, ln.Addr().String(), served
	u.mu.Unlock()
	go func() {
		defer close(served)
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			u.mu.Lock()
			u.conns[c] = true
			u.mu.Unlock()
			go u.serve(c)
		}
	}()
}

// kill closes the listener and every open connection: the instance is gone.
func (u *upstreamServer) kill() {
	u.mu.Lock()
	defer u.mu.Unlock()
	if u.ln != nil {
		_ = u.ln.Close()
		u.ln = nil
	}
	for c := range u.conns {
		_ = c.Close()
	}
}

func (u *upstreamServer) setHealth(code int) {
	u.mu.Lock()
	defer u.mu.Unlock()
	u.health = code
}

func (u *upstreamServer) serve(c net.Conn) {
	defer func() {
		u.mu.Lock()
		delete(u.conns, c)
		u.mu.Unlock()
		_ = c.Close()
	}()
	br := bufio.NewReader(c)
	h, err := proxyproto.Read(br)
	if err != nil {
		return // a TCP check: connect and close
	}
	if h.Command == proxyproto.LOCAL {
		u.locals.Add(1)
	}
	for {
		line, err := br.ReadString('\n')
		if err != nil {
			return
		}
		if strings.HasPrefix(line, "GET ") {
			for l, err := br.ReadString('\n'); err == nil && l != "\r\n"; l, err = br.ReadString('\n') {
			}
			u.mu.Lock()
			code := u.health
			u.mu.Unlock()
			u.checks.Add(1)
			fmt.Fprintf(c, "HTTP/1.1 %d %s\r\nContent-Length: 0\r\nConnection: close\r\n\r\n", code, http.StatusText(code))
			return
		}
		if _, err := io.WriteString(c, u.name+":"+line); err != nil {
			return
		}
	}
}

// through sends one line through the edge on a new connection and returns which upstream
// answered; "" when the connection failed.
func through(t *testing.T, edgeAddr string) string {
	t.Helper()
	c, err := net.DialTimeout("tcp", edgeAddr, deadline)
	if err != nil {
		return ""
	}
	defer c.Close()
	_ = c.SetDeadline(time.Now().Add(deadline))
	if _, err := io.WriteString(c, "hello\n"); err != nil {
		return ""
	}
	line, err := bufio.NewReader(c).ReadString('\n')
	if err != nil {
		return ""
	}
	name, _, _ := strings.Cut(line, ":")
	return name
}

func upstreamState(f *Forwarder, addr string) adminapi.BackendStatus {
	for _, st := range f.Upstreams() {
		if st.Address == addr {
			return st
		}
	}
	return adminapi.BackendStatus{}
}

func TestConnectRefusedFailsOverAtOnceAndEjects(t *testing.T) {
	a, b := startUpstream(t, "a"), startUpstream(t, "b")
	fwd := startForwarder(t, &Forwarder{Origins: []string{a.addr, b.addr}}) // checks every hour: only passive
	a.kill()
	for i := 0; i < 20; i++ {
		if got := through(t, fwd.Addr().String()); got != "b" {
			t.Fatalf("connection %d: answered by %q, want b (a is dead, the dial must fail over)", i, got)
		}
	}
	st := upstreamState(fwd, a.addr)
	if st.State != adminapi.Unhealthy || st.InRotation || len(st.Transitions) == 0 ||
		!strings.HasPrefix(st.Transitions[len(st.Transitions)-1].Reason, "passive: ") {
		t.Fatalf("a after a refused connect: %+v", st)
	}
	if n := fwd.Counts().Unreachable; n != 0 {
		t.Fatalf("%d client connections failed", n)
	}
}

func TestKilledUpstreamLeavesByChecksAndReturns(t *testing.T) {
	a, b := startUpstream(t, "a"), startUpstream(t, "b")
	fwd := startForwarder(t, &Forwarder{Origins: []string{a.addr, b.addr},
		Check: looseChecks})
	seen := map[string]int{}
	for i := 0; i < 10; i++ {
		seen[through(t, fwd.Addr().String())]++
	}
	if seen["a"] == 0 || seen["b"] == 0 {
		t.Fatalf("both upstreams in rotation, but the answers were %v", seen)
	}
	a.kill()
	poll.Until(t, deadline, "the checks to take a out", func() bool { return upstreamState(fwd, a.addr).State == adminapi.Unhealthy })
	if r := upstreamState(fwd, a.addr).Transitions; !strings.Contains(r[len(r)-1].Reason, "consecutive failed checks") {
		t.Fatalf("a left by %q, want the active checks", r[len(r)-1].Reason)
	}
	for i := 0; i < 20; i++ {
		if got := through(t, fwd.Addr().String()); got != "b" {
			t.Fatalf("connection %d after detection: answered by %q, want b", i, got)
		}
	}
	a.listen(t, a.addr) // a new instance on the same address
	poll.Until(t, deadline, "a back in rotation", func() bool { return upstreamState(fwd, a.addr).InRotation })
	if n := fwd.Counts().Unreachable; n != 0 {
		t.Fatalf("%d client connections failed", n)
	}
}

func TestHTTPCheck503DrainsTheUpstream(t *testing.T) {
	a, b := startUpstream(t, "a"), startUpstream(t, "b")
	fwd := startForwarder(t, &Forwarder{Origins: []string{a.addr, b.addr},
		Check: withPath(looseChecks, "/_lb/health")})
	if a.checks.Load() == 0 || a.locals.Load() != a.checks.Load() {
		t.Fatalf("a answered %d checks, %d of them behind a PROXY LOCAL header; want every check behind one", a.checks.Load(), a.locals.Load())
	}
	a.setHealth(http.StatusServiceUnavailable)
	poll.Until(t, deadline, "a to leave rotation on its 503", func() bool { return upstreamState(fwd, a.addr).State == adminapi.Draining })
	for i := 0; i < 20; i++ {
		if got := through(t, fwd.Addr().String()); got != "b" {
			t.Fatalf("connection %d: answered by %q while a drains, want b", i, got)
		}
	}
	a.setHealth(http.StatusOK)
	poll.Until(t, deadline, "a back after two 200", func() bool { return upstreamState(fwd, a.addr).InRotation })
}

func TestHealthRefusesWhileNoUpstreamIsInRotation(t *testing.T) {
	a, b := startUpstream(t, "a"), startUpstream(t, "b")
	fwd := startForwarder(t, &Forwarder{Origins: []string{a.addr, b.addr}, Health: "127.0.0.1:0",
		Check: looseChecks})
	health := fwd.HealthAddr().String()
	if refused(health) {
		t.Fatal("health refuses with both upstreams in rotation")
	}
	a.kill()
	poll.Until(t, deadline, "a out", func() bool { return !upstreamState(fwd, a.addr).InRotation })
	if refused(health) {
		t.Fatal("health refuses with b still in rotation")
	}
	b.kill()
	poll.Until(t, deadline, "health to refuse with no upstream in rotation", func() bool { return refused(health) })
	if fwd.Healthy() {
		t.Fatal("Healthy with no upstream in rotation")
	}
	b.listen(t, b.addr)
	poll.Until(t, deadline, "health to accept again once b is back", func() bool { return !refused(health) })
}

// admin sends one admin API request and returns the status and the body.
func admin(t *testing.T, f *Forwarder, method, path string) (int, string) {
	t.Helper()
	req, err := http.NewRequest(method, "http://"+f.AdminAddr().String()+path, nil)
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set(adminapi.ClientHeader, "1")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, string(body)
}

func TestAdminAPIDrainsKeepingOpenConnectionsAddsAndRemoves(t *testing.T) {
	a, b := startUpstream(t, "a"), startUpstream(t, "b")
	fwd := startForwarder(t, &Forwarder{Origins: []string{a.addr, b.addr}, Admin: "127.0.0.1:0",
		Check: looseChecks})

	// One long-lived connection; find where it went.
	held, err := net.Dial("tcp", fwd.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	defer held.Close()
	heldR := bufio.NewReader(held)
	echo := func() string {
		_ = held.SetDeadline(time.Now().Add(deadline))
		if _, err := io.WriteString(held, "ping\n"); err != nil {
			return ""
		}
		line, _ := heldR.ReadString('\n')
		name, _, _ := strings.Cut(line, ":")
		return name
	}
	on := echo()
	target, other := a, b
	if on == "b" {
		target, other = b, a
	}

	code, body := admin(t, fwd, "DELETE", "/admin/upstreams/"+target.addr)
	if code != http.StatusConflict || !strings.Contains(body, "drain it first") {
		t.Fatalf("DELETE in rotation: %d %s, want 409 saying to drain first", code, body)
	}
	code, body = admin(t, fwd, "POST", "/admin/upstreams/"+target.addr+"/drain")
	var st adminapi.BackendStatus
	if err := json.Unmarshal([]byte(body), &st); code != http.StatusOK || err != nil ||
		st.State != adminapi.Draining || st.InRotation || !st.AdminDrained || st.InFlight != 1 {
		t.Fatalf("drain: %d %s (%v), want 200, draining, admin_drained, in_flight 1", code, body, err)
	}
	for i := 0; i < 10; i++ {
		if got := through(t, fwd.Addr().String()); got != other.name {
			t.Fatalf("new connection %d after the drain went to %q", i, got)
		}
	}
	poll.Until(t, deadline, "three good checks of the drained upstream", func() bool {
		return upstreamState(fwd, target.addr).ConsecutiveSuccesses >= 3
	})
	if got := echo(); got != on {
		t.Fatalf("the open connection broke by the drain: answered %q, want %q", got, on)
	}
	if upstreamState(fwd, target.addr).InRotation {
		t.Fatal("checks brought an admin-drained upstream back")
	}
	code, _ = admin(t, fwd, "DELETE", "/admin/upstreams/"+target.addr)
	if code != http.StatusNoContent {
		t.Fatalf("DELETE drained: %d, want 204", code)
	}
	if got := echo(); got != on {
		t.Fatal("the open connection broke when its upstream was removed")
	}
	code, body = admin(t, fwd, "GET", "/admin/upstreams")
	var list struct {
		Upstreams []adminapi.BackendStatus `json:"upstreams"`
	}
	if err := json.Unmarshal([]byte(body), &list); code != 200 || err != nil || len(list.Upstreams) != 1 || list.Upstreams[0].Address != other.addr {
		t.Fatalf("GET /admin/upstreams after the removal: %d %s", code, body)
	}
	if code, _ := admin(t, fwd, "GET", "/admin/upstreams/"+target.addr); code != http.StatusNotFound {
		t.Fatalf("GET a removed upstream: %d, want 404", code)
	}
	if code, body := admin(t, fwd, "PUT", "/admin/upstreams/not-an-address"); code != http.StatusBadRequest || !strings.Contains(body, "host:port") {
		t.Fatalf("PUT a bad address: %d %s, want 400 naming the rule", code, body)
	}

	// Add it back: joining, then in rotation after the healthy threshold of checks.
	code, body = admin(t, fwd, "PUT", "/admin/upstreams/"+target.addr)
	if err := json.Unmarshal([]byte(body), &st); code != http.StatusCreated || err != nil || st.State != adminapi.Joining || st.InRotation {
		t.Fatalf("PUT: %d %s, want 201 joining", code, body)
	}
	poll.Until(t, deadline, "the added upstream in rotation", func() bool { return upstreamState(fwd, target.addr).InRotation })
	seen := map[string]bool{}
	for i := 0; i < 10; i++ {
		seen[through(t, fwd.Addr().String())] = true
	}
	if !seen[target.name] {
		t.Fatalf("the re-added upstream takes no connections: %v", seen)
	}
}

func TestAdminOffLoopbackNeedsAToken(t *testing.T) {
	f := &Forwarder{Listen: "127.0.0.1:0", Origins: []string{"127.0.0.1:9"}, Admin: "0.0.0.0:0"}
	if err := f.Validate(); err == nil || !strings.Contains(err.Error(), "--admin") || !strings.Contains(err.Error(), "token") {
		t.Fatalf("admin off loopback without a token: %v", err)
	}
	f.AdminToken = "s3cret"
	if err := f.Validate(); err != nil {
		t.Fatal(err)
	}
}

func TestUpstreamSettingsAreValidated(t *testing.T) {
	for _, tc := range []struct {
		name string
		f    *Forwarder
		want string
	}{
		{"no origin", &Forwarder{Listen: ":0"}, "--origin: at least one"},
		{"twice", &Forwarder{Listen: ":0", Origins: []string{"10.0.0.5:443", "10.0.0.5:443"}}, `--origin "10.0.0.5:443": given twice`},
		{"path", &Forwarder{Listen: ":0", Origins: []string{"10.0.0.5:443"}, Check: UpstreamCheck{Path: "health"}}, `--check-path "health": must start with /`},
		{"timeout", &Forwarder{Listen: ":0", Origins: []string{"10.0.0.5:443"}, Check: UpstreamCheck{Interval: time.Second, Timeout: time.Second}}, "--check-timeout 1s: must be below --check-interval 1s"},
		{"threshold", &Forwarder{Listen: ":0", Origins: []string{"10.0.0.5:443"}, Check: UpstreamCheck{UnhealthyThreshold: -1}}, "--unhealthy-threshold -1"},
		// past edge.upstream_check.*_threshold's bound (config.MaxThreshold), which the flags override
		{"threshold past the bound", &Forwarder{Listen: ":0", Origins: []string{"10.0.0.5:443"}, Check: UpstreamCheck{HealthyThreshold: 5000}}, "--healthy-threshold 5000: must be at most 1000"},
		{"unhealthy past the bound", &Forwarder{Listen: ":0", Origins: []string{"10.0.0.5:443"}, Check: UpstreamCheck{UnhealthyThreshold: 1001}}, "--unhealthy-threshold 1001: must be at most 1000"},
	} {
		if err := tc.f.Validate(); err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s: %v, want %q", tc.name, err, tc.want)
		}
	}
}

// With no upstream in rotation, the edge fails open as the LB does: it forwards to the upstreams
// that left by failed checks after they had served, never to one that drains (503).
func TestNoUpstreamInRotationFailsOpenToTheOnesThatLeftByChecks(t *testing.T) {
	a, b := startUpstream(t, "a"), startUpstream(t, "b")
	fwd := startForwarder(t, &Forwarder{Origins: []string{a.addr, b.addr}, Check: withPath(looseChecks, "/_lb/health")})
	b.setHealth(http.StatusServiceUnavailable)
	poll.Until(t, deadline, "b to drain on its 503", func() bool { return upstreamState(fwd, b.addr).State == adminapi.Draining })
	a.setHealth(http.StatusInternalServerError)
	poll.Until(t, deadline, "a out by failed checks", func() bool { return upstreamState(fwd, a.addr).State == adminapi.Unhealthy })
	for i := 0; i < 10; i++ {
		if got := through(t, fwd.Addr().String()); got != "a" {
			t.Fatalf("connection %d with no upstream in rotation: answered by %q, want a (fails open; b drains)", i, got)
		}
	}
}
