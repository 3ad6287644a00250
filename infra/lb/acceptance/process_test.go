package acceptance

import (
	"bufio"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"os/exec"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/zero502/zero502/internal/testrig/syncbuffer"
	"github.com/zero502/zero502/internal/testrig/tcpserver"
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
	b.start(freePort(t))
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
			port = freePort(t)
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

// freePort is a tcpserver.FreePort as the string a command line takes: free now and below the
// kernel's ephemeral range, so a backend killed and restarted on it keeps it (no outgoing
// connection of this or any other test can take it in between, as it could take an ephemeral one).
func freePort(t *testing.T) string { return strconv.Itoa(tcpserver.FreePort(t)) }
