package edge

import (
	"net"
	"net/netip"
	"sync"

	"github.com/zero502/zero502/infra/origin"
)

// innerMap remembers who is behind each inner connection: once the origin hands a connection to
// a local backend over loopback, the backend's peer is a loopback address and port, and both the
// client and the edge are out of sight. The Relay registers the inner connection's local address
// (exactly the peer the backend sees) before it forwards the first byte, and removes it when the
// connection closes; this is the only place where that information survives.
//
// The zero value is ready to use; it is safe for concurrent use.
type innerMap struct {
	mu    sync.Mutex
	peers map[netip.AddrPort]*innerEntry
}

// innerEntry is one registration; its identity (the pointer) lets a late removal tell it apart
// from a newer connection that reuses the same port.
type innerEntry struct{ peer origin.Peer }

// Lookup returns the origin.Peer behind the inner connection whose local address is peer (what the
// backend sees as its remote address: net.Conn.RemoteAddr, gRPC's peer.Addr). It finds it once
// the backend has read its first byte from that connection: the Relay registers before it
// forwards anything.
func (m *innerMap) Lookup(peer netip.AddrPort) (origin.Peer, bool) {
	key := netip.AddrPortFrom(peer.Addr().Unmap(), peer.Port())
	m.mu.Lock()
	defer m.mu.Unlock()
	e, ok := m.peers[key]
	if !ok {
		return origin.Peer{}, false
	}
	return e.peer, true
}

// LookupAddr is Lookup for a net.Addr (a *net.TCPAddr, or anything whose String is ip:port).
func (m *innerMap) LookupAddr(peer net.Addr) (origin.Peer, bool) {
	ap := origin.AddrPort(peer)
	if !ap.IsValid() {
		return origin.Peer{}, false
	}
	return m.Lookup(ap)
}

// Len is how many inner connections are registered.
func (m *innerMap) Len() int {
	m.mu.Lock()
	defer m.mu.Unlock()
	return len(m.peers)
}

// register maps inner to p and returns the function that removes exactly this registration.
func (m *innerMap) register(inner netip.AddrPort, p origin.Peer) (remove func()) {
	e := &innerEntry{peer: p}
	m.mu.Lock()
	if m.peers == nil {
		m.peers = map[netip.AddrPort]*innerEntry{}
	}
	m.peers[inner] = e
	m.mu.Unlock()
	return func() {
		m.mu.Lock()
		defer m.mu.Unlock()
		if m.peers[inner] == e {
			delete(m.peers, inner)
		}
	}
}
