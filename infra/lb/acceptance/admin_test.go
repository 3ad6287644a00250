package acceptance

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"os/exec"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"
)

// The admin API (docs/lb.md: Admin API), metrics, the command line's refusals, and the
// LB's own drain handshake on SIGTERM.

func TestAdminSettingsReportTheLiveNumbers(t *testing.T) {
	t.Parallel()
	l := startLB(t, []*backendProc{startBackend(t, "a")},
		"--health-path", "/health",
		"--health-interval", "300ms", "--health-timeout", "200ms",
		"--unhealthy-threshold", "3", "--healthy-threshold", "2",
		"--connect-timeout", "700ms", "--header-timeout", "2s", "--idle-timeout", "4s",
		"--max-header-bytes", "32768")
	l.requireSettings(t, map[string]any{
		"listen": l.addr, "health_path": "/health", "interval": "300ms", "timeout": "200ms",
		"unhealthy_threshold": 3.0, "healthy_threshold": 2.0, "idle_timeout": "4s",
		"connect_timeout": "700ms", "header_timeout": "2s", "max_header_bytes": 32768.0,
	})
}

// requireSettings fails unless GET /admin/settings has every key of want with its value (JSON
// numbers as float64).
func (l *lbProc) requireSettings(t *testing.T, want map[string]any) {
	t.Helper()
	resp, body := l.adminGet(t, "/admin/settings")
	if resp.StatusCode != 200 {
		t.Fatalf("/admin/settings: status %d %s", resp.StatusCode, body)
	}
	var got map[string]any
	if err := json.Unmarshal(body, &got); err != nil {
		t.Fatalf("/admin/settings is not JSON: %v: %s", err, body)
	}
	for k, v := range want {
		if got[k] != v {
			t.Errorf("/admin/settings %s = %#v, want %#v", k, got[k], v)
		}
	}
}

func TestAdminBackendsFollowTheContract(t *testing.T) {
	t.Parallel()
	bs := threeBackends(t)
	l := startLB(t, bs, "--health-interval", "500ms", "--health-timeout", "450ms", "--unhealthy-threshold", "3")
	l.sequence(t, 6)

	eventually(t, 5*time.Second, 50*time.Millisecond, func() (bool, string) {
		st := l.status(t)
		for _, b := range bs {
			if n := st[b.addr].Requests["2xx"]; n != 2 {
				return false, fmt.Sprintf("backend %s requests.2xx = %d, want 2", b.addr, n)
			}
		}
		return true, ""
	})
	resp, body := l.adminGet(t, "/admin/backends")
	var doc struct{ Backends []backendStatus }
	if err := json.Unmarshal(body, &doc); err != nil || resp.StatusCode != 200 {
		t.Fatalf("/admin/backends: status %d, %v: %s", resp.StatusCode, err, body)
	}
	if len(doc.Backends) != 3 {
		t.Fatalf("/admin/backends lists %d backends, want 3: %s", len(doc.Backends), body)
	}
	for i, s := range doc.Backends {
		if s.Address != bs[i].addr {
			t.Errorf("backend %d address %q, want %q as configured, in order", i, s.Address, bs[i].addr)
		}
		if s.State != "healthy" || !s.InRotation {
			t.Errorf("backend %s state %q in_rotation %v, want healthy and true", s.Address, s.State, s.InRotation)
		}
		for field, v := range map[string]string{"since": s.Since, "last_check": s.LastCheck} {
			if _, err := time.Parse(time.RFC3339Nano, v); err != nil {
				t.Errorf("backend %s %s %q is not RFC3339Nano: %v", s.Address, field, v, err)
			}
		}
		// The last check's result: a success leaves no error and no failure streak.
		if (s.ConsecutiveSuccesses > 0 && s.ConsecutiveFailures > 0) || (s.ConsecutiveSuccesses > 0 && s.LastError != "") {
			t.Errorf("backend %s: successes %d failures %d last_error %q do not describe one last check",
				s.Address, s.ConsecutiveSuccesses, s.ConsecutiveFailures, s.LastError)
		}
		for _, class := range []string{"2xx", "3xx", "4xx", "5xx", "errors"} {
			if _, ok := s.Requests[class]; !ok {
				t.Errorf("backend %s requests lacks %q: %v", s.Address, class, s.Requests)
			}
		}
	}

	// A health 503 takes the backend out at once, as "draining", with a recorded transition.
	b := bs[2]
	b.get(t, "/sick")
	l.waitOutOfRotation(t, 5*time.Second, b)
	s := l.status(t)[b.addr]
	if s.State != "draining" {
		t.Errorf("backend whose health answers 503: state %q, want draining", s.State)
	}
	if n := len(s.Transitions); n == 0 || s.Transitions[n-1].From != "healthy" || s.Transitions[n-1].To != s.State ||
		!strings.Contains(s.Transitions[n-1].Reason, "503") {
		t.Errorf("transitions %+v, want the last one healthy → %s with a reason naming 503", s.Transitions, s.State)
	}

	t.Run("admin health, status page and metrics", func(t *testing.T) {
		if resp, body := l.adminGet(t, "/admin/health"); resp.StatusCode != 200 || strings.TrimSpace(string(body)) != "ok" {
			t.Errorf("/admin/health: %d %q, want 200 ok", resp.StatusCode, body)
		}
		resp, body := l.adminGet(t, "/")
		if resp.StatusCode != 200 || !strings.HasPrefix(resp.Header.Get("Content-Type"), "text/html") ||
			!bytes.Contains(body, []byte(bs[0].addr)) {
			t.Errorf("admin status page: %d %s, want HTML naming every backend", resp.StatusCode, resp.Header.Get("Content-Type"))
		}
		resp, body = l.adminGet(t, "/metrics")
		if resp.StatusCode != 200 {
			t.Fatalf("/metrics: status %d", resp.StatusCode)
		}
		if v := metricFor(body, "request", bs[0].addr); v < 2 {
			t.Errorf("/metrics has no request counter of at least 2 for backend %s:\n%s", bs[0].addr, tail(string(body), 3000))
		}
	})
}

// metricFor is the largest value of a sample whose name contains name and whose labels mention
// label, or -1.
func metricFor(exposition []byte, name, label string) float64 {
	best := -1.0
	sc := bufio.NewScanner(bytes.NewReader(exposition))
	sc.Buffer(nil, 1<<20)
	for sc.Scan() {
		line := sc.Text()
		if strings.HasPrefix(line, "#") || !strings.Contains(line, `"`+label+`"`) {
			continue
		}
		metric, value, ok := strings.Cut(line, " ")
		if !ok || !strings.Contains(metric[:strings.IndexByte(metric+"{", '{')], name) {
			continue
		}
		if v, err := strconv.ParseFloat(strings.Fields(value)[0], 64); err == nil && v > best {
			best = v
		}
	}
	return best
}

func TestLBDrainsOnSIGTERM(t *testing.T) {
	t.Parallel()
	bs := []*backendProc{startBackend(t, "a")}
	// The in-flight request below takes 3 s: a longer header timeout keeps it from being a 504.
	l := startLB(t, bs, append([]string{"--drain", "2s", "--shutdown", "3s", "--header-timeout", "10s"}, calm...)...)
	if resp, _ := l.mustGet(t, "/_lb/health"); resp.StatusCode != 200 {
		t.Fatalf("/_lb/health before SIGTERM: %d, want 200", resp.StatusCode)
	}
	// One request in flight across the whole drain: it must still be answered.
	inFlight := make(chan int, 1)
	go func() {
		resp, _, err := l.get("/slow?ms=3000&id=in-flight")
		if err != nil {
			inFlight <- -1
			return
		}
		inFlight <- resp.StatusCode
	}()
	eventually(t, 5*time.Second, 20*time.Millisecond, func() (bool, string) {
		n := bs[0].count(t, "GET /slow")
		return n == 1, fmt.Sprintf("backend saw %d GET /slow", n)
	})

	sent := time.Now()
	l.signal(t, syscall.SIGTERM)
	took := eventually(t, 2*time.Second, 20*time.Millisecond, func() (bool, string) {
		resp, _, err := l.get("/_lb/health")
		if err != nil {
			return false, err.Error()
		}
		return resp.StatusCode == http.StatusServiceUnavailable, fmt.Sprintf("/_lb/health %d", resp.StatusCode)
	})
	t.Logf("own health 503 %s after SIGTERM", took.Round(time.Millisecond))
	if resp, _ := l.adminGet(t, "/admin/health"); resp.StatusCode != http.StatusServiceUnavailable {
		t.Errorf("/admin/health during the drain: %d, want 503", resp.StatusCode)
	}
	// Still proxying during the drain window, on new connections too.
	for i := 0; i < 3; i++ {
		c := dialRawConn(t, l.addr)
		c.send(requestLine("GET", "/"))
		if resp, body := c.read("GET"); resp.StatusCode != 200 {
			t.Fatalf("request during the drain window: %d %q, want 200", resp.StatusCode, body)
		}
	}
	select {
	case code := <-inFlight:
		if code != 200 {
			t.Fatalf("the request in flight across the drain got %d, want 200", code)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("the request in flight across the drain got no answer")
	}
	select {
	case <-l.proc.exited:
	case <-time.After(15 * time.Second):
		t.Fatal("the LB did not exit within drain + shutdown + 10 s")
	}
	exited := time.Since(sent)
	if l.proc.err != nil {
		t.Fatalf("the LB exited with %v after SIGTERM, want exit 0", l.proc.err)
	}
	if exited < 2*time.Second {
		t.Errorf("the LB exited %s after SIGTERM, before its 2 s drain window ended", exited)
	}
	t.Logf("the LB exited 0 %s after SIGTERM", exited.Round(time.Millisecond))
}

func TestBadCommandLineIsRefused(t *testing.T) {
	t.Parallel()
	needLB(t)
	for _, args := range [][]string{
		{"lb"},
		{"lb", "18099"},
		{"lb", "not-a-port", "127.0.0.1:9001"},
		{"lb", "18099", "no-port-here"},
		{"lb", "--health-interval", "-1s", "18099", "127.0.0.1:9001"},
		{"lb", "--unhealthy-threshold", "0", "18099", "127.0.0.1:9001"},
		{"lb", "--max-header-bytes", "-5", "18099", "127.0.0.1:9001"},
	} {
		t.Run(strings.Join(args[1:], " "), func(t *testing.T) {
			ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
			defer cancel()
			var out bytes.Buffer
			cmd := exec.CommandContext(ctx, bins.zero502, args...)
			cmd.Stdout, cmd.Stderr = &out, &out
			err := cmd.Run()
			if ctx.Err() != nil {
				t.Fatalf("zero502 %s kept running: it should refuse the input at start", strings.Join(args, " "))
			}
			if err == nil || strings.TrimSpace(out.String()) == "" {
				t.Fatalf("zero502 %s: err %v, output %q; want a non-zero exit with a message", strings.Join(args, " "), err, out.String())
			}
		})
	}
}
