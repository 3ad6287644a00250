package lb

import (
	"encoding/json"
	"io"
	"log/slog"
	"net"
	"net/http"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/zero502/zero502/infra/adminapi"
	"github.com/zero502/zero502/internal/testrig/poll"
	"github.com/zero502/zero502/internal/testrig/syncbuffer"
	"github.com/zero502/zero502/internal/testrig/tcpserver"
)

// adminCall sends one admin request (with a bearer token when token is not empty) and returns
// the status and body.
func adminCall(t *testing.T, admin, method, path, token string) (int, string) {
	t.Helper()
	req, err := http.NewRequest(method, "http://"+admin+path, nil)
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set(adminapi.ClientHeader, "1")
	if token != "" {
		req.Header.Set("Authorization", "Bearer "+token)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatalf("%s %s: %v", method, path, err)
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, string(body)
}

// adminStatus decodes a BackendStatus answer.
func adminStatus(t *testing.T, body string) BackendStatus {
	t.Helper()
	var st BackendStatus
	if err := json.Unmarshal([]byte(body), &st); err != nil {
		t.Fatalf("not a BackendStatus: %v: %s", err, body)
	}
	return st
}

// statusOf is addr's entry in GET /admin/backends, and whether it is listed. GET
// /admin/backends/{addr} must say the same: its entry (address, admin drain and weight; state
// and rotation may have moved between the two calls, so they are compared once they settle)
// when listed, 404 when not.
func statusOf(t *testing.T, admin, addr string) (BackendStatus, bool) {
	t.Helper()
	code, body := adminCall(t, admin, "GET", "/admin/backends", "")
	if code != 200 {
		t.Fatalf("GET /admin/backends: %d %s", code, body)
	}
	var doc struct{ Backends []BackendStatus }
	if err := json.Unmarshal([]byte(body), &doc); err != nil {
		t.Fatalf("GET /admin/backends: %v: %s", err, body)
	}
	code, one := adminCall(t, admin, "GET", "/admin/backends/"+addr, "")
	for _, st := range doc.Backends {
		if st.Address == addr {
			if code != 200 {
				t.Fatalf("GET /admin/backends/%s: %d %s, but the list has it", addr, code, one)
			}
			if got := adminStatus(t, one); got.Address != addr || got.AdminDrained != st.AdminDrained || got.Weight != st.Weight {
				t.Errorf("GET /admin/backends/%s: %+v; the list says %+v", addr, got, st)
			}
			return st, true
		}
	}
	if code != 404 {
		t.Errorf("GET /admin/backends/%s of an unlisted backend: %d %s, want 404", addr, code, one)
	}
	return BackendStatus{}, false
}

func TestAdminWriteEndpoints(t *testing.T) {
	a, b := startBackend(t, "a"), startBackend(t, "b")
	var logs syncbuffer.Buffer
	l := startLB(t, fastSettings(a.addr()), WithLogger(slog.New(slog.NewTextHandler(&logs, nil))))
	admin := l.AdminAddr()

	for _, bad := range []string{"no-port", "127.0.0.1:http", "127.0.0.1:0"} {
		code, body := adminCall(t, admin, "PUT", "/admin/backends/"+bad, "")
		if code != 400 || !strings.Contains(body, bad) || !strings.Contains(body, "port") {
			t.Errorf("PUT %s: %d %q, want 400 naming the value and the host:port rule", bad, code, body)
		}
	}

	code, body := adminCall(t, admin, "PUT", "/admin/backends/"+b.addr(), "")
	st := adminStatus(t, body)
	if code != 201 || st.State != Joining || st.InRotation || st.Address != b.addr() {
		t.Fatalf("PUT new backend: %d %+v, want 201 joining, not in rotation", code, st)
	}
	poll.Until(t, 5*time.Second, "the added backend in rotation", func() bool {
		st, ok := statusOf(t, admin, b.addr())
		return ok && st.InRotation && st.State == Healthy
	})
	if code, body := adminCall(t, admin, "PUT", "/admin/backends/"+b.addr(), ""); code != 200 || adminStatus(t, body).State != Healthy {
		t.Errorf("PUT a healthy backend again: %d %s, want 200 and no change", code, body)
	}
	c := client()
	seen := map[string]int{}
	for i := 0; i < 4; i++ {
		_, name, _ := get(t, c, l.url("/"))
		seen[name]++
	}
	if seen["a"] != 2 || seen["b"] != 2 {
		t.Errorf("round robin over the configured and the added backend: %v, want 2 each", seen)
	}

	if code, body := adminCall(t, admin, "DELETE", "/admin/backends/"+b.addr(), ""); code != 409 || !strings.Contains(body, "drain it first") {
		t.Errorf("DELETE a backend in rotation: %d %q, want 409 saying to drain it first", code, body)
	}
	if code, _ := adminCall(t, admin, "GET", "/admin/backends/"+b.addr()+"/drain", ""); code != 405 {
		t.Errorf("GET .../drain: %d, want 405 (GET never changes state)", code)
	}
	code, body = adminCall(t, admin, "POST", "/admin/backends/"+b.addr()+"/drain", "")
	st = adminStatus(t, body)
	if code != 200 || st.State != Draining || st.InRotation || !st.AdminDrained {
		t.Fatalf("POST drain: %d %+v, want 200 draining, admin_drained, not in rotation", code, st)
	}
	if last := st.Transitions[len(st.Transitions)-1]; last.From != Healthy || last.To != Draining || last.Reason != "admin" {
		t.Errorf("drain transition %+v, want healthy → draining, reason admin", last)
	}
	// Health checks keep passing; the backend stays drained.
	checked := st.LastCheck
	poll.Until(t, 5*time.Second, "three more health checks", func() bool {
		st, _ := statusOf(t, admin, b.addr())
		if st.State != Draining || st.InRotation {
			t.Fatalf("admin-drained backend left draining after a good check: %+v", st)
		}
		return st.LastCheck.After(checked.Add(2 * fastSettings().Interval))
	})
	for i := 0; i < 4; i++ {
		if _, name, _ := get(t, c, l.url("/")); name != "a" {
			t.Fatalf("request %d after the drain went to %s", i, name)
		}
	}

	// PUT undrains: it joins, and is back only after healthy_threshold checks from now on (the
	// checks of before may have been answered by a process that is gone).
	code, body = adminCall(t, admin, "PUT", "/admin/backends/"+b.addr(), "")
	if st := adminStatus(t, body); code != 200 || st.State != Joining || st.InRotation || st.AdminDrained || st.ConsecutiveSuccesses != 0 {
		t.Fatalf("PUT undrain: %d %+v, want 200 joining, out of rotation, no success counted yet", code, st)
	}
	poll.Until(t, 5*time.Second, "the undrained backend back in rotation after fresh checks", func() bool {
		st, _ := statusOf(t, admin, b.addr())
		return st.State == Healthy && st.InRotation
	})
	adminCall(t, admin, "POST", "/admin/backends/"+b.addr()+"/drain", "")
	if code, body := adminCall(t, admin, "DELETE", "/admin/backends/"+b.addr(), ""); code != 204 {
		t.Fatalf("DELETE a drained backend: %d %s, want 204", code, body)
	}
	if _, ok := statusOf(t, admin, b.addr()); ok {
		t.Errorf("GET /admin/backends still lists the removed backend")
	}
	if code, _ := adminCall(t, admin, "DELETE", "/admin/backends/"+b.addr(), ""); code != 404 {
		t.Errorf("DELETE an unknown backend: %d, want 404", code)
	}
	if code, _ := adminCall(t, admin, "POST", "/admin/backends/"+b.addr()+"/drain", ""); code != 404 {
		t.Errorf("drain an unknown backend: %d, want 404", code)
	}

	_, metrics := adminCall(t, admin, "GET", "/metrics", "")
	for _, want := range []string{
		`zero502_lb_admin_changes_total{action="add"} 1`, `zero502_lb_admin_changes_total{action="drain"} 2`,
		`zero502_lb_admin_changes_total{action="undrain"} 1`, `zero502_lb_admin_changes_total{action="remove"} 1`,
	} {
		if !strings.Contains(metrics, want) {
			t.Errorf("/metrics lacks %s", want)
		}
	}
	for _, want := range []string{
		"backend=" + b.addr() + " from=\"\" to=joining reason=admin",
		"backend=" + b.addr() + " from=healthy to=draining reason=admin",
		"backend=" + b.addr() + " from=draining to=joining reason=admin",
		"backend=" + b.addr() + " from=draining to=removed reason=admin",
	} {
		if !strings.Contains(logs.String(), want) {
			t.Errorf("the log lacks %q:\n%s", want, logs.String())
		}
	}
	if strings.Contains(metrics, `backend="`+b.addr()+`"`) {
		t.Errorf("/metrics still has series of the removed backend %s", b.addr())
	}
}

func TestAdminWritesNeedTheTokenOffLoopback(t *testing.T) {
	a, b := startBackend(t, "a"), startBackend(t, "b")
	set := fastSettings(a.addr())
	set.Admin, set.AdminToken = "0.0.0.0:0", "s3cret"
	l := startLB(t, set)
	_, port, _ := net.SplitHostPort(l.AdminAddr())
	admin := net.JoinHostPort("127.0.0.1", port)
	for _, w := range []struct{ method, path string }{
		{"PUT", "/admin/backends/" + b.addr()},
		{"POST", "/admin/backends/" + a.addr() + "/drain"},
		{"DELETE", "/admin/backends/" + a.addr()},
	} {
		if code, _ := adminCall(t, admin, w.method, w.path, ""); code != 401 {
			t.Errorf("%s %s without the token: %d, want 401", w.method, w.path, code)
		}
		if code, _ := adminCall(t, admin, w.method, w.path, "wrong"); code != 401 {
			t.Errorf("%s %s with a wrong token: %d, want 401", w.method, w.path, code)
		}
	}
	if n := len(l.Backends()); n != 1 || l.Backends()[0].State() != Healthy {
		t.Fatalf("refused writes changed the set: %d backends, first %s", n, l.Backends()[0].State())
	}
	if code, body := adminCall(t, admin, "PUT", "/admin/backends/"+b.addr(), "s3cret"); code != 201 {
		t.Errorf("PUT with the token: %d %s, want 201", code, body)
	}
	if code, body := adminCall(t, admin, "POST", "/admin/backends/"+a.addr()+"/drain", "s3cret"); code != 200 {
		t.Errorf("drain with the token: %d %s, want 200", code, body)
	}
	if code, body := adminCall(t, admin, "DELETE", "/admin/backends/"+a.addr(), "s3cret"); code != 204 {
		t.Errorf("DELETE with the token: %d %s, want 204", code, body)
	}
}

func TestAddedBackendGetsNoRequestBeforeItsChecksPass(t *testing.T) {
	a := startBackend(t, "a")
	set := fastSettings(a.addr())
	set.HealthyThreshold = 3
	l := startLB(t, set)
	addr := tcpserver.FreeAddr(t) // down when added
	if code, body := adminCall(t, l.AdminAddr(), "PUT", "/admin/backends/"+addr, ""); code != 201 {
		t.Fatalf("PUT: %d %s", code, body)
	}
	c := client()
	poll.Until(t, 5*time.Second, "three failed checks of the added backend", func() bool {
		get(t, c, l.url("/")) // every request goes to a meanwhile (a failure would be fatal in get)
		st, _ := statusOf(t, l.AdminAddr(), addr)
		return st.ConsecutiveFailures >= 3
	})
	if st, _ := statusOf(t, l.AdminAddr(), addr); st.State != Joining || st.InRotation || st.InFlight != 0 {
		t.Fatalf("a down backend after failed checks: %+v, want joining, out of rotation", st)
	}

	// Now it comes up; every request it gets must find it already in rotation.
	var early, served, checks atomic.Int64
	var lb *Backend
	for _, b := range l.Backends() {
		if b.Address == addr {
			lb = b
		}
	}
	mux := http.NewServeMux()
	mux.HandleFunc("/health", func(w http.ResponseWriter, r *http.Request) { checks.Add(1) })
	mux.HandleFunc("/", func(w http.ResponseWriter, r *http.Request) {
		served.Add(1)
		if lb.State() != Healthy {
			early.Add(1)
		}
		_, _ = io.WriteString(w, "new")
	})
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		t.Fatalf("listen on the reserved address %s: %v", addr, err)
	}
	srv := &http.Server{Handler: mux}
	go func() { _ = srv.Serve(ln) }()
	t.Cleanup(func() { _ = srv.Close() })

	poll.Until(t, 5*time.Second, "the new backend serves traffic", func() bool {
		get(t, c, l.url("/"))
		return served.Load() > 0
	})
	if early.Load() != 0 {
		t.Fatalf("%d requests reached the new backend before it entered rotation", early.Load())
	}
	if n := checks.Load(); n < int64(set.HealthyThreshold) {
		t.Fatalf("in rotation after %d good checks, want at least healthy_threshold %d", n, set.HealthyThreshold)
	}
	st, _ := statusOf(t, l.AdminAddr(), addr)
	last := st.Transitions[len(st.Transitions)-1]
	if last.From != Joining || last.To != Healthy || !strings.HasPrefix(last.Reason, "3 consecutive") {
		t.Errorf("transition %+v, want joining → healthy after 3 consecutive health 200", last)
	}
}
