package lb

import (
	"github.com/zero502/zero502/infra/lb/http1"
	"io"
	"net"
	"sync"
	"sync/atomic"
	"time"
)

// tunnels are the upgraded connections (101 Switching Protocols, WebSockets) in progress. Such
// a connection has left the HTTP exchange for good: it never returns to a pool or carries
// another request. The drain gives it the shutdown budget, then ends it with a FIN each way.
type tunnels struct {
	mu    sync.Mutex
	open  map[*tunnel]struct{}
	total atomic.Uint64 // upgrades relayed since the start
}

// tunnel is one upgraded client connection and its backend connection.
type tunnel struct {
	client, backend *net.TCPConn
}

func (ts *tunnels) add(t *tunnel) {
	ts.total.Add(1)
	ts.mu.Lock()
	if ts.open == nil {
		ts.open = map[*tunnel]struct{}{}
	}
	ts.open[t] = struct{}{}
	ts.mu.Unlock()
}

func (ts *tunnels) remove(t *tunnel) {
	ts.mu.Lock()
	delete(ts.open, t)
	ts.mu.Unlock()
}

// count is how many tunnels are open.
func (ts *tunnels) count() int {
	ts.mu.Lock()
	defer ts.mu.Unlock()
	return len(ts.open)
}

// shut ends every open tunnel cleanly: a FIN to both peers, then linger more to let them answer
// with theirs before the connections close.
func (ts *tunnels) shut(linger time.Duration) {
	ts.mu.Lock()
	defer ts.mu.Unlock()
	at := time.Now().Add(linger)
	for t := range ts.open {
		_ = t.client.CloseWrite()
		_ = t.backend.CloseWrite()
		_ = t.client.SetReadDeadline(at)
		_ = t.backend.SetReadDeadline(at)
	}
}

// tunnelLinger is how long one side of a tunnel may stay open after the other finished (its
// FIN passed on), and after the drain's FINs.
const tunnelLinger = 2 * time.Second

// tunnel relays the 101 response head in x.resp (still buffered in u) to the client and then
// bytes both ways (spliced by the kernel where it can) until both directions ended. The head
// keeps the end-to-end headers and says Connection: Upgrade with the backend's Upgrade.
func (s *Server) tunnel(cc *clientConn, x *exchange, b *Backend, u *upstream, start time.Time) {
	resp := &x.resp
	out := http1.AppendClientHead(x.out[:0], resp, false, false)
	out = out[:len(out)-2] // before the empty line
	out = append(out, "Connection: Upgrade\r\n"...)
	if v, ok := resp.Get("Upgrade"); ok {
		out = append(out, "Upgrade: "...)
		out = append(out, v...)
		out = append(out, "\r\n"...)
	}
	out = append(out, "\r\n"...)
	u.in.consume(len(resp.Head))
	out = append(out, u.in.buffered()...) // what the backend sent after its 101
	u.in.consume(len(u.in.buffered()))
	early := append([]byte(nil), cc.in.buffered()...) // what the client sent after its request
	cc.in.consume(len(early))
	s.logAccess(cc.ip, &x.req, 101, b, start)

	t := &tunnel{client: cc.conn, backend: u.conn}
	s.tunnels.add(t)
	defer s.tunnels.remove(t)
	defer u.close()
	_ = cc.conn.SetDeadline(time.Time{})
	_ = u.conn.SetDeadline(time.Time{})
	_ = cc.conn.SetWriteDeadline(time.Now().Add(s.set.BodyTimeout))
	_, err := cc.conn.Write(out)
	x.out = out[:0]
	cc.in.release()
	u.in.buf = nil
	if err != nil {
		return
	}
	_ = cc.conn.SetWriteDeadline(time.Time{})
	if len(early) > 0 {
		if _, err := u.conn.Write(early); err != nil {
			return
		}
	}
	up := make(chan error, 1)
	go func() { up <- pipe(u.conn, cc.conn) }()
	if err := pipe(cc.conn, u.conn); err != nil {
		_ = cc.conn.Close() // broken: the other direction ends too
		_ = u.conn.Close()
	}
	<-up
}

// pipe copies src to dst until src ends (spliced by the kernel between two TCP sockets on
// Linux), then passes the end on with a FIN and gives dst tunnelLinger to finish its side.
// It returns nil when src ended cleanly.
func pipe(dst, src *net.TCPConn) error {
	if _, err := io.Copy(dst, src); err != nil {
		return err
	}
	_ = dst.SetReadDeadline(time.Now().Add(tunnelLinger))
	return dst.CloseWrite()
}
