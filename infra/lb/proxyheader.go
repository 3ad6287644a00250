package lb

import (
	"bufio"
	"net"
	"net/netip"
	"time"

	"github.com/zero502/zero502/infra/origin"
)

// serveProxied serves a new connection on a listener that accepts PROXY headers
// (Settings.AcceptProxyFrom): it sniffs the connection's first bytes (sniffProxy), and a
// connection that passes is served with the bytes after its header.
func (s *Server) serveProxied(cc *clientConn) {
	br := bufio.NewReaderSize(cc.conn, origin.SniffBufferSize)
	if !s.sniffProxy(cc, br) {
		return
	}
	rest, _ := br.Peek(br.Buffered())
	cc.in.preload(rest)
	s.serveConn(cc, len(rest) > 0)
}

// sniffProxy sniffs the first bytes of cc (read through br) with the edge origin's sniffer: a
// v1 or v2 header from a trusted peer sets the client address used for X-Forwarded-For and the
// access log, a header from any other peer (or a malformed one) closes the connection, and a
// connection without one passes untouched. False when cc was closed.
func (s *Server) sniffProxy(cc *clientConn, br *bufio.Reader) bool {
	_ = cc.conn.SetReadDeadline(time.Now().Add(s.set.ClientHeaderTimeout))
	sn, err := origin.SniffHeader(br)
	measured := cc.conn.RemoteAddr().String()
	switch {
	case err != nil:
		s.log.Warn("lb: PROXY header refused; connection closed", "peer", measured, "err", err)
		s.closeConn(cc)
		return false
	case sn.Empty:
		s.closeConn(cc)
		return false
	case sn.Kind != origin.HeaderNone && !origin.Trusts(s.proxyFrom, addrOf(cc)):
		s.log.Warn("lb: PROXY header from a peer outside accept_proxy_from; connection closed",
			"peer", measured, "header", string(sn.Kind), "accept_proxy_from", s.set.AcceptProxyFrom)
		s.proxyRefused.Add(1)
		s.closeConn(cc)
		return false
	}
	if sn.Claimed.IsValid() {
		cc.ip = []byte(sn.Claimed.Addr().String())
	}
	return true
}

// addrOf is the socket's remote IP address (the measured peer, never a claim).
func addrOf(cc *clientConn) netip.Addr {
	if a, ok := cc.conn.RemoteAddr().(*net.TCPAddr); ok {
		return a.AddrPort().Addr()
	}
	return netip.Addr{}
}
