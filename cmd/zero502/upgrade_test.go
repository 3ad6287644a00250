package main

import (
	"bufio"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/pires/go-proxyproto"

	"github.com/zero502/zero502/infra/handoff"
	"github.com/zero502/zero502/internal/testrig/poll"
)

// The in-place upgrade, end to end: real zero502 processes handing real listening sockets on,
// under a steady load of real connections that counts every refused or reset connection and
// every non-2xx answer.
func TestUpgrade(t *testing.T) {
	bin, _ := upgradeRig(t)
	t.Run("lb under load, config reload, broken config", func(t *testing.T) { testUpgradeLB(t, bin) })
	t.Run("edge forward under load", func(t *testing.T) { testUpgradeEdge(t, bin) })
}

// upgradeRig is what every in-place upgrade test starts from: skipped with -short (it builds
// zero502 and runs processes) and on Windows (no hand-off); the zero502 binary and a directory
// of the test's.
func upgradeRig(t *testing.T) (bin, dir string) {
	t.Helper()
	if testing.Short() {
		t.Skip("builds zero502 and runs processes")
	}
	if runtime.GOOS == "windows" {
		t.Skip("no hand-off on Windows")
	}
	return buildZero502(t), t.TempDir()
}

// lbUpgradeConfig is a config whose balanced service runs on port on each of hosts
// (127.0.0.x addresses), with interval as balancer.interval.
func lbUpgradeConfig(listen, admin string, port int, interval string, hosts ...string) string {
	var b strings.Builder
	fmt.Fprintf(&b, `balancer:
  kind: inhouse
  listen: %s
  admin: %s
  service: web
  health_path: /health
  interval: %s
  timeout: 100ms
  unhealthy_threshold: 2
  healthy_threshold: 2
  idle_timeout: 5s
  connect_timeout: 1s
  header_timeout: 3s
drain:
  window: 600ms
  shutdown: 2s
  stop_grace: 4s
  max_recovery: 2s
watchdog:
  interval: 1s
  heal_after: 4
  check_timeout: 500ms
  state_dir: /tmp/zero502-upgrade-test
app:
  keepalive_idle_timeout: 10s
rollout:
  runtime: process
services:
  - name: web
    command: ["true"]
    port: %d
hosts:
`, listen, admin, interval, port)
	for i, h := range hosts {
		fmt.Fprintf(&b, "  - name: host-%d\n    address: %s\n", i, h)
	}
	return b.String()
}

func testUpgradeLB(t *testing.T, bin string) {
	dir := t.TempDir()
	port := backends(t, "127.0.0.1", "127.0.0.2", "127.0.0.3")
	listen, admin := freeAddr(t), freeAddr(t)
	cfg := filepath.Join(dir, "lb.yaml")
	writeFile(t, cfg, lbUpgradeConfig(listen, admin, port, "250ms", "127.0.0.1", "127.0.0.2"))
	pidFile := filepath.Join(dir, "run", "lb.pid")
	old := startServer(t, bin, filepath.Join(dir, "lb.log"), pidFile, "lb", "--config", cfg, "--pid-file", pidFile)
	poll.Until(t, 10*time.Second, "the LB serves", func() bool { return get(t, "http://"+listen+"/") == 200 })

	l := startLoad(t, listen, 0)
	l.waitOK(t, 300)
	// A config change rides on the upgrade: a third backend, another health interval.
	writeFile(t, cfg, lbUpgradeConfig(listen, admin, port, "300ms", "127.0.0.1", "127.0.0.2", "127.0.0.3"))
	out, code := runBin(t, bin, "lb", "upgrade", "--pid-file", pidFile)
	if code != 0 || !strings.Contains(out, "upgraded: pid") {
		t.Fatalf("lb upgrade: exit %d, %q; want 0 and the new pid\n%s", code, out, readLog(t, dir, "lb.log"))
	}
	t.Logf("zero502 lb upgrade: %s", strings.TrimSpace(out))
	newPID := readPID(t, pidFile)
	if newPID == old.Process.Pid {
		t.Fatalf("pid file still names pid %d after the upgrade", newPID)
	}
	if code := old.waitExit(t, 15*time.Second); code != 0 {
		t.Fatalf("the old LB (pid %d) exited %d after its drain, want 0\n%s", old.Process.Pid, code, readLog(t, dir, "lb.log"))
	}
	l.waitOK(t, l.ok.Load()+300) // the new process carries the load alone
	var settings struct{ Interval string }
	getJSON(t, "http://"+admin+"/admin/settings", &settings)
	var bs struct{ Backends []struct{ Address string } }
	getJSON(t, "http://"+admin+"/admin/backends", &bs)
	if settings.Interval != "300ms" || len(bs.Backends) != 3 {
		t.Errorf("after the upgrade: interval %q with %d backends; want the new config's 300ms and 3", settings.Interval, len(bs.Backends))
	}

	// A broken config at upgrade time: the new process refuses it, the running one keeps serving.
	writeFile(t, cfg, lbUpgradeConfig(listen, admin, port, "50ms", "127.0.0.1", "127.0.0.2", "127.0.0.3"))
	out, code = runBin(t, bin, "lb", "upgrade", "--pid-file", pidFile)
	if code != 1 || !strings.Contains(out, "keeps serving") || !strings.Contains(out, "timeout") {
		t.Fatalf("lb upgrade with a broken config: exit %d, %q; want 1 naming the config error (balancer.timeout ≥ interval)", code, out)
	}
	if pid := readPID(t, pidFile); pid != newPID {
		t.Fatalf("pid file names %d after a failed upgrade, want the serving %d", pid, newPID)
	}
	l.waitOK(t, l.ok.Load()+100)
	if get(t, "http://"+admin+"/admin/health") != 200 {
		t.Fatal("the LB stopped serving its admin API after a failed upgrade")
	}
	for _, line := range strings.Split(readLog(t, dir, "lb.log"), "\n") {
		if strings.Contains(line, `"phase":"done"`) || strings.Contains(line, "stopped_accepting") {
			t.Logf("old LB: %s", line)
		}
	}
	// The old LB accepts nothing once it has handed its sockets on, so every connection it has
	// was accepted a whole drain window before it closes idle ones: none is closed under its
	// first request. Refused connections, resets and non-2xx answers must all be zero.
	l.stopAndCheck(t)
	// Each keep-alive worker's connection began on the old process; its drain ended every one
	// with a Connection: close response, never by closing it under a request.
	if n := l.closedBy.Load(); n < keepAliveWorkers {
		t.Errorf("%d keep-alive connections ended by Connection: close, want at least %d (one per keep-alive worker)", n, keepAliveWorkers)
	}
}

func testUpgradeEdge(t *testing.T, bin string) {
	dir := t.TempDir()
	origin := proxiedOrigin(t)
	listen, health, metrics := freeAddr(t), freeAddr(t), freeAddr(t)
	pidFile := filepath.Join(dir, "edge.pid")
	old := startServer(t, bin, filepath.Join(dir, "edge.log"), pidFile, "edge", "forward", "--listen", listen,
		"--origin", origin, "--health", health, "--metrics", metrics, "--drain", "300ms", "--shutdown", "3s",
		"--pid-file", pidFile)
	poll.Until(t, 10*time.Second, "the edge forwards", func() bool { return get(t, "http://"+listen+"/") == 200 })

	// The edge is L4: it cannot end a keep-alive connection between two requests, so each
	// client connection here carries a bounded number of requests (as clients recycle them);
	// what outlives drain + shutdown would be cut, as on SIGTERM.
	l := startLoad(t, listen, 20)
	l.waitOK(t, 300)
	out, code := runBin(t, bin, "lb", "upgrade", "--pid-file", pidFile)
	if code != 0 {
		t.Fatalf("upgrade of the edge: exit %d, %q\n%s", code, out, readLog(t, dir, "edge.log"))
	}
	if readPID(t, pidFile) == old.Process.Pid {
		t.Fatal("pid file still names the old edge after the upgrade")
	}
	if code := old.waitExit(t, 15*time.Second); code != 0 {
		t.Fatalf("the old edge exited %d after its drain, want 0\n%s", code, readLog(t, dir, "edge.log"))
	}
	l.waitOK(t, l.ok.Load()+300)
	l.stopAndCheck(t)
	// The health and metrics sockets went over too: they still answer with the old process gone.
	c, err := net.DialTimeout("tcp", health, time.Second)
	if err != nil {
		t.Fatalf("health listener after the upgrade: %v", err)
	}
	_ = c.Close()
	if code := get(t, "http://"+metrics+"/metrics"); code != 200 {
		t.Fatalf("GET /metrics after the upgrade: %d", code)
	}
}

// proxiedOrigin is an HTTP server behind a PROXY-header-reading listener (the edge's origin).
func proxiedOrigin(t *testing.T) string {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	srv := &http.Server{Handler: okHandler(), ReadHeaderTimeout: 5 * time.Second}
	go func() { _ = srv.Serve(&proxyproto.Listener{Listener: ln}) }()
	t.Cleanup(func() { _ = srv.Close() })
	return ln.Addr().String()
}

// okHandler answers 200 with the size of the request body it read.
func okHandler() http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		n, _ := io.Copy(io.Discard, r.Body)
		_, _ = fmt.Fprintf(w, "ok %d\n", n)
	})
}

// backends serves okHandler on one port on each of the addresses; it returns the port.
func backends(t *testing.T, addrs ...string) int {
	for try := 0; try < 20; try++ {
		port, _ := strconv.Atoi(strings.Split(freeAddr(t), ":")[1])
		var lns []net.Listener
		for _, a := range addrs {
			ln, err := net.Listen("tcp", net.JoinHostPort(a, strconv.Itoa(port)))
			if err != nil {
				break
			}
			lns = append(lns, ln)
		}
		if len(lns) < len(addrs) {
			for _, ln := range lns {
				_ = ln.Close()
			}
			continue
		}
		for _, ln := range lns {
			srv := &http.Server{Handler: okHandler(), ReadHeaderTimeout: 5 * time.Second}
			go func() { _ = srv.Serve(ln) }()
			t.Cleanup(func() { _ = srv.Close() })
		}
		return port
	}
	t.Fatalf("no port free on all of %v", addrs)
	return 0
}

// server is a zero502 server process started by the test.
type server struct {
	*exec.Cmd
	exited chan struct{}
	code   int
}

// startServer starts bin with args, its output in logPath; the cleanup kills it and whichever
// process the pid file names then (an upgrade's new process is not the test's child).
func startServer(t *testing.T, bin, logPath, pidFile string, args ...string) *server {
	out, err := os.Create(logPath)
	if err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(bin, args...)
	cmd.Stdout, cmd.Stderr = out, out // a file, not a pipe: the new process inherits it
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	s := &server{Cmd: cmd, exited: make(chan struct{})}
	go func() {
		_ = cmd.Wait()
		s.code = cmd.ProcessState.ExitCode()
		close(s.exited)
	}()
	t.Cleanup(func() {
		if pid, err := handoff.ReadPID(pidFile); err == nil && pid != cmd.Process.Pid {
			if p, err := os.FindProcess(pid); err == nil {
				_ = p.Kill()
			}
		}
		_ = cmd.Process.Kill()
		<-s.exited
		_ = out.Close()
	})
	deadline := time.Now().Add(10 * time.Second)
	for pid, err := handoff.ReadPID(pidFile); err != nil || pid != cmd.Process.Pid; pid, err = handoff.ReadPID(pidFile) {
		select {
		case <-s.exited:
			data, _ := os.ReadFile(logPath)
			t.Fatalf("%s %v exited %d at start:\n%s", bin, args, s.code, data)
		case <-time.After(20 * time.Millisecond):
		}
		if time.Now().After(deadline) {
			t.Fatalf("pid file %s: not written within 10s", pidFile)
		}
	}
	return s
}

// waitExit is the process's exit code once it exited, within d.
func (s *server) waitExit(t *testing.T, d time.Duration) int {
	t.Helper()
	select {
	case <-s.exited:
		return s.code
	case <-time.After(d):
		t.Fatalf("pid %d did not exit within %s", s.Process.Pid, d)
		return -1
	}
}

func runBin(t *testing.T, bin string, args ...string) (string, int) {
	t.Helper()
	out, err := exec.Command(bin, args...).CombinedOutput()
	var ee *exec.ExitError
	if errors.As(err, &ee) {
		return string(out), ee.ExitCode()
	}
	if err != nil {
		t.Fatalf("%s %v: %v", bin, args, err)
	}
	return string(out), 0
}

// get is the status of GET url, 0 when it fails.
func get(t *testing.T, url string) int {
	c := &http.Client{Timeout: 2 * time.Second, Transport: &http.Transport{DisableKeepAlives: true}}
	resp, err := c.Get(url)
	if err != nil {
		return 0
	}
	_, _ = io.Copy(io.Discard, resp.Body)
	_ = resp.Body.Close()
	return resp.StatusCode
}

func getJSON(t *testing.T, url string, v any) {
	t.Helper()
	c := &http.Client{Timeout: 2 * time.Second}
	resp, err := c.Get(url)
	if err != nil {
		t.Fatalf("GET %s: %v", url, err)
	}
	defer resp.Body.Close()
	if err := json.NewDecoder(resp.Body).Decode(v); err != nil {
		t.Fatalf("GET %s: %v", url, err)
	}
}

func readPID(t *testing.T, path string) int {
	t.Helper()
	pid, err := handoff.ReadPID(path)
	if err != nil {
		t.Fatal(err)
	}
	return pid
}

func writeFile(t *testing.T, path, s string) {
	t.Helper()
	if err := os.WriteFile(path, []byte(s), 0o644); err != nil {
		t.Fatal(err)
	}
}

func readLog(_ *testing.T, dir, name string) string {
	data, _ := os.ReadFile(filepath.Join(dir, name))
	return string(data)
}

// load is a steady mixed load on one address from its own HTTP/1.1 client on raw connections,
// which never retries: half the workers open a new connection per request, half keep theirs
// (up to perConn requests each, 0: until the server closes it after a Connection: close
// response). GETs and POSTs alternate. Every dial refused, connection reset or cut before a
// whole response, and every non-2xx answer is a failure.
type load struct {
	stop     chan struct{}
	wg       sync.WaitGroup
	ok       atomic.Int64
	closedBy atomic.Int64 // keep-alive connections the server ended with Connection: close
	// freshResets are connections reset or closed under their first request (see
	// testUpgradeLB); failures hold them and every other failure
	freshResets atomic.Int64
	mu          sync.Mutex
	failures    []string
}

// keepAliveWorkers keep their connection; as many more open one per request.
const keepAliveWorkers = 4

func startLoad(t *testing.T, addr string, perConn int) *load {
	l := &load{stop: make(chan struct{})}
	for w := range 2 * keepAliveWorkers {
		l.wg.Add(1)
		go func() {
			defer l.wg.Done()
			l.worker(addr, w < keepAliveWorkers, perConn)
		}()
	}
	t.Cleanup(func() { l.halt() })
	return l
}

func (l *load) halt() {
	select {
	case <-l.stop:
	default:
		close(l.stop)
	}
	l.wg.Wait()
}

func (l *load) fail(format string, args ...any) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.failures = append(l.failures, fmt.Sprintf(format, args...))
}

// worker sends about 50 requests a second until stop.
func (l *load) worker(addr string, keepAlive bool, perConn int) {
	tick := time.NewTicker(20 * time.Millisecond)
	defer tick.Stop()
	var (
		conn net.Conn
		br   *bufio.Reader
		used int
	)
	defer func() {
		if conn != nil {
			_ = conn.Close()
		}
	}()
	for i := 0; ; i++ {
		select {
		case <-l.stop:
			return
		case <-tick.C:
		}
		if conn == nil {
			c, err := net.DialTimeout("tcp", addr, 2*time.Second)
			if err != nil {
				l.fail("dial: %v", err)
				continue
			}
			conn, br, used = c, bufio.NewReader(c), 0
		}
		used++
		last := !keepAlive || perConn > 0 && used >= perConn
		method, body := "GET", ""
		if i%2 == 1 {
			method, body = "POST", strings.Repeat("x", 512)
		}
		closeHdr := ""
		if last {
			closeHdr = "Connection: close\r\n"
		}
		_ = conn.SetDeadline(time.Now().Add(5 * time.Second))
		req := fmt.Sprintf("%s /r%d HTTP/1.1\r\nHost: upgrade-test\r\nContent-Length: %d\r\n%s\r\n%s", method, i, len(body), closeHdr, body)
		resp, err := func() (*http.Response, error) {
			if _, err := io.WriteString(conn, req); err != nil {
				return nil, err
			}
			resp, err := http.ReadResponse(br, nil)
			if err != nil {
				return nil, err
			}
			_, err = io.Copy(io.Discard, resp.Body)
			_ = resp.Body.Close()
			return resp, err
		}()
		switch {
		case err != nil && used == 1 && !errors.Is(err, syscall.ECONNREFUSED):
			l.freshResets.Add(1)
			l.fail("%s, the first request on a new connection: %v", method, err)
		case err != nil:
			l.fail("%s on a connection after %d requests (keep-alive %v): %v", method, used, keepAlive, err)
		case resp.StatusCode/100 != 2:
			l.fail("%s: status %d", method, resp.StatusCode)
		default:
			l.ok.Add(1)
		}
		if err == nil && !last && resp.Close {
			l.closedBy.Add(1)
		}
		if err != nil || last || resp.Close {
			_ = conn.Close()
			conn = nil
		}
	}
}

// waitOK waits until n requests succeeded in all.
func (l *load) waitOK(t *testing.T, n int64) {
	t.Helper()
	poll.Until(t, 30*time.Second, fmt.Sprintf("%d successful requests", n), func() bool { return l.ok.Load() >= n })
}

// stopAndCheck ends the load and fails the test on any failure: a refused connection, a reset
// or a close under a request (a new connection's first one included: the old process serves
// what it accepted before it stopped accepting), an answer other than 2xx.
func (l *load) stopAndCheck(t *testing.T) {
	t.Helper()
	l.halt()
	l.mu.Lock()
	defer l.mu.Unlock()
	t.Logf("load: %d requests answered 2xx, %d failures (%d of them a new connection reset or closed under its first request); "+
		"%d keep-alive connections ended by the server with Connection: close",
		l.ok.Load(), len(l.failures), l.freshResets.Load(), l.closedBy.Load())
	if len(l.failures) > 0 {
		t.Fatalf("%d failures, want none; first: %s", len(l.failures), strings.Join(l.failures[:min(5, len(l.failures))], "; "))
	}
}
