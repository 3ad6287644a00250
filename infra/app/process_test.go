package app

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"os/signal"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/coder/websocket"
)

// childEnv makes the test binary run as an app process (Options as JSON), as `zero502 app` does:
// SIGTERM cancels the context, Run drains, the process exits 0.
const childEnv = "ZERO502_APP_TEST_CHILD"

func TestMain(m *testing.M) {
	if spec := os.Getenv(childEnv); spec != "" {
		var o Options
		if err := json.Unmarshal([]byte(spec), &o); err != nil {
			fmt.Fprintln(os.Stderr, err)
			os.Exit(2)
		}
		ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGTERM, os.Interrupt)
		defer stop()
		if err := Run(ctx, o); err != nil {
			fmt.Fprintln(os.Stderr, err)
			os.Exit(1)
		}
		os.Exit(0)
	}
	os.Exit(m.Run())
}

// child is an app in its own process.
type child struct {
	cmd  *exec.Cmd
	url  string
	logs chan map[string]any // JSON log lines after the start line
	done chan error
}

func startChild(t *testing.T, o Options) *child {
	t.Helper()
	spec, err := json.Marshal(o)
	if err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(os.Args[0], "-test.run=^$")
	cmd.Env = append(os.Environ(), childEnv+"="+string(spec))
	stderr, err := cmd.StderrPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	c := &child{cmd: cmd, logs: make(chan map[string]any, 64), done: make(chan error, 1)}
	started := make(chan string, 1)
	go func() {
		sc := bufio.NewScanner(stderr)
		for sc.Scan() {
			var line map[string]any
			if json.Unmarshal(sc.Bytes(), &line) != nil {
				continue
			}
			if line["msg"] == "app started" {
				started <- line["addr"].(string)
				continue
			}
			c.logs <- line
		}
		io.Copy(io.Discard, stderr)
		c.done <- cmd.Wait()
	}()
	t.Cleanup(func() {
		cmd.Process.Kill()
	})
	select {
	case addr := <-started:
		c.url = "http://" + addr
	case err := <-c.done:
		t.Fatalf("app child exited before it started: %v", err)
	case <-time.After(deadline):
		t.Fatal("app child did not log its start line")
	}
	return c
}

func get(t *testing.T, url string, hdr map[string]string, method string) int {
	t.Helper()
	req, _ := http.NewRequest(method, url, nil)
	for k, v := range hdr {
		req.Header.Set(k, v)
	}
	resp, err := (&http.Client{Timeout: deadline}).Do(req)
	if err != nil {
		t.Fatalf("%s %s: %v", method, url, err)
	}
	io.Copy(io.Discard, resp.Body)
	resp.Body.Close()
	return resp.StatusCode
}

func TestOrdersFromSeveralProcessesCountPerKey(t *testing.T) {
	log := filepath.Join(t.TempDir(), "orders.jsonl")
	a := startChild(t, Options{Version: "v1", Host: "127.0.0.1", IdleTimeout: time.Minute, OrdersLog: log})
	b := startChild(t, Options{Version: "v2", Host: "127.0.0.1", IdleTimeout: time.Minute, OrdersLog: log})
	for i := 0; i < 20; i++ {
		key := fmt.Sprintf("k%d", i)
		if code := get(t, a.url+"/orders", map[string]string{"Idempotency-Key": key}, "POST"); code != 201 {
			t.Fatalf("POST to v1 = %d", code)
		}
		if i%5 == 0 { // a duplicate execution on the other process
			if code := get(t, b.url+"/orders", map[string]string{"Idempotency-Key": key}, "POST"); code != 201 {
				t.Fatalf("POST to v2 = %d", code)
			}
		}
	}
	orders, err := readOrders(log)
	if err != nil {
		t.Fatal(err)
	}
	n := Executions(orders)
	dup := 0
	for _, c := range n {
		if c > 1 {
			dup++
		}
	}
	if len(orders) != 24 || len(n) != 20 || dup != 4 {
		t.Fatalf("orders log: %d lines, %d keys, %d executed twice; want 24, 20, 4", len(orders), len(n), dup)
	}
}

func TestSIGTERMDrainsAndExitsZero(t *testing.T) {
	c := startChild(t, Options{Version: "v1", Host: "127.0.0.1", IdleTimeout: time.Minute,
		Drain: 2 * time.Second, Shutdown: 2 * time.Second})
	if code := get(t, c.url+"/health", nil, "GET"); code != 200 {
		t.Fatalf("GET /health = %d, want 200", code)
	}
	if err := c.cmd.Process.Signal(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	select {
	case line := <-c.logs:
		if line["phase"] != "draining" {
			t.Fatalf("first log line after SIGTERM = %v, want the draining phase", line)
		}
	case <-time.After(deadline):
		t.Fatal("no drain log line after SIGTERM")
	}
	if code := get(t, c.url+"/health", nil, "GET"); code != 503 {
		t.Fatalf("GET /health while draining = %d, want 503", code)
	}
	if code := get(t, c.url+"/", nil, "GET"); code != 200 {
		t.Fatalf("GET / while draining = %d, want 200", code)
	}
	select {
	case err := <-c.done:
		var ee *exec.ExitError
		if err != nil && errors.As(err, &ee) {
			t.Fatalf("app exited %d after SIGTERM, want 0", ee.ExitCode())
		} else if err != nil {
			t.Fatal(err)
		}
	case <-time.After(deadline):
		t.Fatal("app did not exit after drain + shutdown")
	}
	var phases []string
	for len(c.logs) > 0 {
		if p, ok := (<-c.logs)["phase"].(string); ok {
			phases = append(phases, p)
		}
	}
	if strings.Join(phases, ",") != "stopped_accepting,done" {
		t.Fatalf("phases logged after draining = %v, want stopped_accepting, done", phases)
	}
}

// On SIGTERM every open WebSocket session gets its close frame, 1001 "draining", before the
// process exits: the server's shutdown does not wait for hijacked connections, the app does
// (within the shutdown budget). Three sessions, as a race lost once in a few runs shows.
func TestSIGTERMClosesEveryWebSocketSessionBeforeExit(t *testing.T) {
	c := startChild(t, Options{Version: "v1", Host: "127.0.0.1", IdleTimeout: time.Minute,
		Drain: 300 * time.Millisecond, Shutdown: 3 * time.Second})
	ctx, cancel := context.WithTimeout(context.Background(), deadline)
	defer cancel()
	var conns []*websocket.Conn
	for range 3 {
		ws, _, err := websocket.Dial(ctx, "ws"+strings.TrimPrefix(c.url, "http")+"/ws", nil)
		if err != nil {
			t.Fatal(err)
		}
		defer ws.CloseNow()
		conns = append(conns, ws)
	}
	if err := c.cmd.Process.Signal(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	for i, ws := range conns {
		_, _, err := ws.Read(ctx)
		if st := websocket.CloseStatus(err); st != websocket.StatusGoingAway {
			t.Errorf("session %d ended with %v (status %v); want the close frame 1001 (going away)", i, err, st)
		}
	}
	select {
	case err := <-c.done:
		if err != nil {
			t.Fatalf("app exited with %v after SIGTERM, want 0", err)
		}
	case <-time.After(deadline):
		t.Fatal("app did not exit after drain + shutdown")
	}
}
