package acceptance

import (
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"strings"
	"syscall"
	"testing"
	"time"
)

// lbProc is one running `zero502 lb` in lab mode with an admin listener.
type lbProc struct {
	addr     string // proxy listener, 127.0.0.1:port
	admin    string // admin listener
	backends []*backendProc
	proc     *process
	client   *http.Client // keep-alive client for the proxy listener
}

// calm are health-check flags for the scenarios that are not about health checking: checks with
// a generous timeout and threshold, so a busy machine's slow answer does not eject a backend in
// the middle of a test about framing or rotation.
var calm = []string{"--health-interval", "1s", "--health-timeout", "900ms", "--unhealthy-threshold", "5"}

// startLB starts `zero502 lb --admin ADDR [flags] PORT BACKEND...` in front of backends and
// waits until its admin API answers and every backend is in rotation.
func startLB(t *testing.T, backends []*backendProc, flags ...string) *lbProc {
	t.Helper()
	needLB(t)
	var l *lbProc
	for attempt := 0; ; attempt++ {
		l = &lbProc{backends: backends}
		port, adminPort := freePort(t), freePort(t)
		l.addr, l.admin = "127.0.0.1:"+port, "127.0.0.1:"+adminPort
		args := append([]string{"lb", "--admin", l.admin}, flags...)
		if os.Getenv("ZERO502_TEST_LB_ENGINE") == "goroutines" { // .ci/run runs the suite through the slow path too
			args = append(args, "--slow-path-only")
		}
		args = append(args, port)
		for _, b := range backends {
			args = append(args, b.addr)
		}
		p, err := startProcess(t, io.Discard, bins.zero502, args...)
		if err != nil {
			t.Fatal(err)
		}
		l.proc = p
		err = l.waitReady(15 * time.Second)
		if err == nil {
			break
		}
		p.kill()
		// Another test may have taken the port between freePort and the bind: pick again.
		if attempt < 2 && strings.Contains(p.logs.String(), "address already in use") {
			continue
		}
		t.Fatalf("zero502 %s: %v\nlogs:\n%s", strings.Join(args, " "), err, tail(p.logs.String(), 4000))
	}
	l.client = &http.Client{
		Timeout:   20 * time.Second,
		Transport: &http.Transport{MaxIdleConnsPerHost: 32, Proxy: nil, DisableCompression: true},
	}
	t.Cleanup(func() {
		l.client.CloseIdleConnections()
		// With ZERO502_ACCEPTANCE_RACE=1 the LB runs under the race detector: a report fails the test.
		if strings.Contains(l.proc.logs.String(), "WARNING: DATA RACE") {
			t.Errorf("the race detector reported a data race in zero502 lb")
		}
		if t.Failed() {
			t.Logf("zero502 lb logs:\n%s", tail(l.proc.logs.String(), 6000))
		}
	})
	if len(backends) > 0 {
		l.waitInRotation(t, 15*time.Second, backends...)
	}
	return l
}

func (l *lbProc) waitReady(d time.Duration) error {
	deadline := time.Now().Add(d)
	for {
		if !l.proc.alive() {
			return fmt.Errorf("exited before its admin API answered: %v", l.proc.err)
		}
		resp, err := directClient.Get("http://" + l.admin + "/admin/health")
		if err == nil {
			resp.Body.Close()
			if resp.StatusCode == http.StatusOK {
				return nil
			}
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("admin %s/admin/health not 200 within %s (last: %v)", l.admin, d, err)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// get sends GET path through the LB on a keep-alive client and returns the response and body.
func (l *lbProc) get(path string) (*http.Response, []byte, error) {
	resp, err := l.client.Get("http://" + l.addr + path)
	if err != nil {
		return nil, nil, err
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	return resp, body, err
}

// mustGet is get that fails the test on a transport error.
func (l *lbProc) mustGet(t *testing.T, path string) (*http.Response, []byte) {
	t.Helper()
	resp, body, err := l.get(path)
	if err != nil {
		t.Fatalf("GET %s through the LB: %v", path, err)
	}
	return resp, body
}

// sequence sends n GET / one after another and returns the X-Backend of each; any non-200 fails.
func (l *lbProc) sequence(t *testing.T, n int) []string {
	t.Helper()
	names := make([]string, 0, n)
	for i := 0; i < n; i++ {
		resp, body := l.mustGet(t, "/")
		if resp.StatusCode != http.StatusOK {
			t.Fatalf("request %d of %d: status %d, body %q", i+1, n, resp.StatusCode, body)
		}
		names = append(names, resp.Header.Get("X-Backend"))
	}
	return names
}

// backendStatus is one entry of GET /admin/backends (docs/lb.md: Admin API).
type backendStatus struct {
	Address              string           `json:"address"`
	State                string           `json:"state"`
	InRotation           bool             `json:"in_rotation"`
	Since                string           `json:"since"`
	ConsecutiveFailures  int              `json:"consecutive_failures"`
	ConsecutiveSuccesses int              `json:"consecutive_successes"`
	LastCheck            string           `json:"last_check"`
	LastError            string           `json:"last_error"`
	InFlight             int              `json:"in_flight"`
	AdminDrained         bool             `json:"admin_drained"`
	Requests             map[string]int64 `json:"requests"`
	Transitions          []struct {
		At     string `json:"at"`
		From   string `json:"from"`
		To     string `json:"to"`
		Reason string `json:"reason"`
	} `json:"transitions"`
}

// adminGet fetches an admin path and returns status and body.
func (l *lbProc) adminGet(t *testing.T, path string) (*http.Response, []byte) {
	t.Helper()
	resp, err := directClient.Get("http://" + l.admin + path)
	if err != nil {
		t.Fatalf("admin GET %s: %v", path, err)
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatalf("admin GET %s: read body: %v", path, err)
	}
	return resp, body
}

// status is the LB's view of every backend, keyed by address.
func (l *lbProc) status(t *testing.T) map[string]backendStatus {
	t.Helper()
	resp, body := l.adminGet(t, "/admin/backends")
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("/admin/backends: status %d: %s", resp.StatusCode, body)
	}
	var doc struct{ Backends []backendStatus }
	if err := json.Unmarshal(body, &doc); err != nil {
		t.Fatalf("/admin/backends is not the contract's JSON: %v: %s", err, body)
	}
	out := make(map[string]backendStatus, len(doc.Backends))
	for _, b := range doc.Backends {
		out[b.Address] = b
	}
	return out
}

// waitInRotation polls the admin API until every given backend is in rotation; it returns how
// long that took.
func (l *lbProc) waitInRotation(t *testing.T, d time.Duration, backends ...*backendProc) time.Duration {
	t.Helper()
	return l.waitRotation(t, d, true, backends...)
}

// waitOutOfRotation polls until none of the given backends is in rotation.
func (l *lbProc) waitOutOfRotation(t *testing.T, d time.Duration, backends ...*backendProc) time.Duration {
	t.Helper()
	return l.waitRotation(t, d, false, backends...)
}

func (l *lbProc) waitRotation(t *testing.T, d time.Duration, want bool, backends ...*backendProc) time.Duration {
	t.Helper()
	return eventually(t, d, 25*time.Millisecond, func() (bool, string) {
		st := l.status(t)
		for _, b := range backends {
			s, ok := st[b.addr]
			if !ok {
				return false, fmt.Sprintf("backend %s missing from /admin/backends", b.addr)
			}
			if s.InRotation != want {
				return false, fmt.Sprintf("backend %s: state %q in_rotation %v, want in_rotation %v",
					b.addr, s.State, s.InRotation, want)
			}
		}
		return true, ""
	})
}

// signal sends sig to the LB process.
func (l *lbProc) signal(t *testing.T, sig syscall.Signal) {
	t.Helper()
	if err := l.proc.cmd.Process.Signal(sig); err != nil {
		t.Fatalf("signal %v to the LB: %v", sig, err)
	}
}

// requireAlive fails the test when the LB process has ended.
func (l *lbProc) requireAlive(t *testing.T) {
	t.Helper()
	if !l.proc.alive() {
		t.Fatalf("the LB process died: %v\nlogs:\n%s", l.proc.err, tail(l.proc.logs.String(), 4000))
	}
}

// eventually polls cond every interval until it holds or d has passed (then the test fails with
// cond's last explanation); it returns how long it took.
func eventually(t *testing.T, d, interval time.Duration, cond func() (bool, string)) time.Duration {
	t.Helper()
	start := time.Now()
	for {
		ok, why := cond()
		if ok {
			return time.Since(start)
		}
		if time.Since(start) > d {
			t.Fatalf("not within %s: %s", d, why)
		}
		time.Sleep(interval)
	}
}

// tally counts names.
func tally(names []string) map[string]int {
	m := map[string]int{}
	for _, n := range names {
		m[n]++
	}
	return m
}

// threeBackends starts backends a, b and c with the given extra flags.
func threeBackends(t *testing.T, extra ...string) []*backendProc {
	t.Helper()
	return []*backendProc{startBackend(t, "a", extra...), startBackend(t, "b", extra...), startBackend(t, "c", extra...)}
}

// dialLB opens a raw connection to addr.
func dialRaw(t *testing.T, addr string) net.Conn {
	t.Helper()
	c, err := net.DialTimeout("tcp", addr, 5*time.Second)
	if err != nil {
		t.Fatalf("dial %s: %v", addr, err)
	}
	t.Cleanup(func() { c.Close() })
	return c
}
