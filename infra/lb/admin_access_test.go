package lb

import (
	"io"
	"net"
	"net/http"
	"strings"
	"testing"
)

// adminAs sends one admin request with exactly the headers given (host overrides Host).
func adminAs(t *testing.T, admin, method, path, host string, hdr map[string]string) (int, string) {
	t.Helper()
	req, err := http.NewRequest(method, "http://"+admin+path, nil)
	if err != nil {
		t.Fatal(err)
	}
	if host != "" {
		req.Host = host
	}
	for k, v := range hdr {
		req.Header.Set(k, v)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatalf("%s %s: %v", method, path, err)
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, string(body)
}

// A token on a loopback admin is required: every write and every read but health and metrics
// is refused without it, and nothing changes; with it, writes work.
func TestAdminTokenOnLoopbackIsRequired(t *testing.T) {
	a, b := startBackend(t, "a"), startBackend(t, "b")
	set := fastSettings(a.addr())
	set.AdminToken = "s3cret" // set.Admin is 127.0.0.1:0
	l := startLB(t, set)
	admin := l.AdminAddr()
	if h, _, _ := net.SplitHostPort(admin); h != "127.0.0.1" {
		t.Fatalf("admin on %s, want loopback for this test", admin)
	}
	program := map[string]string{"X-Zero502-Admin": "1", "Content-Type": "application/json"}
	for _, w := range []struct{ method, path string }{
		{"PUT", "/admin/backends/" + b.addr()},
		{"POST", "/admin/backends/" + a.addr() + "/drain"},
		{"DELETE", "/admin/backends/" + a.addr()},
		{"PUT", "/admin/backends/" + a.addr() + "/weight"},
		{"GET", "/admin/backends"},
		{"GET", "/admin/settings"},
		{"GET", "/"},
	} {
		if code, body := adminAs(t, admin, w.method, w.path, "", program); code != http.StatusUnauthorized || !strings.Contains(body, "balancer.admin_token") {
			t.Errorf("%s %s on loopback without the token: %d %q, want 401 naming balancer.admin_token", w.method, w.path, code, body)
		}
	}
	if n := len(l.Backends()); n != 1 || l.Backends()[0].State() != Healthy {
		t.Fatalf("refused writes changed the set: %d backends, first %s", n, l.Backends()[0].State())
	}
	for _, open := range []string{"/admin/health", "/metrics"} {
		if code, _ := adminAs(t, admin, "GET", open, "", nil); code != 200 {
			t.Errorf("GET %s without the token: %d, want 200 (probes and scrapers)", open, code)
		}
	}
	withToken := map[string]string{"Authorization": "Bearer s3cret"}
	if code, body := adminAs(t, admin, "PUT", "/admin/backends/"+b.addr(), "", withToken); code != 201 {
		t.Errorf("PUT with the token: %d %s, want 201", code, body)
	}
	if code, _ := adminAs(t, admin, "GET", "/admin/backends", "", withToken); code != 200 {
		t.Errorf("GET /admin/backends with the token: %d, want 200", code)
	}
}

// With no token, a loopback admin refuses what a web page could send: any request whose Host
// names another site (DNS rebinding), and a write without a JSON content type or the client
// header (a form POST). A program's request passes.
func TestAdminWithoutTokenRefusesWhatABrowserCanSend(t *testing.T) {
	a, b := startBackend(t, "a"), startBackend(t, "b")
	l := startLB(t, fastSettings(a.addr()))
	admin := l.AdminAddr()
	program := map[string]string{"X-Zero502-Admin": "1"}
	for _, host := range []string{"evil.example", "evil.example:" + strings.Split(admin, ":")[1], "127.0.0.1.evil.example"} {
		for _, method := range []string{"GET", "PUT"} {
			code, body := adminAs(t, admin, method, "/admin/backends/"+b.addr(), host, program)
			if code != http.StatusForbidden || !strings.Contains(body, "does not name this admin listener") {
				t.Errorf("%s with Host %s: %d %q, want 403 naming the rule", method, host, code, body)
			}
		}
	}
	form := map[string]string{"Content-Type": "application/x-www-form-urlencoded"}
	for _, w := range []struct{ method, path string }{
		{"POST", "/admin/backends/" + a.addr() + "/drain"},
		{"PUT", "/admin/backends/" + b.addr()},
		{"DELETE", "/admin/backends/" + a.addr()},
	} {
		code, body := adminAs(t, admin, w.method, w.path, "", form)
		if code != http.StatusForbidden || !strings.Contains(body, "X-Zero502-Admin") {
			t.Errorf("%s %s as a form: %d %q, want 403 naming the header", w.method, w.path, code, body)
		}
	}
	if n := len(l.Backends()); n != 1 || l.Backends()[0].State() != Healthy {
		t.Fatalf("refused requests changed the set: %d backends, first %s", n, l.Backends()[0].State())
	}
	for _, host := range []string{"", "localhost:1", "[::1]:9"} {
		if code, _ := adminAs(t, admin, "GET", "/admin/backends", host, nil); code != 200 {
			t.Errorf("GET with Host %q: %d, want 200 (a loopback name)", host, code)
		}
	}
	if code, body := adminAs(t, admin, "POST", "/admin/backends/"+a.addr()+"/drain", "", map[string]string{"Content-Type": "application/json"}); code != 200 {
		t.Errorf("drain as JSON: %d %s, want 200", code, body)
	}
	if code, body := adminAs(t, admin, "PUT", "/admin/backends/"+b.addr(), "", program); code != 201 {
		t.Errorf("PUT with the client header: %d %s, want 201", code, body)
	}
}
