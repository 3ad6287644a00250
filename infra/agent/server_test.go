package agent

import (
	"bytes"
	"context"
	"crypto/tls"
	"io"
	"log/slog"
	"net"
	"net/netip"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/zero502/zero502/infra/edgepick"
	"github.com/zero502/zero502/internal/testrig/poll"
)

// proxiedSession dials addr, sends a PROXY v1 header claiming 192.0.2.7, then the TLS session,
// and sends one message: its ack, or the error that ended it.
func proxiedSession(t *testing.T, addr string, client *tls.Config) (Frame, error) {
	t.Helper()
	raw, err := net.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	defer raw.Close()
	_ = raw.SetDeadline(time.Now().Add(10 * time.Second))
	if _, err := raw.Write([]byte("PROXY TCP4 192.0.2.7 127.0.0.1 40000 443\r\n")); err != nil {
		t.Fatal(err)
	}
	c := tls.Client(raw, client)
	if err := c.Handshake(); err != nil {
		return Frame{}, err
	}
	if err := writeFrame(c, Frame{Kind: kindMsg, ID: "m1", Body: "b"}); err != nil {
		return Frame{}, err
	}
	return readFrame(c)
}

// With no trusted edges a PROXY header is believed from no one: the connection that sends one
// is closed before its handshake and nothing is applied. With the peer's range trusted, the same
// connection is served. A connection without a header is served either way.
func TestAPROXYHeaderIsBelievedOnlyFromATrustedEdge(t *testing.T) {
	server, client := newPKI(t)
	applied := 0
	untrusting := &Server{Dedup: NewDedupStore(0), Apply: func(Frame) { applied++ }}
	addr := serveWith(t, untrusting, server)
	if ack, err := proxiedSession(t, addr, client); err == nil {
		t.Fatalf("a PROXY header with no --trusted edges: acknowledged %+v; want the connection closed", ack)
	}
	if acks, err := sendIDs(t, addr, client, "direct"); err != nil || len(acks) != 1 {
		t.Fatalf("a direct agent (no header) with no --trusted edges: %v %v; want it served", acks, err)
	}
	if c := untrusting.Counts(); applied != 1 || c.Applied != 1 {
		t.Fatalf("applied %d (counts %+v); want only the direct agent's message", applied, c)
	}

	trusting := &Server{Dedup: NewDedupStore(0), Trusted: []netip.Prefix{netip.MustParsePrefix("127.0.0.0/8")}}
	if ack, err := proxiedSession(t, serveWith(t, trusting, server), client); err != nil || ack.Kind != kindAck {
		t.Fatalf("a PROXY header from a trusted edge: %+v %v; want the message acknowledged", ack, err)
	}
	other := &Server{Dedup: NewDedupStore(0), Trusted: []netip.Prefix{netip.MustParsePrefix("10.0.0.0/8")}}
	if ack, err := proxiedSession(t, serveWith(t, other, server), client); err == nil {
		t.Fatalf("a PROXY header from outside the trusted edges: acknowledged %+v; want the connection closed", ack)
	}
}

// addrListener is a listener that reports another address: a Server judges where it serves by
// its listener's address.
type addrListener struct {
	net.Listener
	addr net.Addr
}

func (l addrListener) Addr() net.Addr { return l.addr }

// Without a verified client certificate a Server serves on loopback only: on any other address
// Serve refuses, naming the address and what to give.
func TestAServerWithoutClientCertsServesOnLoopbackOnly(t *testing.T) {
	server, _ := newPKIWithoutClientCerts(t)
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	for _, addr := range []string{"0.0.0.0:9443", "[::]:9443", "10.0.0.5:9443"} {
		tcp := net.TCPAddrFromAddrPort(netip.MustParseAddrPort(addr))
		s := &Server{Listener: addrListener{ln, tcp}, TLS: server, Dedup: NewDedupStore(0), Logger: testLogger(t)}
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		err := s.Serve(ctx)
		cancel()
		if err == nil || !strings.Contains(err.Error(), addr) || !strings.Contains(err.Error(), "not loopback") ||
			!strings.Contains(err.Error(), "client CA") {
			t.Errorf("no client certificate on %s: %v; want refused naming the address and the fix", addr, err)
		}
	}
	withCA := server.Clone()
	withCA.ClientAuth = tls.RequireAndVerifyClientCert
	s := &Server{Listener: addrListener{ln, net.TCPAddrFromAddrPort(netip.MustParseAddrPort("10.0.0.5:9443"))}, TLS: withCA,
		Dedup: NewDedupStore(0), Logger: testLogger(t)}
	ctx, cancel := context.WithTimeout(context.Background(), 200*time.Millisecond)
	defer cancel()
	if err := s.Serve(ctx); err != nil {
		t.Fatalf("client certificates required on 10.0.0.5:9443: %v; want served until the context ended", err)
	}
}

// acceptFailing is a listener whose first fails Accepts fail as when the process is out of file
// descriptors, with the listener still open.
type acceptFailing struct {
	net.Listener
	fails atomic.Int64
}

func (l *acceptFailing) Accept() (net.Conn, error) {
	if l.fails.Add(-1) >= 0 {
		return nil, &net.OpError{Op: "accept", Net: "tcp", Addr: l.Addr(), Err: syscall.EMFILE}
	}
	return l.Listener.Accept()
}

// An accept that fails with the listener still open (out of file descriptors) is retried after a
// pause: the agent that connects next is served.
func TestAServerRetriesAFailedAcceptAndServesTheNextAgent(t *testing.T) {
	server, client := newPKI(t)
	inner, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	ln := &acceptFailing{Listener: inner}
	ln.fails.Store(3)
	s := &Server{Listener: ln, TLS: server, Dedup: NewDedupStore(0), Logger: testLogger(t)}
	ctx, cancel := context.WithCancel(context.Background())
	served := make(chan error, 1)
	go func() { served <- s.Serve(ctx) }()
	defer func() { cancel(); <-served }()

	poll.Until(t, 5*time.Second, "the three failing accepts", func() bool { return ln.fails.Load() < 0 })
	select {
	case err := <-served:
		t.Fatalf("Serve returned after an EMFILE accept: %v; want it retried", err)
	default:
	}
	if acks, err := sendIDs(t, inner.Addr().String(), client, "after-emfile"); err != nil || len(acks) != 1 {
		t.Fatalf("an agent after three failed accepts: acks %v, %v; want its message acknowledged", acks, err)
	}
}

// A listener closed underneath a Server (not by its context) ends Serve with an error, though a
// session is open: the open sessions are closed too, not waited for.
func TestServeReturnsWhenItsListenerIsClosedWithASessionOpen(t *testing.T) {
	server, client := newPKI(t)
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	s := &Server{Listener: ln, TLS: server, Dedup: NewDedupStore(0), Logger: testLogger(t)}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	served := make(chan error, 1)
	go func() { served <- s.Serve(ctx) }()

	c, err := tls.Dial("tcp", ln.Addr().String(), client)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	_ = c.SetDeadline(time.Now().Add(10 * time.Second))
	if err := writeFrame(c, Frame{Kind: kindMsg, ID: "one", Body: "b"}); err != nil {
		t.Fatal(err)
	}
	if _, err := readFrame(c); err != nil {
		t.Fatalf("the open session's message: %v; want an ack", err)
	}

	ln.Close()
	select {
	case err := <-served:
		if err == nil || !strings.Contains(err.Error(), ln.Addr().String()) || !strings.Contains(err.Error(), "listener was closed") {
			t.Errorf("Serve returned %v; want an error naming the address and that the listener was closed", err)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("Serve did not return 5s after its listener was closed with a session open")
	}
	if f, err := readFrame(c); err == nil {
		t.Errorf("the open session read %+v after Serve returned; want it closed", f)
	}
}

// Trusted edges relay clients from anywhere: through an edge on the same host a client on the
// internet arrives from loopback. So a Server with trusted edges refuses to start without a
// verified client certificate, even on loopback, naming the rule and the fix.
func TestAServerWithTrustedEdgesRequiresAClientCertificateEvenOnLoopback(t *testing.T) {
	anyClient, _ := newPKIWithoutClientCerts(t)
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	s := &Server{Listener: ln, TLS: anyClient, Dedup: NewDedupStore(0), Logger: testLogger(t),
		Trusted: []netip.Prefix{netip.MustParsePrefix("127.0.0.0/8")}}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	err = s.Serve(ctx)
	if err == nil || ctx.Err() != nil {
		t.Fatalf("trusted edges without client certificates: Serve returned %v after %v; want it refused at once", err, ctx.Err())
	}
	for _, want := range []string{"trusted edges [127.0.0.0/8]", "client certificate", "--client-ca"} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("%v; want it to say %q", err, want)
		}
	}
}

// lockedBuffer is a log destination the server's goroutines write to while the test reads.
type lockedBuffer struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (b *lockedBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.Write(p)
}

func (b *lockedBuffer) String() string { b.mu.Lock(); defer b.mu.Unlock(); return b.buf.String() }

// A peer that completes the handshake and then speaks something else (an HTTPS client pointed at
// the agent server: "GET " announces a frame of a gigabyte) is closed with a warning that says
// so, as readFrame words it; it is not taken for an edge's probe, which handshakes and closes
// without a word and is not logged.
func TestAPeerThatIsNotAnAgentIsLoggedNotTakenForAProbe(t *testing.T) {
	server, client := newPKI(t)
	var logs lockedBuffer
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	s := &Server{Listener: ln, TLS: server, Dedup: NewDedupStore(0), Logger: slog.New(slog.NewTextHandler(&logs, nil))}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- s.Serve(ctx) }()
	t.Cleanup(func() { cancel(); <-done })
	addr := netip.MustParseAddrPort(ln.Addr().String())

	if m := edgepick.Probe(context.Background(), addr, client, 5*time.Second); m.Err != nil {
		t.Fatalf("the probe: %v", m.Err)
	}
	c, err := tls.Dial("tcp", addr.String(), client)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	_ = c.SetDeadline(time.Now().Add(10 * time.Second))
	if _, err := io.WriteString(c, "GET / HTTP/1.1\r\nHost: "+originName+"\r\n\r\n"); err != nil {
		t.Fatal(err)
	}
	if n, err := io.Copy(io.Discard, c); err != nil || n != 0 {
		t.Fatalf("the HTTPS client got %d bytes, %v; want the connection closed", n, err)
	}
	poll.Until(t, 5*time.Second, "a warning naming the peer that is not an agent", func() bool {
		return strings.Contains(logs.String(), "not a zero502 agent peer")
	})
	if warns := strings.Count(logs.String(), "level=WARN"); warns != 1 {
		t.Fatalf("%d warnings, want one (the HTTPS client's, not the probe's):\n%s", warns, logs.String())
	}
	if c := s.Counts(); c.Sessions != 0 || c.Applied != 0 {
		t.Fatalf("counts %+v, want no session and nothing applied", c)
	}
}
