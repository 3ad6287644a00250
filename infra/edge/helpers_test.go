package edge

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"io"
	"log/slog"
	"net"
	"net/netip"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/zero502/zero502/infra/origin"
	"github.com/zero502/zero502/internal/testrig/poll"
	"github.com/zero502/zero502/internal/testrig/tcpserver"
)

// deadline bounds every wait for a state; the tests poll, they never sleep a fixed time.
const deadline = 10 * time.Second

// logs captures JSON log lines from every component of a test.
type logs struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func newLogs() (*slog.Logger, *logs) {
	l := &logs{}
	return slog.New(slog.NewJSONHandler(l, &slog.HandlerOptions{Level: slog.LevelDebug})), l
}

func (l *logs) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.buf.Write(p)
}

// lines are the captured lines, decoded.
func (l *logs) lines(t *testing.T) []map[string]any {
	t.Helper()
	l.mu.Lock()
	defer l.mu.Unlock()
	var out []map[string]any
	for _, s := range strings.Split(strings.TrimSpace(l.buf.String()), "\n") {
		if s == "" {
			continue
		}
		var m map[string]any
		if err := json.Unmarshal([]byte(s), &m); err != nil {
			t.Fatalf("log line is not JSON: %q: %v", s, err)
		}
		out = append(out, m)
	}
	return out
}

// withMsg are the captured lines whose msg is msg.
func (l *logs) withMsg(t *testing.T, msg string) []map[string]any {
	t.Helper()
	var out []map[string]any
	for _, m := range l.lines(t) {
		if m["msg"] == msg {
			out = append(out, m)
		}
	}
	return out
}

func (l *logs) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.buf.String()
}

// trailer is what the test backend writes after it read EOF: the client reading it proves the
// half-close went through to the backend and the backend's own EOF came back.
const trailer = "after-eof\n"

// startBackend is the local backend behind the relay on 127.0.0.1:0: a connection whose first
// line is "who\n" gets, instead of its echo, one JSON line: the origin.Peer the innerMap has for it and
// the address the backend saw ("inner"). Every other byte is echoed; after EOF it writes trailer
// and half-closes.
func startBackend(t *testing.T, m *innerMap) string {
	t.Helper()
	return tcpserver.Serve(t, func(c net.Conn) { serveBackendConn(c, m) })
}

type whoAnswer struct {
	origin.Peer
	Found bool   `json:"found"`
	Inner string `json:"inner"`
}

func serveBackendConn(c net.Conn, m *innerMap) {
	defer c.Close()
	r := bufio.NewReader(c)
	first, err := r.ReadString('\n')
	if first == "who\n" {
		var a whoAnswer
		if m != nil {
			a.Peer, a.Found = m.LookupAddr(c.RemoteAddr())
		}
		a.Inner = c.RemoteAddr().String()
		if err := json.NewEncoder(c).Encode(a); err != nil {
			return
		}
	} else if _, werr := io.WriteString(c, first); werr != nil {
		return
	}
	if err != nil && err != io.EOF {
		return
	}
	if _, err := io.Copy(c, r); err != nil {
		return
	}
	_, _ = io.WriteString(c, trailer)
	_ = c.(*net.TCPConn).CloseWrite()
	_, _ = io.Copy(io.Discard, r)
}

// startRelay opens r (Listen 127.0.0.1:0 unless set) and serves it until the test ends.
func startRelay(t *testing.T, r *Relay) *Relay {
	t.Helper()
	if r.Listen == "" {
		r.Listen = "127.0.0.1:0"
	}
	if err := r.Open(); err != nil {
		t.Fatal(err)
	}
	serveUntilCleanup(t, r.Serve)
	return r
}

// startForwarder opens f (Listen 127.0.0.1:0 unless set) and serves it until the test ends.
// startForwarder opens and serves f. Unless the test sets one, the check interval is an hour:
// each upstream is checked once at the start (a TCP connect, which the origin counts as an empty
// connection), and startForwarder returns after that check, so counts taken afterwards see
// only the test's own connections.
func startForwarder(t *testing.T, f *Forwarder) *Forwarder {
	t.Helper()
	if f.Listen == "" {
		f.Listen = "127.0.0.1:0"
	}
	if f.Check.Interval == 0 {
		f.Check.Interval = time.Hour
	}
	ForTests(f)
	if err := f.Open(); err != nil {
		t.Fatal(err)
	}
	serveUntilCleanup(t, f.Serve)
	poll.Until(t, deadline, "the first check of every upstream", func() bool {
		for _, u := range f.Upstreams() {
			if u.LastCheck.IsZero() || u.LastCheck.Equal(time.Time{}.UTC()) {
				return false
			}
		}
		return true
	})
	return f
}

func serveUntilCleanup(t *testing.T, serve func(context.Context) error) {
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- serve(ctx) }()
	t.Cleanup(func() {
		cancel()
		select {
		case err := <-done:
			if err != nil {
				t.Errorf("Serve = %v", err)
			}
		case <-time.After(deadline):
			t.Errorf("Serve did not return %s after cancel", deadline)
		}
	})
}

// dialFrom dials addr from the loopback address src (127.0.0.2 makes the client's address
// differ from an edge's 127.0.0.1 by more than the port).
func dialFrom(t *testing.T, src, addr string) *net.TCPConn {
	t.Helper()
	d := net.Dialer{Timeout: deadline, LocalAddr: &net.TCPAddr{IP: net.ParseIP(src)}}
	c, err := d.Dial("tcp", addr)
	if err != nil {
		t.Fatalf("dial %s from %s: %v", addr, src, err)
	}
	t.Cleanup(func() { c.Close() })
	_ = c.SetDeadline(time.Now().Add(deadline))
	return c.(*net.TCPConn)
}

// ask sends "who\n" on c and decodes the backend's answer.
func ask(t *testing.T, c net.Conn, r *bufio.Reader) whoAnswer {
	t.Helper()
	if _, err := io.WriteString(c, "who\n"); err != nil {
		t.Fatalf("write who: %v", err)
	}
	line, err := r.ReadBytes('\n')
	if err != nil {
		t.Fatalf("read the backend's answer: %v", err)
	}
	var a whoAnswer
	if err := json.Unmarshal(line, &a); err != nil {
		t.Fatalf("answer %q: %v", line, err)
	}
	return a
}

// echoLine writes msg and a newline on c and wants it back.
func echoLine(t *testing.T, c net.Conn, r *bufio.Reader, msg string) {
	t.Helper()
	if _, err := io.WriteString(c, msg+"\n"); err != nil {
		t.Fatalf("write %q: %v", msg, err)
	}
	got, err := r.ReadString('\n')
	if err != nil || got != msg+"\n" {
		t.Fatalf("echo of %q = %q, %v", msg, got, err)
	}
}

// closedByPeer reports whether reading c ends (EOF or reset) rather than yielding data.
func closedByPeer(c net.Conn) bool {
	_ = c.SetReadDeadline(time.Now().Add(deadline))
	_, err := c.Read(make([]byte, 1))
	return err != nil && !isTimeout(err)
}

func isTimeout(err error) bool {
	ne, ok := err.(net.Error)
	return ok && ne.Timeout()
}

// refused reports whether a dial to addr fails.
func refused(addr string) bool {
	c, err := net.DialTimeout("tcp", addr, time.Second)
	if err == nil {
		c.Close()
		return false
	}
	return true
}

func mustAddrPort(t *testing.T, a net.Addr) netip.AddrPort {
	t.Helper()
	ap := origin.AddrPort(a)
	if !ap.IsValid() {
		t.Fatalf("%v is not ip:port", a)
	}
	return ap
}
