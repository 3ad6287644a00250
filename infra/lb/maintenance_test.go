package lb

import (
	"bufio"
	"encoding/json"
	"io"
	"net"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/zero502/zero502/infra/adminapi"
	"github.com/zero502/zero502/internal/testrig/poll"
)

// maintenanceCall sends one maintenance write or read with body (nil for none) and returns the
// status and the body of the answer.
func maintenanceCall(t *testing.T, admin, method, token string, body io.Reader) (int, string) {
	t.Helper()
	req, err := http.NewRequest(method, "http://"+admin+adminapi.MaintenancePath, body)
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set(adminapi.ClientHeader, "1")
	if token != "" {
		req.Header.Set("Authorization", "Bearer "+token)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatalf("%s %s: %v", method, adminapi.MaintenancePath, err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, string(b)
}

func maintenanceState(t *testing.T, body string) adminapi.Maintenance {
	t.Helper()
	var m adminapi.Maintenance
	if err := json.Unmarshal([]byte(body), &m); err != nil {
		t.Fatalf("not a maintenance state: %v: %s", err, body)
	}
	return m
}

// TestMaintenanceAnswersEveryRequestItselfUntilOff runs through the engine of this test run
// (the package's tests run through the event loops and again through the goroutine path: TestMain).
func TestMaintenanceAnswersEveryRequestItselfUntilOff(t *testing.T) {
	a := startBackend(t, "a")
	set := fastSettings(a.addr())
	set.AdminToken = "s3cret"
	l := startLB(t, set)
	admin := l.AdminAddr()
	c := client()
	if code, body, _ := get(t, c, l.url("/")); code != 200 || body != "a" {
		t.Fatalf("before maintenance: %d %q, want 200 from a", code, body)
	}

	on := adminapi.MaintenanceChange{Message: "Moving the database <b>now</b>.\nBack at 03:00.", RetryAfter: adminapi.Duration(90 * time.Second)}
	if code, _ := maintenanceCall(t, admin, "PUT", "", on.Body()); code != 401 {
		t.Errorf("PUT maintenance without the token: %d, want 401", code)
	}
	if code, _ := maintenanceCall(t, admin, "DELETE", "wrong", nil); code != 401 {
		t.Errorf("DELETE maintenance with a wrong token: %d, want 401", code)
	}
	for _, bad := range []struct{ body, names string }{
		{`{"message":"x","retry_after":"0s"}`, "retry_after 0s"},
		{`{"message":"x","retry_after":"1500ms"}`, "whole seconds"},
		{`{"message":"x\u0007","retry_after":"30s"}`, "control character"},
		{`{"message":"x","retry_after":"30s","colour":"red"}`, `unknown field "colour"`},
		{`{"message":"` + strings.Repeat("x", adminapi.MaxMaintenanceMessage+1) + `","retry_after":"30s"}`, "at most 1000"},
	} {
		code, body := maintenanceCall(t, admin, "PUT", "s3cret", strings.NewReader(bad.body))
		if code != 400 || !strings.Contains(body, bad.names) {
			t.Errorf("PUT maintenance %.60s: %d %q, want 400 naming %q", bad.body, code, body, bad.names)
		}
	}
	if l.Maintenance().On {
		t.Fatal("refused changes turned maintenance on")
	}

	code, body := maintenanceCall(t, admin, "PUT", "s3cret", on.Body())
	if m := maintenanceState(t, body); code != 200 || !m.On || m.Message != on.Message || m.RetryAfter != on.RetryAfter || m.Since.IsZero() {
		t.Fatalf("PUT maintenance: %d %s, want 200 and the state on", code, body)
	}
	hits := a.hits.Load()

	// a browser gets the page, HTML-escaped
	resp, err := c.Get(l.url("/orders/7"))
	if err != nil {
		t.Fatal(err)
	}
	page, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != 503 || resp.Header.Get("Retry-After") != "90" || resp.Header.Get("Cache-Control") != "no-store" ||
		!strings.HasPrefix(resp.Header.Get("Content-Type"), "text/html") ||
		!strings.Contains(string(page), "Moving the database &lt;b&gt;now&lt;/b&gt;.") || strings.Contains(string(page), "<b>now") {
		t.Errorf("GET in maintenance: %d %v %q, want 503, Retry-After 90, no-store and the escaped HTML page", resp.StatusCode, resp.Header, page)
	}
	// an API client gets JSON
	req, _ := http.NewRequest("GET", l.url("/api/orders"), nil)
	req.Header.Set("Accept", "application/json, text/plain")
	resp, err = c.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	var doc struct {
		Error      string `json:"error"`
		Message    string `json:"message"`
		RetryAfter int    `json:"retry_after_seconds"`
	}
	err = json.NewDecoder(resp.Body).Decode(&doc)
	resp.Body.Close()
	if err != nil || resp.StatusCode != 503 || resp.Header.Get("Content-Type") != "application/json" ||
		doc.Error != "maintenance" || doc.Message != on.Message || doc.RetryAfter != 90 {
		t.Errorf("GET with Accept: application/json in maintenance: %d %v %+v (%v), want 503 and the JSON page", resp.StatusCode, resp.Header, doc, err)
	}
	// HEAD gets the head alone, and a POST with a body gets the page and a connection closed
	// gracefully; the next request on a kept connection is answered too
	conn, err := net.Dial("tcp", l.Addr())
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	_ = conn.SetDeadline(time.Now().Add(10 * time.Second))
	br := bufio.NewReader(conn)
	_, _ = io.WriteString(conn, "HEAD / HTTP/1.1\r\nHost: x\r\n\r\nGET /_lb/health HTTP/1.1\r\nHost: x\r\n\r\n")
	if got := readResponses(t, br, 1, "HEAD"); got[0] != "503" {
		t.Errorf("HEAD in maintenance: %q, want 503 and no body", got[0])
	}
	if got := readResponses(t, br, 1, "GET"); got[0] != "200 ok" {
		t.Errorf("the LB's own health in maintenance: %q, want 200 ok (a front balancer keeps sending users to the page)", got[0])
	}
	post := raw(t, l.Addr(), "POST /orders HTTP/1.1\r\nHost: x\r\nContent-Length: 5\r\n\r\nhello", 10*time.Second)
	if !strings.HasPrefix(post, "HTTP/1.1 503 ") || !strings.Contains(post, "Connection: close\r\n") || !strings.Contains(post, "Down for maintenance") {
		t.Errorf("POST with a body in maintenance: %q, want 503, the page and Connection: close", post)
	}
	if n := a.hits.Load() + a.posts.Load(); n != hits {
		t.Errorf("the backend got %d requests in maintenance, want none", n-hits)
	}

	// the health checks go on: a backend that fails them leaves rotation meanwhile
	a.health.Store(500)
	poll.Until(t, 10*time.Second, "the failing backend out of rotation during maintenance", func() bool {
		return !l.Statuses()[0].InRotation
	})
	a.health.Store(200)
	poll.Until(t, 10*time.Second, "the backend back in rotation during maintenance", func() bool {
		return l.Statuses()[0].InRotation
	})

	// the state, the metrics and the status page say so
	_, body = maintenanceCall(t, admin, "GET", "s3cret", nil)
	if m := maintenanceState(t, body); !m.On || m.Answered != 4 {
		t.Errorf("GET maintenance: %s, want on and 4 answered (GET, GET json, HEAD, POST)", body)
	}
	_, metrics := adminCall(t, admin, "GET", "/metrics", "")
	for _, want := range []string{"zero502_lb_maintenance 1", "zero502_lb_maintenance_responses_total 4", `zero502_lb_admin_changes_total{action="maintenance_on"} 1`} {
		if !strings.Contains(metrics, want) {
			t.Errorf("/metrics lacks %q", want)
		}
	}
	if strings.Contains(metrics, `zero502_lb_own_responses_total{code="503"}`) {
		t.Errorf("maintenance answers counted as the LB's own failures:\n%s", metrics)
	}
	if _, status := adminCall(t, admin, "GET", "/", "s3cret"); !strings.Contains(status, "MAINTENANCE") || !strings.Contains(status, "Back at 03:00.") {
		t.Errorf("status page in maintenance lacks the banner: %s", status)
	}

	// a second PUT changes the page and keeps the start
	first := l.Maintenance().Since
	again := adminapi.MaintenanceChange{Message: "Nearly done.", RetryAfter: adminapi.Duration(10 * time.Second)}
	if code, body := maintenanceCall(t, admin, "PUT", "s3cret", again.Body()); code != 200 || !maintenanceState(t, body).Since.Equal(first) {
		t.Errorf("PUT maintenance again: %d %s, want 200 and since %s kept", code, body, first)
	}
	if code, body, h := get(t, c, l.url("/")); code != 503 || h.Get("Retry-After") != "10" || !strings.Contains(body, "Nearly done.") {
		t.Errorf("after the second PUT: %d %v %q, want the new page", code, h, body)
	}

	code, body = maintenanceCall(t, admin, "DELETE", "s3cret", nil)
	if m := maintenanceState(t, body); code != 200 || m.On {
		t.Fatalf("DELETE maintenance: %d %s, want 200 and off", code, body)
	}
	if code, body, _ := get(t, c, l.url("/")); code != 200 || body != "a" {
		t.Errorf("after maintenance off: %d %q, want 200 from a", code, body)
	}
	_, metrics = adminCall(t, admin, "GET", "/metrics", "")
	if !strings.Contains(metrics, "zero502_lb_maintenance 0") || !strings.Contains(metrics, `zero502_lb_admin_changes_total{action="maintenance_off"} 1`) {
		t.Errorf("/metrics after off lacks the gauge at 0 or the off change")
	}
}
