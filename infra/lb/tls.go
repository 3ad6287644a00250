package lb

import (
	"bufio"
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"net"
	"net/http"
	"sync/atomic"
	"time"

	"github.com/zero502/zero502/infra/lb/tlscert"
	"github.com/zero502/zero502/infra/origin"
)

// tlsFront is HTTPS at the LB (Settings.TLS, balancer.tls): a TLS listener whose connections,
// once their handshake is done, are served on the goroutine path exactly as plain ones (the same
// exchange, retries, drain, WebSockets; never an event loop, whose bytes are the socket's), and
// the optional plain HTTP listener that redirects to it and answers ACME's HTTP-01.
type tlsFront struct {
	ln       net.Listener
	config   *tls.Config
	certs    *tlscert.Source
	http     net.Listener // nil: no redirect listener
	redirect *http.Server
}

// certReload is how often the certificate files are looked at for a change.
const certReload = time.Second

// listenTLS reads the certificates (refusing a bad file before anything listens) and opens the
// TLS and redirect listeners.
func (s *Server) listenTLS(listen func(network, addr string) (net.Listener, error)) error {
	t := s.set.TLS
	if !t.On() {
		return nil
	}
	certs, err := tlscert.New(t, s.log)
	if err != nil {
		return err
	}
	f := &tlsFront{certs: certs, config: certs.Config()}
	if f.ln, err = listen("tcp", t.Listen); err != nil {
		return fmt.Errorf("TLS listener on %s (balancer.tls.listen): %w", t.Listen, err)
	}
	if t.RedirectHTTP != "" {
		if f.http, err = listen("tcp", t.RedirectHTTP); err != nil {
			_ = f.ln.Close()
			return fmt.Errorf("HTTP redirect listener on %s (balancer.tls.redirect_http): %w", t.RedirectHTTP, err)
		}
		_, port, _ := net.SplitHostPort(f.ln.Addr().String())
		// the proxy listener's limits on a request head: its time and its size
		f.redirect = &http.Server{Handler: certs.HTTPHandler(port), ReadHeaderTimeout: s.set.ClientHeaderTimeout,
			IdleTimeout: s.set.ClientIdleTimeout, MaxHeaderBytes: s.set.MaxHeaderBytes}
	}
	s.tls = f
	return nil
}

// TLSAddr is the TLS listener's address, or "" without TLS.
func (s *Server) TLSAddr() string {
	if s.tls == nil {
		return ""
	}
	return s.tls.ln.Addr().String()
}

// RedirectAddr is the HTTP redirect listener's address, or "" without one.
func (s *Server) RedirectAddr() string {
	if s.tls == nil || s.tls.http == nil {
		return ""
	}
	return s.tls.http.Addr().String()
}

// CertReloads counts the certificate file reloads that took effect.
func (s *Server) CertReloads() uint64 {
	if s.tls == nil {
		return 0
	}
	return s.tls.certs.Reloads.Load()
}

// runTLS accepts on the TLS listener, watches the certificate files and serves the redirect
// listener until the drain stops them (stopTLS); a failed accept is sent to acceptErr.
func (s *Server) runTLS(ctx context.Context, acceptErr chan<- error) {
	f := s.tls
	if f == nil {
		return
	}
	go f.certs.Watch(ctx, certReload)
	go func() {
		if err := s.acceptFrom(f.ln, func(c net.Conn) {
			// counted from its accept, as a plain connection is: max_conns holds connections
			// in their handshake too, and the drain waits for them; with accept_proxy_from, the
			// TLS bytes may follow a PROXY header, which the handshake sniffs first
			var sniff *bufio.Reader
			under := c
			if s.proxyFrom != nil {
				sniff = bufio.NewReaderSize(c, origin.SniffBufferSize)
				under = &sniffedConn{Conn: c, r: sniff}
			}
			cc := newClientConn(tls.Server(under, f.config))
			if !s.track(cc) {
				_ = c.Close()
				return
			}
			go s.handshake(cc, sniff)
		}); err != nil {
			acceptErr <- fmt.Errorf("TLS listener: %w", err)
		}
	}()
	if f.redirect != nil {
		go func() {
			if err := f.redirect.Serve(cappedListener{Listener: f.http, s: s}); err != nil && !errors.Is(err, http.ErrServerClosed) {
				s.log.Error("HTTP redirect listener failed", "err", err)
			}
		}()
	}
}

// cappedListener is the redirect listener under max_conns: its connections count with the
// proxy listeners' (atConnCap) from their accept to their close, and one over the cap is closed
// at once and counted as refused, as on the proxy listener, so the plain HTTP port cannot hold
// more descriptors than the LB was given.
type cappedListener struct {
	net.Listener
	s *Server
}

func (l cappedListener) Accept() (net.Conn, error) {
	for {
		c, err := l.Listener.Accept()
		if err != nil {
			return nil, err
		}
		if l.s.atConnCap() {
			_ = c.Close()
			continue
		}
		l.s.redirecting.Add(1)
		return &redirectConn{Conn: c, open: &l.s.redirecting}, nil
	}
}

// redirectConn is a redirect listener's connection, counted in open until its first Close.
type redirectConn struct {
	net.Conn
	open   *atomic.Int64
	closed atomic.Bool
}

func (c *redirectConn) Close() error {
	if c.closed.CompareAndSwap(false, true) {
		c.open.Add(-1)
	}
	return c.Conn.Close()
}

// handshake completes cc's TLS handshake within balancer.tls.handshake_timeout, then serves its
// requests on the goroutine path. With sniff (accept_proxy_from), a PROXY header comes first,
// as on the plain listener (sniffProxy).
func (s *Server) handshake(cc *clientConn, sniff *bufio.Reader) {
	if sniff != nil && !s.sniffProxy(cc, sniff) {
		return
	}
	tc := cc.conn.(*tls.Conn)
	_ = tc.SetDeadline(time.Now().Add(s.set.TLS.HandshakeTimeout))
	if err := tc.Handshake(); err != nil {
		s.metrics.tlsHandshakeFailures.Inc()
		s.closeConn(cc)
		return
	}
	_ = tc.SetDeadline(time.Time{})
	s.serveConn(cc, false)
}

// sniffedConn is a TLS connection's socket read through the reader that sniffed its PROXY
// header: the handshake reads what the sniff buffered after it first.
type sniffedConn struct {
	net.Conn
	r *bufio.Reader
}

func (c *sniffedConn) Read(p []byte) (int, error) { return c.r.Read(p) }

// stopTLS stops accepting on the TLS and redirect listeners (the drain's StopAccepting): TLS
// connections already open are drained with the others; the redirect listener's requests in
// flight get the shutdown budget.
func (s *Server) stopTLS() {
	f := s.tls
	if f == nil {
		return
	}
	_ = f.ln.Close()
	if f.redirect != nil {
		go func() {
			ctx, cancel := context.WithTimeout(context.Background(), s.set.Shutdown)
			defer cancel()
			_ = f.redirect.Shutdown(ctx)
		}()
	}
}
