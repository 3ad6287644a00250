package agent

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"io"
	"log/slog"
	"net"
	"net/netip"
	"os"
	"os/exec"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/zero502/zero502/internal/testrig/poll"
	"github.com/zero502/zero502/internal/testrig/tcpserver"
	"github.com/zero502/zero502/internal/testrig/testmain"
	"github.com/zero502/zero502/internal/testrig/testpki"
)

// zero502 is the command built once for the package's tests: the edges are real
// `zero502 edge forward` processes.
var zero502 string

func TestMain(m *testing.M) { os.Exit(testmain.Run(m, testmain.Options{Binary: &zero502})) }

const originName = "origin.example.test"

// newPKI is a server config with a certificate for originName that requires a client
// certificate of its CA (`agent-server --client-ca`, which trusted edges need), and the client
// config that trusts the CA and presents one.
func newPKI(t *testing.T) (server, client *tls.Config) {
	t.Helper()
	ca := testpki.New(t, "zero502 agent test CA")
	server, client = ca.Server(t, originName), ca.Client(originName)
	server.ClientCAs, server.ClientAuth = ca.Pool(), tls.RequireAndVerifyClientCert
	client.Certificates = []tls.Certificate{ca.Issue(t, x509.ExtKeyUsageClientAuth, "agent-1")}
	return server, client
}

// newPKIWithoutClientCerts is newPKI for a server that accepts any client
// (`agent-server --no-client-cert`).
func newPKIWithoutClientCerts(t *testing.T) (server, client *tls.Config) {
	t.Helper()
	ca := testpki.New(t, "zero502 agent test CA")
	return ca.Server(t, originName), ca.Client(originName)
}

// startServer runs an echo/ack Server on loopback and records what it applied.
func startServer(t *testing.T, conf *tls.Config) (*Server, string, func() map[string]int) {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	var mu sync.Mutex
	applied := map[string]int{}
	s := &Server{Listener: ln, TLS: conf, Dedup: NewDedupStore(0), Logger: testLogger(t),
		Trusted: []netip.Prefix{netip.MustParsePrefix("127.0.0.0/8")}, // the edges, on loopback
		Apply:   func(f Frame) { mu.Lock(); applied[f.ID]++; mu.Unlock() }}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- s.Serve(ctx) }()
	t.Cleanup(func() {
		cancel()
		if err := <-done; err != nil {
			t.Errorf("server: %v", err)
		}
	})
	return s, ln.Addr().String(), func() map[string]int {
		mu.Lock()
		defer mu.Unlock()
		out := make(map[string]int, len(applied))
		for k, v := range applied {
			out[k] = v
		}
		return out
	}
}

// edgeProc is a real `zero502 edge forward` process.
type edgeProc struct {
	addr netip.AddrPort
	cmd  *exec.Cmd
}

// startEdge runs `zero502 edge forward --listen addr --origin origin` and waits until it accepts.
func startEdge(t *testing.T, addr netip.AddrPort, origin string) *edgeProc {
	t.Helper()
	cmd := exec.Command(zero502, "edge", "forward", "--listen", addr.String(), "--origin", origin,
		"--drain", "0s", "--shutdown", "1s")
	cmd.Stderr = io.Discard
	if testing.Verbose() {
		cmd.Stderr = os.Stderr
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	e := &edgeProc{addr: addr, cmd: cmd}
	t.Cleanup(func() { e.kill() })
	poll.Until(t, 20*time.Second, "edge "+addr.String()+" accepting", func() bool {
		c, err := net.Dial("tcp", addr.String())
		if err == nil {
			c.Close()
		}
		return err == nil
	})
	return e
}

// kill ends the edge abruptly (SIGKILL): its sessions break mid-stream.
func (e *edgeProc) kill() {
	if e.cmd.ProcessState == nil {
		_ = e.cmd.Process.Signal(syscall.SIGKILL)
		_ = e.cmd.Wait()
	}
}

// freeAddr is tcpserver.FreeAddr as the netip.AddrPort an edge listens on.
func freeAddr(t *testing.T) netip.AddrPort { return netip.MustParseAddrPort(tcpserver.FreeAddr(t)) }

// startSlowPath is a TCP proxy to origin that holds the first bytes coming back from the origin
// for delay: an edge in front of it is a far edge (its TLS handshake takes delay longer).
func startSlowPath(t *testing.T, origin string, delay time.Duration) string {
	t.Helper()
	return tcpserver.Serve(t, func(c net.Conn) {
		up, err := net.Dial("tcp", origin)
		if err != nil {
			return
		}
		defer up.Close()
		go func() { _, _ = io.Copy(up, c); up.Close() }()
		buf := make([]byte, 32<<10)
		for first := true; ; first = false {
			n, err := up.Read(buf)
			if n > 0 {
				if first {
					time.Sleep(delay) // the far path's latency, not an assertion
				}
				if _, werr := c.Write(buf[:n]); werr != nil {
					return
				}
			}
			if err != nil {
				return
			}
		}
	})
}

func testLogger(t *testing.T) *slog.Logger {
	if testing.Verbose() {
		return slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelDebug}))
	}
	return slog.New(slog.DiscardHandler)
}

// events records an agent's events.
type events struct {
	mu  sync.Mutex
	all []Event
}

func (e *events) add(ev Event) { e.mu.Lock(); e.all = append(e.all, ev); e.mu.Unlock() }

func (e *events) list() []Event {
	e.mu.Lock()
	defer e.mu.Unlock()
	return append([]Event(nil), e.all...)
}

func (e *events) last(kind eventKind) (Event, bool) {
	l := e.list()
	for i := len(l) - 1; i >= 0; i-- {
		if l[i].Kind == kind {
			return l[i], true
		}
	}
	return Event{}, false
}

// runAgent runs a until the test ends.
func runAgent(t *testing.T, a *Agent) {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { defer close(done); _ = a.Run(ctx) }()
	t.Cleanup(func() { cancel(); <-done })
}
