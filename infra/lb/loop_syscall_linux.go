package lb

import (
	"net"
	"unsafe"

	"golang.org/x/sys/unix"
)

// The loops make their system calls raw, through internal/rawsys; what is the LB's own here is
// the client IP text made from the address accept returns.

// peerNames turns the peer addresses accept returns into the client IP as text, the form
// X-Forwarded-For and the access log want, remembering the last few: a loop serves the same
// clients (or the same few proxies in front of it) over and over, and the text is read-only
// once made, so connections from one address share it and a new connection allocates nothing.
type peerNames struct {
	names map[[16]byte][]byte // by IPv6 (or IPv4-mapped) address
}

// peerNamesMax bounds the remembered addresses; past it the map starts over.
const peerNamesMax = 1024

// name is the text of rsa's IP address ("unknown" for a family other than IPv4 and IPv6).
func (p *peerNames) name(rsa *unix.RawSockaddrAny) []byte {
	var key [16]byte
	switch rsa.Addr.Family {
	case unix.AF_INET:
		a := (*unix.RawSockaddrInet4)(unsafe.Pointer(rsa)).Addr
		key = [16]byte{10: 0xff, 11: 0xff, 12: a[0], 13: a[1], 14: a[2], 15: a[3]}
	case unix.AF_INET6:
		key = (*unix.RawSockaddrInet6)(unsafe.Pointer(rsa)).Addr
	default:
		return []byte("unknown")
	}
	if ip, ok := p.names[key]; ok {
		return ip
	}
	if p.names == nil || len(p.names) >= peerNamesMax {
		p.names = make(map[[16]byte][]byte)
	}
	ip := []byte(net.IP(key[:]).String()) // an IPv4-mapped address prints as IPv4
	p.names[key] = ip
	return ip
}
