package edgepick

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"io"
	"log/slog"
	"net"
	"net/netip"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/zero502/zero502/internal/testrig/syncbuffer"
	"github.com/zero502/zero502/internal/testrig/testpki"
)

// originName is the name the test origin's certificate is issued for.
const originName = "origin.example.test"

// testPKI is a certificate for originName and the pool that trusts its CA.
type testPKI struct {
	cert tls.Certificate
	pool *x509.CertPool
}

func newPKI(t *testing.T) testPKI {
	t.Helper()
	ca := testpki.New(t, "zero502 edgepick test CA")
	return testPKI{cert: ca.Issue(t, x509.ExtKeyUsageServerAuth, originName), pool: ca.Pool()}
}

// client is the agent's TLS config: verify the origin's certificate for originName.
func (p testPKI) client() *tls.Config {
	return &tls.Config{RootCAs: p.pool, ServerName: originName}
}

// delayListener delays each accepted connection's first write (the ServerHello) by delay: an
// edge whose path to the origin is that much longer.
type delayListener struct {
	net.Listener
	delay time.Duration
}

func (l delayListener) Accept() (net.Conn, error) {
	c, err := l.Listener.Accept()
	if err != nil {
		return nil, err
	}
	return &delayConn{Conn: c, delay: l.delay}, nil
}

type delayConn struct {
	net.Conn
	delay time.Duration
	once  sync.Once
}

func (c *delayConn) Write(b []byte) (int, error) {
	c.once.Do(func() { time.Sleep(c.delay) })
	return c.Conn.Write(b)
}

// conns closes every connection a test server accepted when the test ends.
type conns struct {
	mu sync.Mutex
	cs []net.Conn
}

func (c *conns) add(conn net.Conn) {
	c.mu.Lock()
	c.cs = append(c.cs, conn)
	c.mu.Unlock()
}

func (c *conns) closeAll() {
	c.mu.Lock()
	defer c.mu.Unlock()
	for _, conn := range c.cs {
		_ = conn.Close()
	}
}

// listenLoopback is a TCP listener on 127.0.0.1, closed with its connections at the end.
func listenLoopback(t *testing.T) (net.Listener, *conns, netip.AddrPort) {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	cs := &conns{}
	t.Cleanup(func() { _ = ln.Close(); cs.closeAll() })
	return ln, cs, ln.Addr().(*net.TCPAddr).AddrPort()
}

// startTLSEdge is a working edge (edge and origin in one: it finishes the TLS handshake),
// answering the handshake delay later than it could.
func startTLSEdge(t *testing.T, pki testPKI, delay time.Duration) netip.AddrPort {
	t.Helper()
	ln, cs, addr := listenLoopback(t)
	tln := tls.NewListener(delayListener{Listener: ln, delay: delay}, &tls.Config{Certificates: []tls.Certificate{pki.cert}})
	go func() {
		for {
			c, err := tln.Accept()
			if err != nil {
				return
			}
			cs.add(c)
			go func() {
				defer c.Close()
				_ = c.(*tls.Conn).Handshake()
				_, _ = io.Copy(io.Discard, c)
			}()
		}
	}()
	return addr
}

// startSilentEdge accepts TCP and then says nothing: a forwarder that forwards nothing. A plain
// connect to it succeeds.
func startSilentEdge(t *testing.T) netip.AddrPort {
	t.Helper()
	ln, cs, addr := listenLoopback(t)
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			cs.add(c)
		}
	}()
	return addr
}

// closedPort is a loopback address nobody listens on: connects are refused.
func closedPort(t *testing.T) netip.AddrPort {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := ln.Addr().(*net.TCPAddr).AddrPort()
	_ = ln.Close()
	return addr
}

// fixedResolver answers every lookup with ips (or err): a fixed A set.
type fixedResolver struct {
	ips []netip.Addr
	err error
}

func (r fixedResolver) LookupNetIP(context.Context, string, string) ([]netip.Addr, error) {
	return r.ips, r.err
}

// counted wraps a probe and counts its calls.
type counted struct {
	probe probeFunc
	n     atomic.Int64
}

func (c *counted) Probe(ctx context.Context, a netip.AddrPort) Measurement {
	c.n.Add(1)
	return c.probe(ctx, a)
}

// logs collects a slog.Logger's text lines (logger) for the test to read.
type logs struct{ syncbuffer.Buffer }

func (l *logs) logger() *slog.Logger { return slog.New(slog.NewTextHandler(l, nil)) }

func ap(s string) netip.AddrPort { return netip.MustParseAddrPort(s) }

func ms(n float64) time.Duration { return time.Duration(n * float64(time.Millisecond)) }
