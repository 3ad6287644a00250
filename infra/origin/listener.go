package origin

import (
	"bufio"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/netip"
	"sync"
	"time"

	"github.com/zero502/zero502/infra/clock"
)

// DefaultHeaderTimeout is Listener.HeaderTimeout when it is zero.
const DefaultHeaderTimeout = 5 * time.Second

// errUntrustedHeader is a PROXY header sent by a peer outside Listener.Trusted. The
// connection is closed (policy: reject): a peer that is not one of our edges has no business
// claiming to speak for a client, and a header it sends is not payload either.
var errUntrustedHeader = errors.New("PROXY header from a peer outside the trusted edge ranges")

// Peer is who is at the other end of an accepted origin connection, as two separate facts.
type Peer struct {
	// Claimed is the client address the PROXY header carries: what the other end says the client
	// is. It is a claim, and a forged header makes it lie; use it for logs only. Invalid (the
	// zero AddrPort) when there was no header, or the header carried no TCP address (a v2 LOCAL
	// command from a proxy's own health check, a v1 UNKNOWN line).
	Claimed netip.AddrPort `json:"claimed"`
	// Measured is the socket's remote address: the machine the bytes actually came from (an
	// edge, or the client itself when there was no header). It is a measurement.
	Measured netip.AddrPort `json:"measured"`
	// Header is what the connection opened with.
	Header headerKind `json:"header"`
	// Since is when the connection was accepted.
	Since time.Time `json:"since"`
}

// Listener wraps the origin's net.Listener: it sniffs the first bytes of every accepted
// connection for a PROXY header (v2, or v1) and strips it, and passes anything else on
// untouched. Sniffing happens lazily in the returned *Conn (on its first Read, or an
// explicit Sniff), never in Accept, so a slow client cannot hold up the others.
//
// Set the fields before the first Accept and do not change them afterwards.
type Listener struct {
	net.Listener
	// HeaderTimeout bounds the wait for the first bytes and for the rest of a header once its
	// signature arrived; 0 means DefaultHeaderTimeout. A client that sends nothing within it is
	// passed on without a header (a server-first protocol waits that long before the server sees
	// the connection through a Relay); a header cut short by it is malformed.
	HeaderTimeout time.Duration
	// Trusted are the edges allowed to send a header. A header from a peer outside them closes
	// the connection (errUntrustedHeader). Empty: no peer may, so every header closes its
	// connection, as the agent does without --trusted and the LB without accept_proxy_from.
	// Connections without a header are passed on from anyone: trust restricts claims, not
	// traffic.
	Trusted []netip.Prefix
	// Logger gets a line for every connection closed over a bad or untrusted header; nil logs
	// nothing.
	Logger *slog.Logger
	// Clock stamps Peer.Since; nil is the wall clock.
	Clock clock.Clock

	counts counters
}

// Accept waits for the next connection and returns it as an *Conn, without reading from
// it. Errors are the wrapped listener's, unchanged (net.ErrClosed after Close).
func (l *Listener) Accept() (net.Conn, error) {
	c, err := l.Listener.Accept()
	if err != nil {
		return nil, err
	}
	l.counts.accepted.Add(1)
	var now time.Time
	if l.Clock != nil {
		now = l.Clock.Now()
	} else {
		now = time.Now()
	}
	return &Conn{raw: c, l: l, peer: Peer{Measured: AddrPort(c.RemoteAddr()), Header: HeaderNone, Since: now}}, nil
}

// Counts says what the listener has seen: Accepted, Headers, PassedThrough, Malformed and
// Untrusted.
func (l *Listener) Counts() Counts { return l.counts.snapshot() }

func (l *Listener) headerTimeout() time.Duration {
	if l.HeaderTimeout > 0 {
		return l.HeaderTimeout
	}
	return DefaultHeaderTimeout
}

func (l *Listener) trusted(a netip.Addr) bool {
	return Trusts(l.Trusted, a) // none trusted: no one's header is believed
}

func (l *Listener) warn(msg string, args ...any) {
	if l.Logger != nil {
		l.Logger.Warn(msg, args...)
	}
}

// Conn is a connection accepted by an Listener. Its first Read (or Sniff) reads the
// PROXY header, if there is one; after that Read yields the stream without the header, or the
// whole stream untouched when there was none. RemoteAddr stays the socket's (Peer().Measured):
// the claim is only ever read from Peer().Claimed.
type Conn struct {
	raw net.Conn
	l   *Listener

	once  sync.Once
	br    *bufio.Reader // the stream after sniffing; nil before
	peer  Peer          // Measured and Since from Accept; Claimed and Header once sniffed
	empty bool          // the client closed before sending a byte
	err   error         // why sniffing failed; the connection is closed then

	mu           sync.Mutex
	readDeadline time.Time // the caller's, restored after the header timeout
}

// Sniff reads the start of the connection, at most until the header timeout, and parses and
// strips a PROXY header if there is one. It is done once; later calls return the first result.
// On errMalformedHeader or errUntrustedHeader the connection has been closed (and logged).
// Other errors are the socket's.
func (c *Conn) Sniff() error {
	c.once.Do(c.sniff)
	return c.err
}

func (c *Conn) sniff() {
	c.br = bufio.NewReaderSize(c.raw, sniffBufferSize)
	_ = c.raw.SetReadDeadline(time.Now().Add(c.l.headerTimeout()))
	s, err := sniff(c.br)
	c.mu.Lock()
	_ = c.raw.SetReadDeadline(c.readDeadline)
	c.mu.Unlock()

	measured := c.peer.Measured
	switch {
	case errors.Is(err, errMalformedHeader):
		c.l.counts.malformed.Add(1)
		c.l.warn("edge origin: malformed PROXY header; connection closed",
			"measured", LogAddr(measured), "header", string(s.kind), "error", err.Error())
		c.fail(fmt.Errorf("from %s: %w", measured, err))
		return
	case err != nil:
		c.err = err
		return
	}
	c.peer.Header = s.kind
	c.empty = s.empty
	if s.header == nil {
		c.l.counts.passedThrough.Add(1)
		return
	}
	c.peer.Claimed = claimedAddr(s)
	if !c.l.trusted(measured.Addr()) {
		c.l.counts.untrusted.Add(1)
		c.l.warn("edge origin: PROXY header from a peer outside the trusted edge ranges; connection closed",
			"measured", LogAddr(measured), "claimed", LogAddr(c.peer.Claimed), "header", string(s.kind),
			"trusted", fmt.Sprint(c.l.Trusted))
		c.fail(fmt.Errorf("from %s: %w (trusted: %v); add its range to the trusted edges if it is one",
			measured, errUntrustedHeader, c.l.Trusted))
		return
	}
	c.l.counts.headers.Add(1)
}

// fail closes the connection over a bad header.
func (c *Conn) fail(err error) {
	c.err = err
	c.peer.Claimed = netip.AddrPort{}
	_ = c.raw.Close()
}

// Peer is who the connection is from. It sniffs first when that has not happened yet (see
// Sniff); after a failed sniff Claimed is invalid.
func (c *Conn) Peer() Peer {
	_ = c.Sniff()
	return c.peer
}

// Read reads the stream after the header (sniffing first on the first call).
func (c *Conn) Read(p []byte) (int, error) {
	if err := c.Sniff(); err != nil {
		return 0, err
	}
	return c.br.Read(p)
}

// Write writes to the connection; it does not wait for sniffing (a server may speak first).
func (c *Conn) Write(p []byte) (int, error) { return c.raw.Write(p) }

// Empty says the client closed the connection before sending a byte (after Sniff): a health
// check's connect, nothing to pass on.
func (c *Conn) Empty() bool { return c.empty }

// Close closes the connection.
func (c *Conn) Close() error { return c.raw.Close() }

// CloseWrite half-closes the connection when the socket supports it.
func (c *Conn) CloseWrite() error {
	if cw, ok := c.raw.(interface{ CloseWrite() error }); ok {
		return cw.CloseWrite()
	}
	return nil
}

// LocalAddr is the socket's local address.
func (c *Conn) LocalAddr() net.Addr { return c.raw.LocalAddr() }

// RemoteAddr is the socket's remote address: the measurement, never the claim.
func (c *Conn) RemoteAddr() net.Addr { return c.raw.RemoteAddr() }

// SetDeadline sets both deadlines; the read one is kept across sniffing.
func (c *Conn) SetDeadline(t time.Time) error {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.readDeadline = t
	return c.raw.SetDeadline(t)
}

// SetReadDeadline sets the read deadline; it is kept across sniffing (which uses its own
// header timeout meanwhile).
func (c *Conn) SetReadDeadline(t time.Time) error {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.readDeadline = t
	return c.raw.SetReadDeadline(t)
}

// SetWriteDeadline sets the write deadline.
func (c *Conn) SetWriteDeadline(t time.Time) error { return c.raw.SetWriteDeadline(t) }

// claimedAddr is the TCP source address a parsed header claims, or invalid when it carries none.
func claimedAddr(s sniffed) netip.AddrPort {
	if s.header == nil || !s.header.Command.IsProxy() {
		return netip.AddrPort{}
	}
	src, _, ok := s.header.TCPAddrs()
	if !ok || src == nil {
		return netip.AddrPort{}
	}
	return AddrPort(src)
}

// AddrPort is a as a netip.AddrPort (IPv4-mapped IPv6 unmapped), or invalid when a is not an IP
// address with a port.
func AddrPort(a net.Addr) netip.AddrPort {
	switch a := a.(type) {
	case *net.TCPAddr:
		ap := a.AddrPort()
		return netip.AddrPortFrom(ap.Addr().Unmap(), ap.Port())
	case nil:
		return netip.AddrPort{}
	}
	ap, err := netip.ParseAddrPort(a.String())
	if err != nil {
		return netip.AddrPort{}
	}
	return netip.AddrPortFrom(ap.Addr().Unmap(), ap.Port())
}

// LogAddr is ap for a log line: "" when invalid rather than "invalid AddrPort".
func LogAddr(ap netip.AddrPort) string {
	if !ap.IsValid() {
		return ""
	}
	return ap.String()
}
