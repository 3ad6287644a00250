package lb

import (
	"bytes"
	"net/netip"
	"sync"
	"sync/atomic"
	"time"
)

// SlowBodyAfter is when a request body still arriving counts as slow (max_slow_bodies_per_ip).
const SlowBodyAfter = time.Second

// descriptorReserve is the part of RLIMIT_NOFILE defaultMaxConns leaves to the process itself
// (listeners, epoll sets, health checks, the admin API).
const descriptorReserve = 256

// defaultMaxConns is the default max_conns: half of what RLIMIT_NOFILE leaves after a reserve,
// since every client connection in flight also holds a backend connection, and at most 1<<20.
// Without a readable limit it is 10000.
func defaultMaxConns() int {
	nofile, ok := descriptorLimit()
	if !ok {
		return 10000
	}
	return maxConnsFor(nofile)
}

func maxConnsFor(nofile uint64) int {
	if nofile <= 2*descriptorReserve {
		return 64
	}
	return int(min((nofile-descriptorReserve)/2, 1<<20))
}

// atConnCap reports whether the LB holds max_conns client connections already, on either path
// and on the TLS redirect listener. It is checked once per accepted connection, never per
// request.
func (s *Server) atConnCap() bool {
	n := s.tracked.Load() + s.redirecting.Load()
	if s.loops != nil {
		n += s.loops.clients.Load()
	}
	if n < int64(s.set.MaxConns) {
		return false
	}
	s.connsRefused.Add(1)
	return true
}

// slowBodies counts, per client IP (per /64 for IPv6: one host holds a whole /64), the request bodies still arriving after SlowBodyAfter, so
// one client cannot hold every connection and backend slot with trickled uploads.
type slowBodies struct {
	max     int
	mu      sync.Mutex
	per     map[string]int
	active  atomic.Int64
	refused atomic.Uint64
}

func newSlowBodies(max int) *slowBodies { return &slowBodies{max: max, per: map[string]int{}} }

// acquire takes a slow-body slot for ip; false (counted as refused) when ip holds max already.
func (sb *slowBodies) acquire(ip []byte) bool {
	ip = slowBodyKey(ip)
	sb.mu.Lock()
	defer sb.mu.Unlock()
	n := sb.per[string(ip)]
	if n >= sb.max {
		sb.refused.Add(1)
		return false
	}
	sb.per[string(ip)] = n + 1
	sb.active.Add(1)
	return true
}

// release gives back a slot acquire took.
func (sb *slowBodies) release(ip []byte) {
	ip = slowBodyKey(ip)
	sb.mu.Lock()
	defer sb.mu.Unlock()
	if n := sb.per[string(ip)]; n > 1 {
		sb.per[string(ip)] = n - 1
	} else {
		delete(sb.per, string(ip))
	}
	sb.active.Add(-1)
}

// slowBodyKey is what the slow-body cap counts ip under: an IPv4 address as it is, an IPv6
// address as its /64 (a host is given a whole /64 and picks any address in it).
func slowBodyKey(ip []byte) []byte {
	if bytes.IndexByte(ip, ':') < 0 {
		return ip
	}
	a, err := netip.ParseAddr(string(ip))
	if err != nil || a.Is4In6() {
		return ip
	}
	p, err := a.Prefix(64)
	if err != nil {
		return ip
	}
	return []byte(p.String())
}
