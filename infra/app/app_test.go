package app

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/zero502/zero502/infra/clock"
	"github.com/zero502/zero502/internal/testrig/poll"
)

const deadline = 10 * time.Second

var t0 = time.Date(2026, 11, 30, 15, 0, 0, 0, time.UTC)

// running is an App served on a real 127.0.0.1:0 listener.
type running struct {
	url    string
	addr   string
	cancel context.CancelFunc
	done   chan error
	client *http.Client
}

func serve(t *testing.T, o Options) *running {
	t.Helper()
	if o.Version == "" {
		o.Version = "v1"
	}
	if o.IdleTimeout == 0 {
		o.IdleTimeout = DefaultIdleTimeout
	}
	if o.Logger == nil {
		o.Logger = slog.New(slog.NewJSONHandler(io.Discard, nil))
	}
	a, err := New(o)
	if err != nil {
		t.Fatal(err)
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	r := &running{url: "http://" + ln.Addr().String(), addr: ln.Addr().String(), cancel: cancel,
		done: make(chan error, 1), client: &http.Client{Timeout: deadline}}
	go func() { r.done <- a.Serve(ctx, ln) }()
	t.Cleanup(func() {
		cancel()
		r.client.CloseIdleConnections()
		a.Close()
	})
	return r
}

func (r *running) do(t *testing.T, method, path string, hdr map[string]string) (*http.Response, string) {
	t.Helper()
	req, err := http.NewRequest(method, r.url+path, nil)
	if err != nil {
		t.Fatal(err)
	}
	for k, v := range hdr {
		req.Header.Set(k, v)
	}
	resp, err := r.client.Do(req)
	if err != nil {
		t.Fatalf("%s %s: %v", method, path, err)
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatalf("%s %s: read body: %v", method, path, err)
	}
	return resp, string(body)
}

func TestRootAnswersVersionWithHeaders(t *testing.T) {
	r := serve(t, Options{Version: "v7"})
	resp, body := r.do(t, "GET", "/", nil)
	if resp.StatusCode != 200 || body != "version v7\n" {
		t.Fatalf("GET / = %d %q, want 200 \"version v7\\n\"", resp.StatusCode, body)
	}
	if got := resp.Header.Get("X-Version"); got != "v7" {
		t.Fatalf("X-Version = %q, want v7", got)
	}
	if got := resp.Header.Get("X-Backend"); got != r.addr {
		t.Fatalf("X-Backend = %q, want %s", got, r.addr)
	}
	if resp, _ := r.do(t, "GET", "/nope", nil); resp.StatusCode != 404 {
		t.Fatalf("GET /nope = %d, want 404", resp.StatusCode)
	}
	if resp, _ := r.do(t, "DELETE", "/", nil); resp.StatusCode != 405 {
		t.Fatalf("DELETE / = %d, want 405", resp.StatusCode)
	}
}

func TestOrdersRecordEveryExecutionInTheLog(t *testing.T) {
	log := filepath.Join(t.TempDir(), "orders.jsonl")
	r := serve(t, Options{Version: "v2", OrdersLog: log})
	for _, key := range []string{"a", "b", "a"} {
		resp, body := r.do(t, "POST", "/orders", map[string]string{"Idempotency-Key": key})
		if resp.StatusCode != 201 {
			t.Fatalf("POST /orders key %s = %d %q, want 201", key, resp.StatusCode, body)
		}
		var o Order
		if err := json.Unmarshal([]byte(body), &o); err != nil || o.Key != key || o.Version != "v2" {
			t.Fatalf("POST /orders body %q (%v), want the order with key %s version v2", body, err, key)
		}
	}
	if resp, body := r.do(t, "POST", "/orders", nil); resp.StatusCode != 400 || !strings.Contains(body, "Idempotency-Key") {
		t.Fatalf("POST /orders without a key = %d %q, want 400 naming Idempotency-Key", resp.StatusCode, body)
	}

	orders, err := readOrders(log)
	if err != nil {
		t.Fatal(err)
	}
	if n := Executions(orders); len(orders) != 3 || n["a"] != 2 || n["b"] != 1 {
		t.Fatalf("orders log = %v (executions %v), want a twice and b once", orders, n)
	}
	resp, body := r.do(t, "GET", "/orders", nil)
	var listed []Order
	if err := json.Unmarshal([]byte(body), &listed); resp.StatusCode != 200 || err != nil || len(listed) != 3 {
		t.Fatalf("GET /orders = %d %q (%v), want the 3 orders", resp.StatusCode, body, err)
	}
}

func TestSlowAnswersAfterTheDelay(t *testing.T) {
	r := serve(t, Options{})
	start := time.Now()
	resp, body := r.do(t, "GET", "/slow?ms=50", nil)
	if resp.StatusCode != 200 || !strings.Contains(body, "slept 50 ms") {
		t.Fatalf("GET /slow?ms=50 = %d %q", resp.StatusCode, body)
	}
	if took := time.Since(start); took < 50*time.Millisecond {
		t.Fatalf("GET /slow?ms=50 answered after %s, before 50ms", took)
	}
	for _, q := range []string{"", "?ms=x", "?ms=-1", "?ms=999999999"} {
		if resp, _ := r.do(t, "GET", "/slow"+q, nil); resp.StatusCode != 400 {
			t.Fatalf("GET /slow%s = %d, want 400", q, resp.StatusCode)
		}
	}
}

func TestSIGTERMDrainsThroughTheHandshake(t *testing.T) {
	clk := clock.NewFake(t0)
	r := serve(t, Options{Clock: clk, Drain: 15 * time.Second, Shutdown: 10 * time.Second})
	if resp, body := r.do(t, "GET", "/health", nil); resp.StatusCode != 200 || body != "ok\n" {
		t.Fatalf("GET /health = %d %q, want 200 ok", resp.StatusCode, body)
	}
	r.cancel()
	poll.Until(t, deadline, "the drain window timer", func() bool { return clk.Waiters() == 1 })
	if resp, _ := r.do(t, "GET", "/health", nil); resp.StatusCode != 503 {
		t.Fatalf("draining: GET /health = %d, want 503", resp.StatusCode)
	}
	resp, body := r.do(t, "GET", "/", nil)
	if resp.StatusCode != 200 || body != "version v1\n" || !resp.Close {
		t.Fatalf("draining: GET / = %d %q close=%v, want 200 with Connection: close", resp.StatusCode, body, resp.Close)
	}
	clk.Advance(15 * time.Second)
	select {
	case err := <-r.done:
		if err != nil {
			t.Fatalf("Serve after the drain = %v, want nil", err)
		}
	case <-time.After(deadline):
		t.Fatal("Serve did not return after the drain window")
	}
}

func TestStartUnhealthyFailsHealthButServes(t *testing.T) {
	r := serve(t, Options{StartUnhealthy: true})
	if resp, body := r.do(t, "GET", "/health", nil); resp.StatusCode != 503 || body != "unhealthy\n" {
		t.Fatalf("GET /health = %d %q, want 503 unhealthy", resp.StatusCode, body)
	}
	if resp, _ := r.do(t, "GET", "/", nil); resp.StatusCode != 200 {
		t.Fatalf("GET / = %d, want 200", resp.StatusCode)
	}
}

func TestFailHealthAfterTurnsHealthTo503(t *testing.T) {
	clk := clock.NewFake(t0)
	r := serve(t, Options{Clock: clk, FailHealthAfter: 3 * time.Second})
	if resp, _ := r.do(t, "GET", "/health", nil); resp.StatusCode != 200 {
		t.Fatalf("GET /health at start = %d, want 200", resp.StatusCode)
	}
	clk.Advance(3*time.Second - time.Nanosecond)
	if resp, _ := r.do(t, "GET", "/health", nil); resp.StatusCode != 200 {
		t.Fatalf("GET /health just before 3s = %d, want 200", resp.StatusCode)
	}
	clk.Advance(time.Nanosecond)
	if resp, _ := r.do(t, "GET", "/health", nil); resp.StatusCode != 503 {
		t.Fatalf("GET /health at 3s = %d, want 503", resp.StatusCode)
	}
}

func TestExitAfterEndsServeWithoutDrain(t *testing.T) {
	clk := clock.NewFake(t0)
	r := serve(t, Options{Clock: clk, ExitAfter: 2 * time.Second, Drain: time.Hour})
	r.do(t, "GET", "/", nil)
	poll.Until(t, deadline, "the exit-after timer", func() bool { return clk.Waiters() == 1 })
	clk.Advance(2 * time.Second)
	select {
	case err := <-r.done:
		if !errors.Is(err, ErrExitAfter) {
			t.Fatalf("Serve = %v, want ErrExitAfter", err)
		}
	case <-time.After(deadline):
		t.Fatal("Serve did not return at --exit-after")
	}
	if c, err := net.DialTimeout("tcp", r.addr, time.Second); err == nil {
		c.Close()
		t.Fatal("still accepting after --exit-after")
	}
}

func TestOptionsAreCheckedBeforeServing(t *testing.T) {
	for _, tc := range []struct {
		name string
		o    Options
		want string
	}{
		{"no version", Options{IdleTimeout: time.Second}, "--version"},
		// X-Version carries it: a control character there makes every response one a balancer
		// refuses (the in-house LB answers 502)
		{"control character in version", Options{Version: "v1\x01", IdleTimeout: time.Second}, `--version "v1\x01"`},
		{"DEL in version", Options{Version: "v1\x7f", IdleTimeout: time.Second}, "--version"},
		{"port out of range", Options{Version: "v1", Port: 70000, IdleTimeout: time.Second}, "--port 70000"},
		{"no idle timeout", Options{Version: "v1"}, "--idle-timeout"},
		{"negative drain", Options{Version: "v1", IdleTimeout: time.Second, Drain: -1}, "--drain"},
		{"orders log in a missing dir", Options{Version: "v1", IdleTimeout: time.Second,
			OrdersLog: filepath.Join(t.TempDir(), "no", "such", "orders.jsonl")}, "--orders-log"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := New(tc.o)
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("New = %v, want an error naming %s", err, tc.want)
			}
		})
	}
}

func TestRunReportsABusyPort(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	port := ln.Addr().(*net.TCPAddr).Port
	err = Run(context.Background(), Options{Version: "v1", Port: port, IdleTimeout: time.Second,
		Logger: slog.New(slog.NewJSONHandler(io.Discard, nil))})
	if err == nil || !strings.Contains(err.Error(), fmt.Sprintf("--port %d", port)) {
		t.Fatalf("Run on a busy port = %v, want an error naming --port %d", err, port)
	}
}

// An address that is not this machine's is a bad --host, not a busy port: the error names the
// host and does not send the user looking for another instance on the port.
func TestRunNamesAHostItCannotListenOn(t *testing.T) {
	err := Run(context.Background(), Options{Version: "v1", Host: "192.0.2.1", Port: 19999, IdleTimeout: time.Second,
		Logger: slog.New(slog.NewJSONHandler(io.Discard, nil))})
	if err == nil || !strings.Contains(err.Error(), `--host "192.0.2.1"`) || strings.Contains(err.Error(), "another instance") {
		t.Fatalf("Run on an address not of this machine = %v, want an error naming --host \"192.0.2.1\", not a busy port", err)
	}
}
