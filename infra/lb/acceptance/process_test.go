package acceptance

import (
	"bufio"
	"encoding/json"
	"fmt"
	"io"
	"math/rand/v2"
	"net"
	"net/http"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/zero502/zero502/infra/ports"
	"github.com/zero502/zero502/internal/testrig/syncbuffer"
)

// tail is the last n bytes of s, for logs that may be long.
func tail(s string, n int) string {
	if len(s) <= n {
		return s
	}
	return "…" + s[len(s)-n:]
}

// process is one started program and the result of its end.
type process struct {
	cmd    *exec.Cmd
	logs   *syncbuffer.Buffer
	exited chan struct{} // closed when the process has ended; err is then set
	err    error
}

func startProcess(t *testing.T, stdout io.Writer, bin string, args ...string) (*process, error) {
	t.Helper()
	p := &process{cmd: exec.Command(bin, args...), logs: &syncbuffer.Buffer{}, exited: make(chan struct{})}
	p.cmd.Stdout = stdout
	p.cmd.Stderr = p.logs
	if err := p.cmd.Start(); err != nil {
		return nil, fmt.Errorf("start %s %s: %w", bin, strings.Join(args, " "), err)
	}
	go func() {
		p.err = p.cmd.Wait()
		close(p.exited)
	}()
	t.Cleanup(func() { p.kill() })
	return p, nil
}

// kill sends SIGKILL and waits for the end (a no-op when it already ended).
func (p *process) kill() {
	select {
	case <-p.exited:
		return
	default:
	}
	_ = p.cmd.Process.Signal(syscall.SIGKILL)
	<-p.exited
}

func (p *process) alive() bool {
	select {
	case <-p.exited:
		return false
	default:
		return true
	}
}

// backendProc is one running test backend.
type backendProc struct {
	t    *testing.T
	name string
	addr string // 127.0.0.1:port, as the LB is given it
	args []string
	proc *process
}

// startBackend starts a test backend named name on a free port; extra are more flags.
func startBackend(t *testing.T, name string, extra ...string) *backendProc {
	t.Helper()
	b := &backendProc{t: t, name: name, args: extra}
	b.start(stablePort(t))
	return b
}

func (b *backendProc) start(port string) {
	t := b.t
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for {
		pr, pw := io.Pipe()
		args := append([]string{"--name", b.name, "--port", port}, b.args...)
		p, err := startProcess(t, pw, bins.backend, args...)
		if err != nil {
			t.Fatal(err)
		}
		lines := make(chan string, 1)
		go func() {
			line, _ := bufio.NewReader(pr).ReadString('\n')
			lines <- line
			_, _ = io.Copy(io.Discard, pr)
		}()
		go func() { <-p.exited; pw.Close() }()
		var first struct{ Addr string }
		select {
		case line := <-lines:
			if json.Unmarshal([]byte(line), &first) == nil && first.Addr != "" {
				b.addr, b.proc = first.Addr, p
				return
			}
		case <-time.After(10 * time.Second):
		}
		p.kill()
		if b.addr == "" { // a first start may lose its port to a parallel test: take another
			port = stablePort(t)
		}
		// A restart on the same port can race with the kernel releasing it: try again.
		if time.Now().After(deadline) {
			t.Fatalf("backend %s did not start on port %s: %s", b.name, port, tail(p.logs.String(), 2000))
		}
		time.Sleep(100 * time.Millisecond)
	}
}

// kill SIGKILLs the backend (the lab's "падіння бекенда").
func (b *backendProc) kill() { b.proc.kill() }

// restart starts the backend again on the same port, as a fresh process (counters reset).
func (b *backendProc) restart() {
	b.t.Helper()
	_, port, _ := net.SplitHostPort(b.addr)
	b.start(port)
}

// get sends GET path directly to the backend (not through the LB).
func (b *backendProc) get(t *testing.T, path string) (int, string) {
	t.Helper()
	resp, err := directClient.Get("http://" + b.addr + path)
	if err != nil {
		t.Fatalf("backend %s: GET %s: %v", b.name, path, err)
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, string(body)
}

// count is how many "METHOD /path" requests this backend process has received.
func (b *backendProc) count(t *testing.T, methodPath string) int64 {
	t.Helper()
	_, body := b.get(t, "/stats")
	var s struct{ Requests map[string]int64 }
	if err := json.Unmarshal([]byte(body), &s); err != nil {
		t.Fatalf("backend %s: /stats: %v: %q", b.name, err, body)
	}
	return s.Requests[methodPath]
}

// directClient talks to backends and admin listeners; no keep-alive so a killed process leaves
// no stale pooled connection behind.
var directClient = &http.Client{
	Timeout:   10 * time.Second,
	Transport: &http.Transport{DisableKeepAlives: true, Proxy: nil},
}

// stablePort picks a free loopback port below the kernel's ephemeral range, for a backend that
// may be killed and restarted on the same port: no outgoing connection of this or any other test
// can take it in between, as it could take an ephemeral one.
func stablePort(t *testing.T) string {
	t.Helper()
	lo, hi := 20000, 32768
	if b, err := os.ReadFile("/proc/sys/net/ipv4/ip_local_port_range"); err == nil {
		if f := strings.Fields(string(b)); len(f) == 2 {
			if n, err := strconv.Atoi(f[0]); err == nil && n > lo+1000 {
				hi = n
			}
		}
	}
	for range 100 {
		port := strconv.Itoa(lo + rand.IntN(hi-lo))
		if ln, err := net.Listen("tcp", "127.0.0.1:"+port); err == nil {
			ln.Close()
			return port
		}
	}
	t.Fatalf("no free port in %d..%d", lo, hi)
	return ""
}

// freePort picks a free loopback port below the ephemeral range (infra/ports), released for the
// child to bind.
func freePort(t *testing.T) string {
	t.Helper()
	ps, err := ports.Free(1)
	if err != nil {
		t.Fatal(err)
	}
	return strconv.Itoa(ps[0])
}
